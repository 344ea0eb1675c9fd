import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Request, Response } from "express";
import type { AddressInfo } from "node:net";
import { HoldOwnerEndpoints, type HoldAuditRequest, type HoldAuditVerdict, type HoldSource } from "@meter/contracts";
import { createLogger, createServiceApp, jsonBody, Metrics, parseInput, requireIdentity } from "@meter/service-kit";
import { testAuth } from "@meter/testing";
import { createHoldOwners, type HoldOwners } from "../src/holds/hold-owners.adapter";
import { HoldAuditService } from "../src/holds/hold-audit.service";
import { counterValue, placeOp, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * A stand-in for the text service's side of the audit: its real door (only billing-ledger's signature
 * for the text service gets in) in front of verdicts the test decides.
 */
async function startOwner(verdictOf: (hold: HoldAuditRequest["holds"][number]) => HoldAuditVerdict | undefined) {
  const calls: HoldAuditRequest["holds"][] = [];
  const logger = createLogger("fake-owner", "silent");
  const app = createServiceApp({ logger, metrics: new Metrics("text"), readiness: [] }, (a) => {
    a.post(
      HoldOwnerEndpoints.audit.path,
      requireIdentity(testAuth("text"), { kinds: ["service"], from: ["billing-ledger"] }),
      jsonBody({ limit: "1mb" }),
      (req: Request, res: Response) => {
        const { holds } = parseInput(HoldOwnerEndpoints.audit.request, req.body);
        calls.push(holds);
        res.json({ verdicts: holds.flatMap((x) => verdictOf(x) ?? []) });
      },
    );
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, close: () => closeServer(server) };
}

/** One audit pass against a text owner that answers with `verdictOf`; what the owner was asked, call by call. */
async function auditOnce(verdictOf: Parameters<typeof startOwner>[0]): Promise<HoldAuditRequest["holds"][]> {
  const owner = await startOwner(verdictOf);
  const owners: HoldOwners = createHoldOwners(testAuth("billing-ledger"), { text: owner.url }, 2_000);
  const metrics = new Metrics("billing-ledger");
  const audit = new HoldAuditService(h.services.holdReads, h.services.holds, owners, { afterMs: 5 * 60_000 }, createLogger("audit-test", "silent"), {
    verdicts: metrics.counter("billing_hold_audit_verdicts_total", "verdicts", ["source", "verdict"]),
    unreachable: metrics.counter("billing_hold_audit_unreachable_total", "unreachable", ["source"]),
  });
  try {
    await audit.run();
    return owner.calls;
  } finally {
    await owners.close();
    await owner.close();
  }
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** An address where nothing listens: a refused connection. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await closeServer(server);
  return `http://127.0.0.1:${port}`;
}

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

it("asks each owner about holds active too long, in batches, and applies its verdicts with the reason in the ledger", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const place = async (source: HoldSource) => (await h.services.holds.place({ ...placeOp(a.keyId, 10_000), source })).hold_id;
  const [pending, settle, release, absent, silent] = [await place("text"), await place("text"), await place("text"), await place("text"), await place("text")];
  const media = await place("media-jobs");
  const recent = await place("text");
  await h.db
    .$executeRaw`UPDATE holds SET created_at = now() - interval '10 minutes' WHERE id <> ${recent}::uuid AND organization_id = ${a.organizationId}::uuid`;

  const owner = await startOwner(({ hold_id }) => {
    if (hold_id === pending) return { hold_id, status: "pending" };
    if (hold_id === settle) return { hold_id, status: "settle", amount_microrub: 7_000 };
    if (hold_id === release) return { hold_id, status: "release", reason: "upstream refused the request" };
    if (hold_id === absent) return { hold_id, status: "absent" };
    return undefined;
  });
  const owners: HoldOwners = createHoldOwners(testAuth("billing-ledger"), { text: owner.url, "media-jobs": await deadUrl() }, 2_000);
  const metrics = new Metrics("billing-ledger");
  const audit = new HoldAuditService(
    h.services.holdReads,
    h.services.holds,
    owners,
    { afterMs: 5 * 60_000, batchSize: 2 },
    createLogger("audit-test", "silent"),
    {
      verdicts: metrics.counter("billing_hold_audit_verdicts_total", "verdicts", ["source", "verdict"]),
      unreachable: metrics.counter("billing_hold_audit_unreachable_total", "unreachable", ["source"]),
    },
  );
  try {
    const pass = await audit.run();
    expect(pass).toEqual({ asked: 6, resolved: 3, unreachable: ["media-jobs"] });
    // Five old text holds in calls of two, oldest first, each named with its owner's record.
    expect(owner.calls.map((c) => c.length)).toEqual([2, 2, 1]);
    expect(owner.calls.flat()).toContainEqual({ hold_id: absent, owner_ref: `req-${absent}`, placed_at: expect.any(String) });
    expect(owner.calls.flat().map((x) => x.hold_id)).not.toContain(recent);

    const statusOf = async (id: string) => (await h.services.holdReads.find(id))?.status;
    expect(await statusOf(pending)).toBe("active");
    expect(await statusOf(silent)).toBe("active");
    expect(await statusOf(recent)).toBe("active");
    // An owner that could not be asked changes nothing; the hold waits for the next pass or the expiry sweep.
    expect(await statusOf(media)).toBe("active");
    expect(await counterValue(metrics, "billing_hold_audit_unreachable_total", { source: "media-jobs" })).toBe(1);
    expect((await h.services.holdReads.find(settle))?.settled_microrub).toBe(7_000);
    expect(await counterValue(metrics, "billing_hold_audit_verdicts_total", { source: "text" })).toBe(4);

    const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
    const releases = (ledger.body.data as { kind: string; hold_id: string; reference: string }[]).filter((e) => e.kind === "release");
    expect(Object.fromEntries(releases.map((e) => [e.hold_id, e.reference]))).toEqual({
      [release]: "upstream refused the request",
      [absent]: "no request behind it at text",
    });

    // The next pass asks only about what is still active, and repeats nothing already applied.
    owner.calls.length = 0;
    expect(await audit.run()).toEqual({ asked: 3, resolved: 0, unreachable: ["media-jobs"] });
    expect(
      owner.calls
        .flat()
        .map((x) => x.hold_id)
        .sort(),
    ).toEqual([pending, silent].sort());
  } finally {
    await owners.close();
    await owner.close();
  }
});

it("an owner's call carries billing-ledger's signature for that owner alone", async () => {
  const owner = await startOwner(({ hold_id }) => ({ hold_id, status: "pending" }));
  try {
    // Signed for media-jobs, sent to the text door: refused, so the audit counts the owner unreachable.
    const misaddressed = createHoldOwners(testAuth("billing-ledger"), { "media-jobs": owner.url });
    await expect(misaddressed.audit("media-jobs", [{ hold_id: randomUUID(), owner_ref: "r" }])).rejects.toThrow();
    await misaddressed.close();
    const right = createHoldOwners(testAuth("billing-ledger"), { text: owner.url });
    const hold_id = randomUUID();
    await expect(right.audit("text", [{ hold_id, owner_ref: "r" }])).resolves.toEqual([{ hold_id, status: "pending" }]);
    await right.close();
  } finally {
    await owner.close();
  }
});

it("asks about an allowance like any hold: one its holder has no record of gives back what its requests did not take", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const grant = (id: string) =>
    h.services.holds.apply([
      { op: "grant", hold_id: id, key_id: a.keyId, amount_microrub: 100_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: `al-${id}` },
    ]);
  const [open, lost, closing] = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of [open, lost, closing]) await grant(id);
  const spend = (allowanceId: string, id: string) => ({
    allowance_id: allowanceId,
    key_id: a.keyId,
    reserved_microrub: 10_000,
    operation: "text" as const,
    model: "m",
    owner_ref: `req-${id}`,
  });
  const request = randomUUID();
  await h.services.holds.apply([{ op: "settle", hold_id: request, amount_microrub: 8_000, source: "text", allowance: spend(lost, request) }]);
  // Closed by its holder with a request whose command is still on its way.
  await h.services.holds.apply([{ op: "release", hold_id: closing, reason: "idle", used_microrub: 10_000, source: "text" }]);
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '10 minutes' WHERE id IN (${open}::uuid, ${lost}::uuid, ${closing}::uuid)`;

  const calls = await auditOnce(({ hold_id }) => {
    if (hold_id === open) return { hold_id, status: "pending" };
    if (hold_id === lost) return { hold_id, status: "absent" };
    if (hold_id === closing) return { hold_id, status: "absent" };
    return undefined;
  });
  expect(calls.flat()).toContainEqual({ hold_id: lost, owner_ref: `al-${lost}`, placed_at: expect.any(String) });
  expect(await h.services.holdReads.find(open)).toMatchObject({ status: "active" });
  expect(await h.services.holdReads.find(lost)).toMatchObject({ status: "released", consumed_microrub: 10_000 });
  // A close waiting for its requests is not ended by the audit: the request's command (or the expiry) ends it.
  expect(await h.services.holdReads.find(closing)).toMatchObject({ status: "active" });
  const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
  const release = (ledger.body.data as { kind: string; hold_id: string; amount_microrub: number; reference: string }[]).find(
    (e) => e.kind === "release" && e.hold_id === lost,
  );
  expect(release).toMatchObject({ amount_microrub: 90_000, reference: "no request behind it at text" });
  const late = randomUUID();
  await h.services.holds.apply([{ op: "settle", hold_id: late, amount_microrub: 10_000, source: "text", allowance: spend(closing, late) }]);
  expect(await h.services.holdReads.find(closing)).toMatchObject({ status: "released" });
  await h.services.holds.apply([{ op: "release", hold_id: open, reason: "idle", used_microrub: 0 }]);
  expect(await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200)).toMatchObject({
    body: { balance_microrub: 982_000, reserved_microrub: 0 },
  });
});

it("an allowance its holder closed but billing still has active (billing restored) closes on the holder's word, with the estimates used", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const id = randomUUID();
  await h.services.holds.apply([
    { op: "grant", hold_id: id, key_id: a.keyId, amount_microrub: 100_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: id },
  ]);
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '10 minutes' WHERE id = ${id}::uuid`;
  await auditOnce(({ hold_id }) =>
    hold_id === id ? { hold_id, status: "release", reason: "allowance closed by its holder", used_microrub: 10_000 } : undefined,
  );
  // Closed on the holder's word: it waits for the one request placed on it, whose command (or repair) releases the rest.
  expect(await h.services.holdReads.find(id)).toMatchObject({ status: "active", consumed_microrub: 0 });
  const request = randomUUID();
  const spend = { allowance_id: id, key_id: a.keyId, reserved_microrub: 10_000, operation: "text" as const, model: "m", owner_ref: request };
  await h.services.holds.apply([{ op: "settle", hold_id: request, amount_microrub: 7_000, source: "text", allowance: spend }]);
  expect(await h.services.holdReads.find(id)).toMatchObject({ status: "released", consumed_microrub: 10_000 });
  expect(await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200)).toMatchObject({
    body: { balance_microrub: 993_000, reserved_microrub: 0 },
  });
});

it("an allowance its holder lost in a restore gives back what it still reserves; the charges recorded on it stand", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const grant = async () => {
    const id = randomUUID();
    await h.services.holds.apply([
      { op: "grant", hold_id: id, key_id: a.keyId, amount_microrub: 100_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: id },
    ]);
    const request = randomUUID();
    const spend = { allowance_id: id, key_id: a.keyId, reserved_microrub: 10_000, operation: "text" as const, model: "m", owner_ref: request };
    await h.services.holds.apply([{ op: "settle", hold_id: request, amount_microrub: 6_000, source: "text", allowance: spend }]);
    return id;
  };
  // Granted after the holder's backup: no record of it is left. Open at the backup: it closed it with what it knew then.
  const [forgotten, older] = [await grant(), await grant()];
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '10 minutes' WHERE id IN (${forgotten}::uuid, ${older}::uuid)`;
  await auditOnce(({ hold_id }) => {
    if (hold_id === forgotten) return { hold_id, status: "unknown" };
    if (hold_id === older) return { hold_id, status: "release", reason: "allowance closed by its holder", used_microrub: 0 };
    return undefined;
  });
  for (const id of [forgotten, older]) expect(await h.services.holdReads.find(id)).toMatchObject({ status: "released", consumed_microrub: 10_000 });
  expect(await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200)).toMatchObject({
    body: { balance_microrub: 988_000, reserved_microrub: 0 },
  });
});
