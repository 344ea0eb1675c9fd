import { randomUUID } from "node:crypto";
import { holdCalls, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

describe("account cabinet", () => {
  it("creates users idempotently by email", async () => {
    const email = `Someone-${randomUUID()}@Example.test`;
    const first = await h.call("POST", "/admin/v1/users", { kind: "admin" }, { email }).expect(201);
    const again = await h.call("POST", "/admin/v1/users", { kind: "admin" }, { email: email.toLowerCase() }).expect(200);
    expect(again.body.id).toBe(first.body.id);
    expect(first.body.email).toBe(email.toLowerCase());
  });

  it("rejects unknown fields and bad values with the contract's codes", async () => {
    const unknown = await h.call("POST", "/admin/v1/organizations", { kind: "admin" }, { name: "x", colour: "red" }).expect(400);
    expect(unknown.body.error.code).toBe("unknown_field");
    const bad = await h.call("POST", "/admin/v1/users", { kind: "admin" }, { email: "not-an-email" }).expect(400);
    expect(bad.body.error.code).toBe("invalid_request");
    const float = await h
      .call("POST", `/admin/v1/organizations/${randomUUID()}/credits`, { kind: "admin" }, { amount_microrub: 1.5, reference: "r" })
      .expect(400);
    expect(float.body.error.code).toBe("invalid_request");
  });

  it("refuses a NUL character in a name or reference with a code (PostgreSQL text cannot hold one: it was a 500)", async () => {
    const a = await seedAccount(h);
    const admin = { kind: "admin" } as const;
    const refused: ["GET" | "POST" | "PATCH", string, Record<string, unknown>][] = [
      ["POST", "/admin/v1/organizations", { name: "a\u0000b" }],
      ["POST", `/admin/v1/organizations/${a.organizationId}/credits`, { amount_microrub: 5, reference: "a\u0000b" }],
      ["POST", "/admin/v1/keys", { user_id: a.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 5, name: "a\u0000b" }],
      ["PATCH", `/admin/v1/keys/${a.keyId}`, { name: "a\u0000b" }],
      ["GET", "/admin/v1/holds?source=%00", {}],
      ["GET", "/admin/v1/organizations?q=a%00", {}],
    ];
    for (const [method, path, body] of refused) {
      const res = await h.call(method, path, admin, method === "GET" ? undefined : body);
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 400, code: "invalid_request" });
    }
    const org = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`, admin).expect(200);
    expect(org.body.balance_microrub).toBe(0);
  });

  it("credits are idempotent on their reference", async () => {
    const a = await seedAccount(h);
    const path = `/admin/v1/organizations/${a.organizationId}/credits`;
    const first = await h.call("POST", path, { kind: "admin" }, { amount_microrub: 5_000, reference: "invoice-1" }).expect(201);
    const replay = await h.call("POST", path, { kind: "admin" }, { amount_microrub: 5_000, reference: "invoice-1" }).expect(200);
    expect(replay.body).toEqual(first.body);
    const mismatch = await h.call("POST", path, { kind: "admin" }, { amount_microrub: 6_000, reference: "invoice-1" }).expect(422);
    expect(mismatch.body.error.code).toBe("idempotency_key_mismatch");
    const concurrent = await Promise.all(
      Array.from({ length: 8 }, () => h.call("POST", path, { kind: "admin" }, { amount_microrub: 700, reference: "invoice-2" })),
    );
    expect(concurrent.filter((r) => r.status === 201)).toHaveLength(1);
    const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
    expect(balance.body).toEqual({
      organization_id: a.organizationId,
      balance_microrub: 5_700,
      reserved_microrub: 0,
      available_microrub: 5_700,
    });
  });

  it("shows a key once, stores only its hash, and revokes it", async () => {
    const a = await seedAccount(h);
    const created = await h
      .call(
        "POST",
        "/admin/v1/keys",
        { kind: "admin" },
        { user_id: a.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 100, name: "ci" },
      )
      .expect(201);
    expect(created.body).toMatchObject({ scopes: ["text"], daily_budget_microrub: 100, status: "active", name: "ci" });
    expect(created.body.key).toMatch(/^mtr_[A-Za-z0-9_-]{32}$/);
    expect(created.body.key.startsWith(created.body.prefix)).toBe(true);
    const read = await h.call("GET", `/admin/v1/keys/${created.body.id}`).expect(200);
    expect(read.body.key).toBeUndefined();
    const stored = await h.db.apiKey.findFirstOrThrow({ where: { id: created.body.id } });
    expect(JSON.stringify(stored, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(created.body.key);
    expect(stored.keyHash).toMatch(/^[0-9a-f]{64}$/);

    const revoked = await h.call("POST", `/admin/v1/keys/${created.body.id}/revoke`).expect(200);
    expect(revoked.body.status).toBe("revoked");
    await h.call("POST", "/internal/v1/keys/verify", { kind: "service", service: "gateway" }, { key: created.body.key }).expect(401);
  });

  it("refuses a key for a user outside the organization", async () => {
    const a = await seedAccount(h);
    const b = await seedAccount(h);
    const res = await h
      .call("POST", "/admin/v1/keys", { kind: "admin" }, { user_id: b.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 1 })
      .expect(400);
    expect(res.body.error.code).toBe("invalid_request");
    await h
      .call("POST", "/admin/v1/keys", { kind: "admin" }, { user_id: a.userId, organization_id: randomUUID(), scopes: ["text"], daily_budget_microrub: 1 })
      .expect(404);
  });

  it("pages the ledger newest first", async () => {
    const a = await seedAccount(h);
    for (let i = 0; i < 5; i++) {
      await h
        .call("POST", `/admin/v1/organizations/${a.organizationId}/credits`, { kind: "admin" }, { amount_microrub: 100 + i, reference: `r${i}` })
        .expect(201);
    }
    const page1 = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger?limit=3`).expect(200);
    expect(page1.body.data.map((e: { amount_microrub: number }) => e.amount_microrub)).toEqual([104, 103, 102]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger?limit=3&cursor=${page1.body.next_cursor}`).expect(200);
    expect(page2.body.data.map((e: { amount_microrub: number }) => e.amount_microrub)).toEqual([101, 100]);
    expect(page2.body.has_more).toBe(false);
    expect(page2.body.data[1]).toMatchObject({ kind: "credit", balance_after_microrub: 100, reference: "r0" });
  });
});

describe("stale holds", () => {
  it("lists active holds older than N seconds, oldest first, with their owners", async () => {
    const a = await seedAccount(h, { credit: 100_000 });
    const ids: string[] = [randomUUID(), randomUUID(), randomUUID()];
    const [old, older] = ids;
    for (const id of ids) expect((await holdCalls(h).place(a.keyId, 1_000, id)).status).toBe(200);
    await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '20 minutes' WHERE id = ${old}::uuid`;
    await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '2 hours' WHERE id = ${older}::uuid`;

    const stale = await h.call("GET", "/admin/v1/holds?status=active&older_than_s=600").expect(200);
    const mine = (stale.body.data as { hold_id: string }[]).filter((x) => ids.includes(x.hold_id));
    expect(mine).toEqual([
      expect.objectContaining({ hold_id: older, status: "active", source: "text", owner_ref: `req-${older}` }),
      expect.objectContaining({ hold_id: old, status: "active", source: "text", owner_ref: `req-${old}` }),
    ]);
    await h.call("GET", "/admin/v1/holds?older_than_s=-1").expect(400);
  });

  it("an operator releases a hold with a reason that the ledger keeps", async () => {
    const a = await seedAccount(h, { credit: 100_000 });
    const holdId = randomUUID();
    await holdCalls(h).place(a.keyId, 4_000, holdId);
    // A NUL character in the reason is refused with a code (it was a 500).
    expect((await h.call("POST", `/admin/v1/holds/${holdId}/release`, { kind: "admin" }, { reason: "a\u0000b" }).expect(400)).body.error.code).toBe(
      "invalid_request",
    );
    const released = await h.call("POST", `/admin/v1/holds/${holdId}/release`, { kind: "admin" }, { reason: "ticket 4521: client crashed" }).expect(200);
    expect(released.body).toMatchObject({ hold_id: holdId, status: "released", amount_microrub: 4_000 });
    // Again: the same answer, nothing moves twice.
    await h.call("POST", `/admin/v1/holds/${holdId}/release`, { kind: "admin" }, { reason: "again" }).expect(200);

    const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
    const entries = (ledger.body.data as { kind: string; hold_id: string; reference: string; amount_microrub: number }[]).filter((e) => e.hold_id === holdId);
    expect(entries.map((e) => [e.kind, e.amount_microrub, e.reference])).toEqual([
      ["release", 4_000, "ticket 4521: client crashed"],
      ["hold", 4_000, null],
    ]);
    const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
    expect(balance.body).toMatchObject({ reserved_microrub: 0, available_microrub: 100_000 });

    // A settled hold cannot be released; an unknown one is not found (and no tombstone is left).
    const settled = randomUUID();
    await holdCalls(h).place(a.keyId, 1_000, settled);
    await holdCalls(h).settle(settled, 500);
    expect((await h.call("POST", `/admin/v1/holds/${settled}/release`, { kind: "admin" }, { reason: "x" }).expect(409)).body.error.code).toBe(
      "hold_already_resolved",
    );
    const unknown = randomUUID();
    await h.call("POST", `/admin/v1/holds/${unknown}/release`, { kind: "admin" }, { reason: "x" }).expect(404);
    expect(await h.services.holdReads.find(unknown)).toBeUndefined();
    await h.call("POST", `/admin/v1/holds/${holdId}/release`, { kind: "admin" }, {}).expect(400);
  });
});

describe("catalog", () => {
  const model = {
    enabled: true,
    provider: { kind: "local" },
    operations: {
      text: { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 },
      image_edit: { unit: "request", price_per_unit_microrub: 50_000 },
      ocr: { unit: "page", price_per_unit_microrub: 2_000 },
    },
  };

  /** What an upstream chat provider serves: text (the catalog refuses one for OCR or image editing). */
  const textModel = { ...model, operations: { text: model.operations.text } };

  it("upserts models and publishes enabled ones with their tariffs, never the provider", async () => {
    await h.call("PUT", "/admin/v1/models/meter-test-1", { kind: "admin" }, model).expect(201);
    await h.call("PUT", "/admin/v1/models/meter-test-1", { kind: "admin" }, model).expect(200);
    await h.call("PUT", "/admin/v1/models/meter-off", { kind: "admin" }, { ...model, enabled: false }).expect(201);
    const a = await seedAccount(h);
    const identity = { kind: "key" as const, key_id: a.keyId, user_id: a.userId, organization_id: a.organizationId, scopes: [] };
    const published = await h.call("GET", "/v1/models", identity).expect(200);
    const ids = published.body.data.map((m: { id: string }) => m.id);
    expect(ids).toContain("meter-test-1");
    expect(ids).not.toContain("meter-off");
    const entry = published.body.data.find((m: { id: string }) => m.id === "meter-test-1");
    expect(entry).toMatchObject({ object: "model", operations: model.operations });
    expect(entry.provider).toBeUndefined();
  });

  it("serves one published model by id, vendor/model ids included", async () => {
    await h.call("PUT", "/admin/v1/models/vendor/meter-slash", { kind: "admin" }, model).expect(201);
    expect((await h.call("GET", "/admin/v1/models/vendor%2Fmeter-slash").expect(200)).body).toMatchObject({
      id: "vendor/meter-slash",
      provider: model.provider,
    });
    await h.call("PUT", "/admin/v1/models/meter-hidden", { kind: "admin" }, { ...model, enabled: false }).expect(201);
    const a = await seedAccount(h);
    const identity = { kind: "key" as const, key_id: a.keyId, user_id: a.userId, organization_id: a.organizationId, scopes: [] };
    const one = await h.call("GET", "/v1/models/vendor/meter-slash", identity).expect(200);
    expect(one.body).toMatchObject({ id: "vendor/meter-slash", object: "model", operations: model.operations });
    expect(one.body.provider).toBeUndefined();
    for (const id of ["meter-hidden", "no-such-model"]) {
      expect((await h.call("GET", `/v1/models/${id}`, identity).expect(404)).body.error.code).toBe("model_not_found");
    }
  });

  it("keeps several providers per model for the operator, and shows key holders none of them", async () => {
    const providers = [
      { kind: "anthropic", base_url: "http://127.0.0.1:9/", upstream_model: "claude-a", api_key_env: "ANTHROPIC_API_KEY", priority: 0, weight: 3 },
      { kind: "openai-chat", base_url: "http://127.0.0.1:10/v1", upstream_model: "gpt-b", priority: 0, rpm: 600 },
      { kind: "local", priority: 1 },
    ];
    await h.call("PUT", "/admin/v1/models/meter-routed", { kind: "admin" }, { ...textModel, provider: undefined, providers }).expect(201);
    const admin = (await h.call("GET", "/admin/v1/models/meter-routed").expect(200)).body;
    expect(admin.providers).toEqual(providers);
    // The first provider, for the services that read one.
    expect(admin.provider).toEqual({ kind: "anthropic", base_url: "http://127.0.0.1:9/", upstream_model: "claude-a", api_key_env: "ANTHROPIC_API_KEY" });
    // A model given one `provider` lists it as its only one.
    await h.call("PUT", "/admin/v1/models/meter-single", { kind: "admin" }, model).expect(201);
    expect((await h.call("GET", "/admin/v1/models/meter-single").expect(200)).body.providers).toEqual([model.provider]);

    const a = await seedAccount(h);
    const identity = { kind: "key" as const, key_id: a.keyId, user_id: a.userId, organization_id: a.organizationId, scopes: [] };
    const one = await h.call("GET", "/v1/models/meter-routed", identity).expect(200);
    expect(JSON.stringify(one.body)).not.toMatch(/provider|claude-a|127\.0\.0\.1/);
    const all = await h.call("GET", "/v1/models", identity).expect(200);
    expect(JSON.stringify(all.body)).not.toMatch(/provider|claude-a|127\.0\.0\.1/);

    const refused = [
      { ...model, providers },
      { ...model, provider: undefined, providers: [providers[0], providers[0]] },
      { ...model, provider: undefined, providers: [providers[1], { kind: "anthropic", base_url: "http://127.0.0.1:9/", api_key_env: "INTERNAL_API_KEY" }] },
      { ...model, provider: undefined, providers: [{ kind: "openai-chat" }] },
      { ...model, provider: undefined, providers: [{ ...providers[1], weight: 0 }] },
      // A base_url that is no URL at all was a 500 (naming the provider threw).
      { ...model, provider: undefined, providers: [{ kind: "anthropic", base_url: "http://" }] },
      { ...model, provider: { kind: "anthropic", base_url: "http://" } },
    ];
    for (const body of refused) {
      expect((await h.call("PUT", "/admin/v1/models/meter-routed", { kind: "admin" }, body).expect(400)).body.error.code).toBe("invalid_request");
    }
    expect((await h.call("GET", "/admin/v1/models/meter-routed").expect(200)).body.providers).toEqual(providers);
  });

  it("sells image editing at a fixed per-request price only", async () => {
    const res = await h
      .call("PUT", "/admin/v1/models/meter-bad", { kind: "admin" }, { ...model, operations: { image_edit: { unit: "image", price_per_unit_microrub: 1 } } })
      .expect(400);
    expect(res.body.error.code).toBe("invalid_request");
  });

  it("refuses a provider kind that cannot serve one of the model's operations, naming the kinds that can", async () => {
    const res = await h
      .call("PUT", "/admin/v1/models/meter-mixed", { kind: "admin" }, { ...model, provider: { kind: "anthropic", base_url: "http://127.0.0.1:9/" } })
      .expect(400);
    expect(res.body.error.message).toMatch(/provider kind anthropic cannot serve image_edit; kinds that can: openai-images, local/);
    expect(res.body.error.message).toMatch(/cannot serve ocr; kinds that can: local/);
  });

  it("requires a base URL for remote providers", async () => {
    await h.call("PUT", "/admin/v1/models/meter-remote", { kind: "admin" }, { ...model, provider: { kind: "anthropic" } }).expect(400);
  });

  it("names an upstream key only by a variable matching UPSTREAM_KEY_ENV_PATTERN that is none of our own settings", async () => {
    const remote = (api_key_env: string) => ({ ...textModel, provider: { kind: "anthropic", base_url: "http://127.0.0.1:9/", api_key_env } });
    await h.call("PUT", "/admin/v1/models/meter-keyed", { kind: "admin" }, remote("ANTHROPIC_API_KEY")).expect(201);
    const refused: [string, RegExp][] = [
      ["INTERNAL_SIGNING_KEY", /UPSTREAM_KEY_ENV_PATTERN/],
      ["BILLING_LEDGER_DATABASE_URL", /UPSTREAM_KEY_ENV_PATTERN/],
      ["INTERNAL_API_KEY", /own settings \(INTERNAL_\*\)/],
      ["ADMIN_API_KEY", /own settings \(ADMIN_\*\)/],
      ["FILES_UPLOAD_API_KEY", /own settings \(FILES_\*\)/],
      ["OBJECT_STORE_API_KEY", /own settings \(OBJECT_STORE_\*\)/],
      ["RABBITMQ_API_KEY", /own settings \(RABBITMQ_\*\)/],
    ];
    for (const [name, why] of refused) {
      const res = await h.call("PUT", "/admin/v1/models/meter-keyed", { kind: "admin" }, remote(name)).expect(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request" });
      expect(res.body.error.message).toMatch(why);
    }
    // The refused entries changed nothing.
    expect((await h.call("GET", "/admin/v1/models/meter-keyed").expect(200)).body.provider.api_key_env).toBe("ANTHROPIC_API_KEY");
  });
});
