import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import path from "node:path";
import { brokerRights, BusExchanges, ServiceCatalog, type BrokerRights, type BusDeployable, type ServiceName } from "@meter/contracts";
import { repoRoot, type ProcessRelease } from "@meter/local-infra";
import { booksCheck, LOCAL_MODEL, queryRows, startSystemUnderTest, thisCheckoutsMigrations, type SystemUnderTest } from "@meter/testing";
import { checkOutPreviousRelease, type PreviousRelease } from "./support/previous-release";

/**
 * A rolling upgrade between two real releases (CHANGELOG.md, "Unreleased", Upgrade steps; docs/deploy.md,
 * "Upgrading"): the previous release, built from its own commit (support/previous-release.ts), runs
 * billing-ledger, text and the gateway on databases its own migrations made; then this release's
 * migrations are applied and each deployable is replaced by this release's, one at a time, in the
 * order of the steps; then text and billing-ledger are rolled back alone and forward again, the
 * broker users get this release's rights, and last billing's after-rollout migrations run (they contract
 * what the previous release's pods need, so this release's Job held them back). At every step, with
 * whatever mix runs, paid requests are served and charged, the settlements cross the bus to
 * billing-ledger, a revoked key is heard on the bus by the gateway, no message is refused, and the books
 * are exact.
 *
 * Every process accepts both signing schemes of internal calls (INTERNAL_AUTH_ACCEPT=both, as during any
 * upgrade) and each scheme crosses between the releases both ways: the previous release's processes
 * sign Ed25519 (its default) and its text brought back by the rollback MACs; this release's text and
 * billing-ledger sign MACs and its gateway Ed25519.
 */
const INSTALL_AND_START_MS = 10 * 60_000;
const STEPS_MS = 15 * 60_000;

let previous: PreviousRelease | undefined;
let sut: SystemUnderTest | undefined;

type Scheme = "ed25519" | "mac";
// This release's producers seal bus commands with Ed25519, as during an upgrade: the previous release's
// consumers refuse the MAC (BUS_COMMAND_SIGN=mac, the upgrade's last step).
const thisRelease = (sign: Scheme): ProcessRelease => ({ root: repoRoot(), env: { INTERNAL_AUTH_SIGN: sign, BUS_COMMAND_SIGN: "ed25519" } });
const previousRelease = (sign: Scheme): ProcessRelease => ({ root: previous!.root, env: { INTERNAL_AUTH_SIGN: sign } });

/**
 * The previous release's broker rights: every deployable also configured and read the exchanges, and
 * wrote and bound the unrouted queue (it declared them when it connected). This release's are granted at
 * the last step.
 */
function previousBrokerRights(deployable: BusDeployable): BrokerRights {
  const rights = brokerRights(deployable);
  const main = BusExchanges.main.replace(/\./g, "\\.");
  const unrouted = BusExchanges.unrouted.replace(/\./g, "\\.");
  const also = (names: string[], pattern: string) => `^(${names.join("|")})$|${pattern}`;
  return {
    ...rights,
    configure: also([main, unrouted], rights.configure),
    write: also([unrouted], rights.write),
    read: also([main, unrouted], rights.read),
  };
}

beforeAll(async () => {
  previous = await checkOutPreviousRelease();
  const old = previousRelease("ed25519");
  sut = await startSystemUnderTest({
    only: ["billing-ledger", "text", "gateway"],
    migrate: (serviceDir, url) => previous!.migrate(serviceDir, url),
    releases: { "billing-ledger": old, text: old, gateway: old },
    // A revoked key is refused at once only if the bus said so: the cache alone would keep it 5 s.
    env: { KEY_CACHE_TTL_MS: "5000", INTERNAL_AUTH_ACCEPT: "both" },
    brokerRights: previousBrokerRights,
    readyTimeoutMs: 120_000,
  });
}, INSTALL_AND_START_MS);

afterAll(async () => {
  try {
    await sut?.close();
  } finally {
    previous?.remove();
  }
}, 120_000);

type Mix = Record<"billing-ledger" | "text" | "gateway", string>;

/** Which release each process runs, read from the process itself (its working directory). */
function mix(): Record<string, string> {
  const releases = new Map([
    [realpathSync(repoRoot()), "this"],
    [realpathSync(previous!.root), previous!.version],
  ]);
  return Object.fromEntries(
    sut!.system.processes().map((p) => {
      const cwd = realpathSync(`/proc/${sut!.system.pidOf(p) ?? "self"}/cwd`);
      return [p, releases.get(cwd) ?? cwd];
    }),
  );
}

/** Whether billing-ledger's database has the SQL functions of this release (1.1.0 had no hold_room). */
async function hasThisReleasesFunctions(): Promise<boolean> {
  const rows = await queryRows<{ n: string }>(sut!.databaseUrls["billing-ledger"]!, "SELECT count(*) AS n FROM pg_proc WHERE proname = 'hold_room'");
  return Number(rows[0]!.n) === 1;
}

/** Bus messages any process refused (unsigned, a bad signature, a producer it does not accept...). */
async function refusedMessages(): Promise<number> {
  const urls = [sut!.system.urls["billing-ledger"], sut!.system.urls.text, sut!.system.gatewayInternalUrl];
  let refused = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const m of text.matchAll(/^bus_messages_refused_total(?:\{[^}]*\})? (\d+)$/gm)) refused += Number(m[1]);
  }
  return refused;
}

interface Answer {
  status: number;
  body: { billing?: { status: string; cost_microrub: number }; content?: { text: string }[] };
}

async function paidMessage(key: string, content: string): Promise<Answer> {
  const idempotencyKey = randomUUID();
  const send = () =>
    fetch(`${sut!.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": idempotencyKey },
      body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content }] }),
    });
  let res = await send();
  // An outcome not yet final is asked for again with its key, as the contract says.
  for (const deadline = Date.now() + 30_000; res.status === 202 && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 200));
    res = await send();
  }
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

/** Everything a paid request touches, with the processes running the releases `expected` says. */
async function trafficIsRight(step: string, expected: Mix): Promise<void> {
  const s = sut!;
  expect({ step, mix: mix() }).toEqual({ step, mix: expected });
  const credit = 50_000_000;
  const account = await s.account({ credit, dailyBudget: credit });
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => paidMessage(account.key, `${step}: request ${i}`)));
  expect({ step, statuses: answers.map((a) => a.status) }).toEqual({ step, statuses: answers.map(() => 200) });
  for (const [i, a] of answers.entries()) {
    expect(a.body.content?.[0]?.text).toContain(`${step}: request ${i}`);
    expect(a.body.billing).toEqual({ status: "settled", estimated_cost_microrub: expect.any(Number), cost_microrub: expect.any(Number) });
    expect(a.body.billing!.cost_microrub).toBeGreaterThan(0);
  }
  // The settlements crossed the bus to billing-ledger: charged exactly what the answers say, once.
  const charged = answers.reduce((sum, a) => sum + a.body.billing!.cost_microrub, 0);
  expect(await s.settledBalance(account.organizationId, 60_000)).toMatchObject({ balance_microrub: credit - charged, reserved_microrub: 0 });

  // A revocation crosses the bus from billing-ledger to the gateway: refused well inside the 5 s cache.
  expect((await paidMessage(account.key, `${step}: before the revocation`)).status).toBe(200);
  await s.admin("POST", `/admin/v1/keys/${account.keyId}/revoke`);
  const revokedAt = Date.now();
  let status = 0;
  while (Date.now() - revokedAt < 5_000) {
    status = (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${account.key}` } })).status;
    if (status === 401) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect({ step, status, withinMs: Date.now() - revokedAt < 3_000 }).toEqual({ step, status: 401, withinMs: true });

  expect(await refusedMessages()).toBe(0);
  // The books check of the release billing-ledger runs, as its operator would run it: this release's
  // reads this release's SQL functions, which the previous schema does not have.
  const books = booksCheck(s.databaseUrls["billing-ledger"]!, expected["billing-ledger"] === "this" ? undefined : previous!.root);
  expect({ step, ok: books.ok, output: books.ok ? "" : books.output }).toEqual({ step, ok: true, output: "" });
}

/**
 * This release's migrations and SQL functions: while the previous release runs, what its migration Job
 * applies (`rollout`: not the after-rollout ones); once none of its pods runs, the rest (`finish`).
 */
async function applyThisReleasesMigrations(stage: "rollout" | "all"): Promise<void> {
  for (const [service, url] of Object.entries(sut!.databaseUrls) as [ServiceName, string][]) {
    await thisCheckoutsMigrations(path.join(repoRoot(), ServiceCatalog[service].dir), url, stage);
  }
}

/** Whether billing-ledger's holds are keyed with their organization (the after-rollout migration's work). */
async function holdsKeyedByOrganization(): Promise<boolean> {
  const rows = await queryRows<{ key: string }>(
    sut!.databaseUrls["billing-ledger"]!,
    "SELECT pg_get_constraintdef(oid) AS key FROM pg_constraint WHERE conrelid = 'holds'::regclass AND contype = 'p'",
  );
  return rows[0]!.key === "PRIMARY KEY (organization_id, id)";
}

it(
  "upgrades billing-ledger, text and the gateway one at a time from the previous release, rolls each back and forward, money exact throughout",
  async () => {
    const s = sut!;
    const was = previous!.version;
    const now = "this";
    expect(was).toMatch(/^\d+\.\d+\.\d+$/);
    expect(await hasThisReleasesFunctions()).toBe(false);
    await trafficIsRight(`all on ${was}`, { "billing-ledger": was, text: was, gateway: was });

    // Step 1: the migration Job of this release, the previous release's pods still running.
    await applyThisReleasesMigrations("rollout");
    expect(await hasThisReleasesFunctions()).toBe(true);
    expect(await holdsKeyedByOrganization()).toBe(false);
    await trafficIsRight("this release's schema and functions", { "billing-ledger": was, text: was, gateway: was });

    // Step 2: billing-ledger, first (its grant key; the previous text's commands reach it).
    await s.system.restart("billing-ledger", thisRelease("mac"));
    await trafficIsRight("billing-ledger upgraded", { "billing-ledger": now, text: was, gateway: was });

    // Step 3: text. The previous gateway in front of this text.
    await s.system.restart("text", thisRelease("mac"));
    await trafficIsRight("text upgraded", { "billing-ledger": now, text: now, gateway: was });

    // Step 4: the gateway (and the others, which this system does not run).
    await s.system.restart("gateway", thisRelease("ed25519"));
    await trafficIsRight("gateway upgraded", { "billing-ledger": now, text: now, gateway: now });

    // Rolling back one deployable: this gateway and billing-ledger in front of and behind the previous text;
    // then the previous billing-ledger behind this release's text and gateway.
    await s.system.restart("text", previousRelease("mac"));
    await trafficIsRight("text rolled back", { "billing-ledger": now, text: was, gateway: now });
    await s.system.restart("text", thisRelease("mac"));
    await trafficIsRight("text upgraded again", { "billing-ledger": now, text: now, gateway: now });
    await s.system.restart("billing-ledger", previousRelease("mac"));
    await trafficIsRight("billing-ledger rolled back", { "billing-ledger": was, text: now, gateway: now });
    await s.system.restart("billing-ledger", thisRelease("mac"));
    await trafficIsRight("billing-ledger upgraded again", { "billing-ledger": now, text: now, gateway: now });

    // Step 5, once every deployable runs this release: this release's broker users, then billing-ledger
    // restarted (it moves the unrouted queue to a quorum queue). Only the topology's owner configures it now.
    await s.grantBrokerRights();
    await s.system.restart("billing-ledger", thisRelease("mac"));
    await s.system.restart("text", thisRelease("mac"));
    await s.system.restart("gateway", thisRelease("ed25519"));
    await trafficIsRight("this release's broker users", { "billing-ledger": now, text: now, gateway: now });

    // Step 6, with no pod of the previous release left: the after-rollout migrations, under this
    // release's running pods.
    await applyThisReleasesMigrations("all");
    expect(await holdsKeyedByOrganization()).toBe(true);
    await trafficIsRight("after the rollout", { "billing-ledger": now, text: now, gateway: now });
  },
  STEPS_MS,
);
