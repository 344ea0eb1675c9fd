import { randomUUID } from "node:crypto";
import path from "node:path";
import { signedCall, startServiceProcess, testKeyEnv, type TestAccount } from "@meter/testing";
import { FAKE_MODEL, eventually, startTextStack, type TextStack } from "./support/text-stack";

/**
 * Allowances end to end (docs/api.md, "Allowances"), billing-ledger, text and the gateway on real
 * PostgreSQL and RabbitMQ: requests placed locally on an allowance are charged once each with the books
 * exact, an idle allowance goes back with exactly its remainder, and near a limit requests are refused
 * exactly as with per-request holds (a refusal that parked money caused says when to come back).
 */
// A race of 40 requests takes ~20 s alone and well over the default 30 s on a loaded machine; a test
// cut short leaves its requests running into the next one's money.
jest.setTimeout(120_000);

let s: TextStack;
beforeAll(async () => {
  // Idle after 1.5 s: short, so the tests see allowances returned, and yet longer than the gap between
  // two requests of one test on a loaded machine (at 300 ms one went idle between two, CI 2026-11-28).
  s = await startTextStack({ env: { ALLOWANCE_IDLE_MS: "1500", ALLOWANCE_RETRY_AFTER_S: "1" } });
});
afterEach(() => s.fake.reset());
afterAll(async () => {
  try {
    await eventually(async () => (await s.activeHolds()) === 0, 20_000, "every text hold and allowance resolved");
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

const body = (text: string) => ({ model: FAKE_MODEL, max_tokens: 40, messages: [{ role: "user", content: text }] });
/** Texts of one length, so every request of a race has the same estimate. */
const raceText = (i: number) => `race ${String(i).padStart(2, "0")}`;
const idem = () => ({ "idempotency-key": randomUUID() });
const sql = <T>(text: string, params: unknown[]) => s.text.database.pool.query(text, params).then((r) => r.rows as T[]);

interface AllowanceRow {
  id: string;
  state: string;
  granted: string;
  used: string;
}
const allowancesOf = (keyId: string) => sql<AllowanceRow>("SELECT id, state, granted, used FROM allowances WHERE key_id = $1 ORDER BY created_at", [keyId]);

interface BillingHold {
  hold_id: string;
  status: string;
  amount_microrub: number;
  settled_microrub: number | null;
  kind?: string;
  allowance_id?: string | null;
  consumed_microrub?: number;
}
async function billingHolds(status: string): Promise<BillingHold[]> {
  return (await s.stack.admin<{ data: BillingHold[] }>("GET", `/admin/v1/holds?status=${status}&source=text&limit=500`)).data;
}

/** The estimate of one request of `body(...)`, which the fake upstream in `absurd` usage charges in full. */
async function estimateOf(key: string): Promise<number> {
  const quote = await s.call(key, "/v1/chat/quote", body(raceText(0)));
  return quote.json.estimated_cost_microrub as number;
}

it("requests served from an allowance are charged once each; the idle allowance is returned with exactly its remainder", async () => {
  const a = await s.account();
  const first = await s.call(a.key, "/v1/messages", body(raceText(99)), idem());
  expect(first.status).toBe(200);
  await eventually(async () => (await allowancesOf(a.keyId)).some((r) => r.state === "open"), 5_000, "an allowance granted");

  // A quiet key's allowance holds ALLOWANCE_MIN_REQUESTS (4) requests of this size.
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await s.call(a.key, "/v1/messages", body(raceText(i)), idem()));
  expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  const [allowance] = await allowancesOf(a.keyId);
  const placed = await sql<{ idempotency_key: string; estimated_cost: string }>(
    "SELECT idempotency_key, estimated_cost FROM text_requests WHERE allowance_id = $1",
    [allowance!.id],
  );
  expect(placed).toHaveLength(4);
  const used = placed.reduce((sum, r) => sum + Number(r.estimated_cost), 0);

  // Idle: closed here, then released in billing with what was not used.
  await eventually(async () => (await allowancesOf(a.keyId)).every((r) => r.state === "closed"), 15_000, "the allowance closed");
  let returned: BillingHold | undefined;
  await eventually(
    async () => (returned = (await billingHolds("released")).find((h) => h.hold_id === allowance!.id)) !== undefined,
    10_000,
    "billing to release the allowance",
  );
  expect(returned).toMatchObject({ kind: "allowance", amount_microrub: Number(allowance!.granted), consumed_microrub: used });
  expect(Number((await allowancesOf(a.keyId)).find((r) => r.id === allowance!.id)!.used)).toBe(used);

  const charged = [first, ...answers].reduce((sum, r) => sum + (r.json.billing as { cost_microrub: number }).cost_microrub, 0);
  expect(await s.settledBalance(a.organizationId)).toMatchObject({
    balance_microrub: 1_000_000 - charged,
    reserved_microrub: 0,
    available_microrub: 1_000_000 - charged,
  });
  // Billing recorded each request's own hold on the allowance, settled at its cost.
  const settled = (await billingHolds("settled")).filter((h) => h.allowance_id === allowance!.id);
  expect(settled.map((h) => h.settled_microrub).sort()).toEqual(answers.map((r) => (r.json.billing as { cost_microrub: number }).cost_microrub).sort());
});

/**
 * 64 requests at once against exactly N requests' worth (one served before), the upstream charging
 * each its full estimate.
 * A refusal that money parked in an allowance caused says Retry-After; retried after it, the request
 * is served or refused for good. Either way exactly N are served, and nothing stays held.
 */
async function raceFor(n: number, limit: "balance" | "budget"): Promise<{ served: number; retryAfters: number; granted: boolean }> {
  const probe = await s.account();
  const estimate = await estimateOf(probe.key);
  const a = await s.account(limit === "balance" ? { credit: n * estimate } : { credit: 100 * n * estimate, dailyBudget: n * estimate });
  s.fake.configure({ usage: "absurd" });
  // One request first: its key then has an allowance when the race starts (unless it is near its limit).
  expect((await s.call(a.key, "/v1/messages", body(raceText(99)), idem())).status).toBe(200);
  await eventually(async () => (await allowancesOf(a.keyId)).every((r) => r.state !== "granting"), 5_000, "the first grant answered");
  let retryAfters = 0;
  const one = async (i: number): Promise<number> => {
    const headers = idem();
    for (;;) {
      const res = await s.call(a.key, "/v1/messages", body(raceText(i)), headers);
      const retryAfter = res.headers.get("retry-after");
      if ((res.status === 402 || res.status === 429) && retryAfter !== null) {
        retryAfters++;
        await new Promise((r) => setTimeout(r, Number(retryAfter) * 1000));
        continue;
      }
      return res.status;
    }
  };
  const statuses = [200, ...(await Promise.all(Array.from({ length: 64 }, (_, i) => one(i))))];
  expect(statuses.every((st) => st === 200 || st === 402 || st === 429)).toBe(true);
  const spent = n * estimate;
  expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0 });
  if (limit === "balance") expect((await s.balance(a.organizationId)).balance_microrub).toBe(0);
  else expect((await s.balance(a.organizationId)).balance_microrub).toBe(100 * n * estimate - spent);
  await eventually(async () => (await allowancesOf(a.keyId)).every((r) => r.state === "closed"), 15_000, "the key's allowances closed");
  const granted = (await allowancesOf(a.keyId)).some((r) => Number(r.granted) > 0);
  return { served: statuses.filter((st) => st === 200).length, retryAfters, granted };
}

describe("exactly N served against N requests' worth, with allowances", () => {
  it("against an organization's balance", async () => {
    for (let round = 0; round < 3; round++) {
      const { served, granted } = await raceFor(40, "balance");
      expect(served).toBe(40);
      expect(granted).toBe(true);
    }
  });

  it("against a key's daily budget", async () => {
    for (let round = 0; round < 3; round++) {
      const { served, granted } = await raceFor(40, "budget");
      expect(served).toBe(40);
      expect(granted).toBe(true);
    }
  });

  it("near the limit no allowance is granted and the refusals are exact, without Retry-After", async () => {
    const { served, retryAfters, granted } = await raceFor(3, "budget");
    expect({ served, retryAfters, granted }).toEqual({ served: 3, retryAfters: 0, granted: false });
  });
});

describe("a text process that goes away with open allowances", () => {
  /** Another text process on the same database, bus and billing, as a child process (a crash kills it). */
  const startOther = (env: Record<string, string> = {}) =>
    startServiceProcess(path.resolve(__dirname, "..", "src", "main.ts"), path.resolve(__dirname, "..", "..", ".."), {
      ...s.stack.env,
      ...testKeyEnv("text"),
      TEXT_PORT: "0",
      LOG_LEVEL: "info",
      ALLOWANCE_IDLE_MS: "60000",
      ...env,
    });
  const callOther = async (url: string, a: TestAccount, text: string, headers: Record<string, string>) => {
    const identity = { kind: "key" as const, key_id: a.keyId, user_id: a.userId, organization_id: a.organizationId, scopes: ["text" as const] };
    const signed = signedCall("gateway", "text", identity, "POST", "/v1/messages", body(text));
    const res = await fetch(`${url}/v1/messages`, { method: "POST", headers: { ...signed.headers, ...headers }, body: signed.payload });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it("SIGKILL mid-request: the requests on its allowance are finished by another process, the allowance closed, the books exact", async () => {
    const a = await s.account();
    const other = await startOther();
    try {
      // The key's first request holds on its own and asks for the allowance the next ones are placed on.
      const first = await callOther(other.url, a, raceText(99), idem());
      expect(first.status).toBe(200);
      await eventually(async () => (await allowancesOf(a.keyId)).some((r) => r.state === "open"), 5_000, "an allowance of the other process");
      const [allowance] = await allowancesOf(a.keyId);

      s.fake.configure({ delayMs: 4_000 });
      const keys = [idem(), idem(), idem()];
      const inFlight = keys.map((h, i) => callOther(other.url, a, raceText(i), h).catch(() => undefined));
      await eventually(
        async () =>
          (await sql<{ n: string }>("SELECT count(*) AS n FROM text_requests WHERE allowance_id = $1 AND state = 'reserving'", [allowance!.id]))[0]!.n === "3",
        5_000,
        "three requests on the allowance",
      );
      await other.kill();
      await Promise.all(inFlight);
      s.fake.configure({ delayMs: 0 });

      // This process takes the dead one's requests over (no placement: their holds are local) and closes its allowance.
      await eventually(async () => (await allowancesOf(a.keyId)).every((r) => r.state === "closed"), 30_000, "the dead process's allowance closed");
      const finals = await Promise.all(keys.map((h, i) => s.call(a.key, "/v1/messages", body(raceText(i)), h)));
      expect(finals.map((r) => r.status)).toEqual([200, 200, 200]);
      await eventually(async () => (await billingHolds("released")).some((h) => h.hold_id === allowance!.id), 10_000, "billing to release the allowance");
      const settled = (await billingHolds("settled")).filter((h) => h.allowance_id === allowance!.id);
      expect(settled.map((h) => h.settled_microrub).sort()).toEqual(finals.map((r) => (r.json.billing as { cost_microrub: number }).cost_microrub).sort());
      const charged = [first, ...finals].reduce((sum, r) => sum + (r.json.billing as { cost_microrub: number }).cost_microrub, 0);
      expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - charged, reserved_microrub: 0 });
    } finally {
      await other.stop();
    }
  }, 60_000);

  it("a refusal caused by another process's parked allowance says Retry-After, and succeeds once it is returned", async () => {
    const probe = await s.account();
    const estimate = await estimateOf(probe.key);
    const a = await s.account({ credit: 20 * estimate });
    s.fake.configure({ usage: "absurd" });
    const other = await startOther();
    let refused: { res: Awaited<ReturnType<TextStack["call"]>>; i: number; headers: Record<string, string> } | undefined;
    try {
      expect((await callOther(other.url, a, raceText(99), idem())).status).toBe(200);
      await eventually(async () => (await allowancesOf(a.keyId)).some((r) => r.state === "open"), 5_000, "an allowance of the other process");
      // This process spends what is not parked there, until a request is refused.
      for (let i = 0; i < 20 && !refused; i++) {
        const headers = idem();
        const res = await s.call(a.key, "/v1/messages", body(raceText(i)), headers);
        if (res.status !== 200) refused = { res, i, headers };
      }
      expect(refused?.res).toMatchObject({ status: 402, json: { error: { code: "insufficient_balance" } } });
      expect(refused!.res.headers.get("retry-after")).toBe("1");
    } finally {
      await other.stop();
    }
    // Returned (here by the stop; at the latest after its idle time): the same request, retried, fits.
    const retried = await s.call(a.key, "/v1/messages", body(raceText(refused!.i)), refused!.headers);
    expect(retried.status).toBe(200);
  });

  it("a graceful stop returns its allowances at once", async () => {
    const a = await s.account();
    const other = await startOther();
    try {
      expect((await callOther(other.url, a, raceText(99), idem())).status).toBe(200);
      await eventually(async () => (await allowancesOf(a.keyId)).some((r) => r.state === "open"), 5_000, "an allowance of the other process");
      expect((await callOther(other.url, a, raceText(1), idem())).status).toBe(200);
    } finally {
      await other.stop();
    }
    // Closed by the stop itself (its idle time is a minute, and it retired before any reconciler would).
    expect((await allowancesOf(a.keyId)).map((r) => r.state)).toEqual(["closed"]);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0 });
  });
});
