import { FAKE_MODEL, startSystemUnderTest, type SystemUnderTest, type TestAccount } from "@meter/testing";

/**
 * The request log (docs/api.md "Request log"): every paid request is one entry the calling key reads
 * at `GET /v1/usage/requests` (never another key's), with its model, usage, cost, status and latency;
 * a failed one with its reason; a refusal before anything was reserved with its status, error and
 * model; the operator reads an organization's, and its CSV holds exactly the page's rows.
 */

interface Entry {
  id: string;
  key: { id: string; name: string | null };
  endpoint: string;
  model: string | null;
  status: number;
  outcome: string;
  usage: { input_tokens: number; output_tokens: number } | null;
  estimated_cost_microrub: number;
  cost_microrub: number;
  latency_ms: { total: number; upstream: number | null };
  request_id: string | null;
  idempotency_key: string | null;
  error: { code: string; message: string } | null;
  count: number;
}
interface Page {
  object: string;
  data: Entry[];
  has_more: boolean;
  next_cursor: string | null;
}

let sut: SystemUnderTest;
let a: TestAccount;
let second: { id: string; key: string };
let other: TestAccount;

beforeAll(async () => {
  sut = await startSystemUnderTest();
  a = await sut.account();
  other = await sut.account();
  second = await sut.admin<{ id: string; key: string }>("POST", "/admin/v1/keys", {
    user_id: a.userId,
    organization_id: a.organizationId,
    scopes: ["text"],
    daily_budget_microrub: 1_000_000_000,
    name: "second key",
  });
}, 300_000);

afterAll(async () => {
  await sut?.close();
});

async function message(key: string, idempotencyKey: string, content: string, model = FAKE_MODEL) {
  const res = await fetch(`${sut.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: "user", content }] }),
  });
  const body = (await res.json()) as {
    usage: { input_tokens: number; output_tokens: number };
    billing: { estimated_cost_microrub: number; cost_microrub: number };
  };
  return { status: res.status, requestId: res.headers.get("x-request-id"), body };
}

/** A page, or an error body (`error.code`). */
type Answer = Page & { error?: { code: string } };

async function get(key: string, query = ""): Promise<{ status: number; body: Answer }> {
  const res = await fetch(`${sut.url}/v1/usage/requests${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Answer };
}

/** Entries are written when billing applies the request's settle or release, a moment after the answer. */
async function untilEntries(key: string, n: number): Promise<Page> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { status, body } = await get(key, "?limit=100");
    expect(status).toBe(200);
    if ((body as Page).data.length >= n || Date.now() > deadline) return body as Page;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("the request log", () => {
  let ok: Awaited<ReturnType<typeof message>>;
  let failed: Awaited<ReturnType<typeof message>>;

  beforeAll(async () => {
    ok = await message(a.key, "log-ok", "hello there");
    expect(ok.status).toBe(200);
    sut.fake.configure({ status: 400 });
    failed = await message(a.key, "log-failed", "this one fails upstream");
    sut.fake.reset();
    expect(failed.status).toBe(502);
    expect((await message(second.key, "log-second", "from the second key")).status).toBe(200);
    expect((await message(other.key, "log-other", "from another organization")).status).toBe(200);
  }, 60_000);

  it("shows the key's requests, newest first, with model, tokens, cost, status and latency", async () => {
    const page = await untilEntries(a.key, 2);
    expect(page).toMatchObject({ object: "list", has_more: false, next_cursor: null });
    expect(page.data.map((e) => e.idempotency_key)).toEqual(["log-failed", "log-ok"]);
    const [fail, success] = page.data as [Entry, Entry];

    expect(success).toMatchObject({
      key: { id: a.keyId },
      endpoint: "/v1/messages",
      model: FAKE_MODEL,
      status: 200,
      outcome: "succeeded",
      usage: { input_tokens: ok.body.usage.input_tokens, output_tokens: ok.body.usage.output_tokens },
      estimated_cost_microrub: ok.body.billing.estimated_cost_microrub,
      cost_microrub: ok.body.billing.cost_microrub,
      request_id: ok.requestId,
    });
    expect(success.cost_microrub).toBeGreaterThan(0);
    expect(success.latency_ms.upstream).not.toBeNull();
    expect(success.latency_ms.total).toBeGreaterThanOrEqual(success.latency_ms.upstream!);

    expect(fail).toMatchObject({
      status: 502,
      outcome: "failed",
      cost_microrub: 0,
      model: FAKE_MODEL,
      usage: { input_tokens: 0, output_tokens: 0 },
      error: { code: "upstream_error" },
    });
    expect(fail.error!.message).toMatch(/nothing was charged/);
    expect(success).toMatchObject({ error: null, count: 1 });
    expect(fail.latency_ms.upstream).toBeNull();
  });

  it("never shows another key's entries, of the same organization or another", async () => {
    const mine = await untilEntries(a.key, 2);
    expect(mine.data.every((e) => e.key.id === a.keyId)).toBe(true);
    const seconds = await untilEntries(second.key, 1);
    expect(seconds.data.map((e) => e.idempotency_key)).toEqual(["log-second"]);
    expect(seconds.data[0]!.key).toEqual({ id: second.id, name: "second key" });
    const others = await untilEntries(other.key, 1);
    expect(others.data.map((e) => e.idempotency_key)).toEqual(["log-other"]);
  });

  it("pages with the cursor and filters by status and model", async () => {
    const first = await get(a.key, "?limit=1");
    expect(first.body).toMatchObject({ has_more: true, data: [{ idempotency_key: "log-failed" }] });
    const next = await get(a.key, `?limit=1&cursor=${encodeURIComponent(first.body.next_cursor!)}`);
    expect(next.body).toMatchObject({ has_more: false, next_cursor: null, data: [{ idempotency_key: "log-ok" }] });

    expect((await get(a.key, "?status=502")).body.data.map((e) => e.idempotency_key)).toEqual(["log-failed"]);
    expect((await get(a.key, "?status=succeeded")).body.data.map((e) => e.idempotency_key)).toEqual(["log-ok"]);
    expect((await get(a.key, "?model=another-model")).body.data).toEqual([]);
    expect((await get(a.key, `?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.data).toEqual([]);
  });

  it("refuses a bad cursor, limit, status or range with a code", async () => {
    // A NUL character in the model filter was a database error (500).
    for (const q of ["?limit=0", "?limit=101", "?limit=ten", "?cursor=not-a-cursor", "?status=ok", "?from=yesterday", "?model=a%00b"]) {
      const res = await get(a.key, q);
      expect({ q, status: res.status, code: res.body.error?.code }).toEqual({ q, status: 400, code: "invalid_request" });
    }
    expect(await get(a.key, "?unknown=1")).toMatchObject({ status: 400, body: { error: { code: "unknown_field" } } });
    const forged = Buffer.from(`2026-01-01T00:00:00.000Z|${"x".repeat(36)}`).toString("base64url");
    expect((await get(a.key, `?cursor=${forged}`)).status).toBe(400);
    const range = await get(a.key, "?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z");
    expect(range).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
  });

  it("gives the operator an organization's entries, and a CSV of exactly the page's rows", async () => {
    await untilEntries(second.key, 1);
    const base = `/admin/v1/organizations/${a.organizationId}/requests`;
    const all = await sut.admin<Page>("GET", base);
    expect(all.data.map((e) => e.idempotency_key)).toEqual(["log-second", "log-failed", "log-ok"]);

    for (const filter of ["", `key_id=${a.keyId}`, "status=502", `key_id=${second.id}&model=${FAKE_MODEL}`]) {
      const page = await sut.admin<Page>("GET", `${base}?${filter}`);
      const res = await fetch(`${sut.url}${base}.csv?${filter}`, { headers: { authorization: `Bearer ${sut.adminToken}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
      const lines = (await res.text()).split("\r\n").filter((l) => l !== "");
      const header = lines[0]!.split(",");
      const rows = lines.slice(1).map((l) => Object.fromEntries(l.split(",").map((v, i) => [header[i], v])));
      expect(rows.map((r) => r.id)).toEqual(page.data.map((e) => e.id));
      expect(rows.map((r) => [r.model, r.status, r.cost_microrub, r.input_tokens])).toEqual(
        page.data.map((e) => [e.model, String(e.status), String(e.cost_microrub), String(e.usage!.input_tokens)]),
      );
    }
    // A bad range is refused before the download starts (it was a download cut after its header).
    const range = await fetch(`${sut.url}${base}.csv?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, {
      headers: { authorization: `Bearer ${sut.adminToken}` },
    });
    expect({ status: range.status, body: (await range.json()) as unknown }).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    const unknown = await fetch(`${sut.url}/admin/v1/organizations/00000000-0000-4000-8000-000000000000/requests`, {
      headers: { authorization: `Bearer ${sut.adminToken}` },
    });
    expect(unknown.status).toBe(404);
  });
});

describe("refusals in the request log", () => {
  it("shows a key refused for an unknown model and for its budget, with the reason, and says its next request does not fit", async () => {
    const k = await sut.account();
    const ok = await message(k.key, "fits", "hello");
    expect(ok.status).toBe(200);
    const estimate = ok.body.billing.estimated_cost_microrub;
    // Room for one microrub less than the same request's estimate: the next one is refused.
    await untilEntries(k.key, 1);
    await sut.admin("PATCH", `/admin/v1/keys/${k.keyId}`, { daily_budget_microrub: ok.body.billing.cost_microrub + estimate - 1 });
    expect((await message(k.key, "too-dear-1", "hello")).status).toBe(429);
    expect((await message(k.key, "too-dear-2", "hello")).status).toBe(429);
    expect((await message(k.key, "unknown", "hello", "no-such-model")).status).toBe(404);

    const page = await untilEntries(k.key, 3);
    const refused = page.data.filter((e) => e.outcome === "refused");
    expect(refused).toHaveLength(2);
    expect(refused.find((e) => e.status === 429)).toMatchObject({
      model: FAKE_MODEL,
      count: 2,
      cost_microrub: 0,
      usage: null,
      error: { code: "daily_budget_exceeded" },
    });
    expect(refused.find((e) => e.status === 404)).toMatchObject({ model: "no-such-model", count: 1, error: { code: "model_not_found" } });
    expect((await get(k.key, "?status=refused")).body.data).toHaveLength(2);

    const key = await sut.admin<{ next_request: unknown; activity: { requests_today: number } }>("GET", `/admin/v1/keys/${k.keyId}`);
    expect(key.next_request).toEqual({ estimated_cost_microrub: estimate, room_microrub: estimate - 1, fits: false });
    expect(key.activity.requests_today).toBe(4);
  });
});
