/** A call to the admin API of a running gateway; an answer that is not 2xx throws, naming it. */
export type AdminCall = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => Promise<T>;

/** The operator's client of a running system (npm start's demo seed, the tests' accounts). */
export function adminClient(gatewayUrl: string, adminToken: string): AdminCall {
  return async <T>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await fetch(gatewayUrl + p, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as T;
    if (!res.ok) throw new Error(`${method} ${p} -> ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}
