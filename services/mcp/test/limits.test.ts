import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { errorCode, eventually, LOCAL_MODEL, postMcp, startMcpSystem, structured, type Account, type McpSystem, type SecondMcp } from "./support/mcp-system";

/** Short, so a killed process's slots come back within a test; renewals every third of it keep live calls in. */
const LEASE_TTL_MS = 3000;

let s: McpSystem;
/** A second MCP process on the same database: the gateway routes to the first, tests call this one directly. */
let second: SecondMcp;
const clients: Client[] = [];

beforeAll(async () => {
  s = await startMcpSystem({ MCP_LEASE_TTL_MS: String(LEASE_TTL_MS) });
  second = await s.startSecondMcp();
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await s?.close();
});

async function viaGateway(a: Account): Promise<Client> {
  const c = await s.connect(a.key);
  clients.push(c);
  return c;
}

async function direct(mcp: SecondMcp, a: Account): Promise<Client> {
  const c = await mcp.connect(a);
  clients.push(c);
  return c;
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
/** A paid call that holds its slot for `ms`: the local echo model sleeps on request. */
const slow = (c: Client, ms: number) =>
  call(c, "create_message", { model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: `[[sleep:${ms}]] hold a slot` }] });

async function leasesReach(a: Account, n: number): Promise<void> {
  await eventually(async () => ((await s.activeLeases(a.organizationId)) === n ? true : undefined), `${n} running calls of the organization`);
}

function busyLimit(result: CallToolResult): unknown {
  expect(result.isError).toBe(true);
  expect(errorCode(result)).toBe("mcp_busy");
  expect((result.content[0] as { text: string }).text).toMatch(/^mcp_busy: /);
  return (structured(result).error as { details: { limit: string } }).details.limit;
}

it("two calls per organization run at once across both MCP processes; a third is mcp_busy on either", async () => {
  const a = await s.account();
  const first = await viaGateway(a);
  const other = await direct(second, a);
  const started = Date.now();
  const running = [slow(first, 7000), slow(first, 7000)];
  await leasesReach(a, 2);

  expect(busyLimit(await call(other, "list_models"))).toBe("organization");
  expect(busyLimit(await call(first, "list_models"))).toBe("organization");
  // Another organization is not held back.
  expect((await call(await direct(second, await s.account()), "list_models")).isError).toBeFalsy();

  // Past the lease TTL the running calls still hold their slots: their process renews them.
  await eventually(async () => (Date.now() > started + LEASE_TTL_MS + 500 ? true : undefined), "the first lease TTL to pass");
  expect(await s.activeLeases(a.organizationId)).toBe(2);
  expect(busyLimit(await call(other, "list_models"))).toBe("organization");

  const results = await Promise.all(running);
  expect(results.map((r) => structured(r).status)).toEqual(["completed", "completed"]);
  // Released in `finally`, before the answer went out.
  expect(await s.activeLeases(a.organizationId)).toBe(0);
  expect((await call(other, "list_models")).isError).toBeFalsy();
});

it("four calls per process run at once, whatever their organizations; a fifth is mcp_busy there but not on the other process", async () => {
  const [a, b, c] = [await s.account(), await s.account(), await s.account()];
  const [ca, cb] = [await direct(second, a), await direct(second, b)];
  const running = [slow(ca, 6000), slow(ca, 6000), slow(cb, 6000), slow(cb, 6000)];
  await leasesReach(a, 2);
  await leasesReach(b, 2);

  expect(busyLimit(await call(await direct(second, c), "list_models"))).toBe("process");
  expect(await s.activeLeases(c.organizationId)).toBe(0);
  expect((await call(await viaGateway(c), "list_models")).isError).toBeFalsy();

  expect((await Promise.all(running)).every((r) => !r.isError)).toBe(true);
  expect((await call(await direct(second, c), "list_models")).isError).toBeFalsy();
});

it("one organization's burst never takes the process places another organization's call needs", async () => {
  for (let run = 0; run < 3; run++) {
    const [a, b] = [await s.account(), await s.account()];
    const [ca, cb] = [await direct(second, a), await direct(second, b)];
    const burst = Array.from({ length: 6 }, () => slow(ca, 1500));
    const other = await slow(cb, 10);
    expect([run, other.isError ? errorCode(other) : "ok"]).toEqual([run, "ok"]);
    const results = await Promise.all(burst);
    expect(results.filter((r) => !r.isError)).toHaveLength(2);
    expect(results.filter((r) => r.isError).map((r) => busyLimit(r))).toEqual(["organization", "organization", "organization", "organization"]);
  }
});

it("each entry of a JSON-RPC batch counts toward the limits", async () => {
  const a = await s.account();
  const entry = (id: number) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: "create_message",
      arguments: { model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: `[[sleep:1500]] batch entry ${id}` }] },
    },
  });
  const res = await postMcp(s.url, a.key, [entry(1), entry(2), entry(3)], { "mcp-protocol-version": "2025-03-26" });
  expect(res.status).toBe(200);
  const results = (res.json as { result: CallToolResult }[]).map((x) => x.result);
  expect(results).toHaveLength(3);
  expect(results.filter((r) => !r.isError && structured(r).status === "completed")).toHaveLength(2);
  expect(results.filter((r) => errorCode(r) === "mcp_busy")).toHaveLength(1);
});

it("a killed process's slots are free again once its leases expire, and not before", async () => {
  const a = await s.account();
  const doomed = await s.startSecondMcp();
  const onDoomed = await direct(doomed, a);
  const inFlight = [slow(onDoomed, 8000), slow(onDoomed, 8000)].map((p) =>
    p.then(
      () => "answered",
      () => "cut off",
    ),
  );
  await leasesReach(a, 2);

  await doomed.system.kill("mcp", "SIGKILL");
  const killedAt = Date.now();
  // Nothing released them: a dead process cannot, and no one else may.
  expect(await s.activeLeases(a.organizationId)).toBe(2);
  const survivor = await viaGateway(a);
  expect(busyLimit(await call(survivor, "list_models"))).toBe("organization");

  const freedAfterMs = await eventually(
    async () => ((await call(survivor, "list_models")).isError ? undefined : Date.now() - killedAt),
    "the dead process's leases to expire",
    LEASE_TTL_MS + 5_000,
  );
  // Renewed every TTL/3 until the kill, so each lease had at least two thirds of its TTL left.
  expect(freedAfterMs).toBeGreaterThanOrEqual((LEASE_TTL_MS * 2) / 3 - 500);
  expect(freedAfterMs).toBeLessThanOrEqual(LEASE_TTL_MS + 1_500);
  expect(await Promise.all(inFlight)).toEqual(["cut off", "cut off"]);
});
