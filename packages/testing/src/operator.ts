import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { adminClient, repoRoot } from "@meter/local-infra";
import type { FakeUpstream } from "./fake-upstream";

export const LOCAL_MODEL = "meter-local-echo";
export const FAKE_MODEL = "fake-claude";
export const PRICES = { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 };

export interface TestAccount {
  key: string;
  keyId: string;
  userId: string;
  organizationId: string;
}

/** The operator of a running system, through the gateway's admin API, as an administrator would be. */
export interface Operator {
  admin<T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<T>;
  /** A user and organization with `credit` microrub and a key with every scope (or those given). */
  account(opts?: { credit?: number; dailyBudget?: number; scopes?: string[] }): Promise<TestAccount>;
  /** The organization's balance once every hold is resolved (settlements reach billing a moment after an answer). */
  settledBalance(organizationId: string, timeoutMs?: number): Promise<{ balance_microrub: number; reserved_microrub: number; available_microrub: number }>;
}

export function operatorOf(gatewayUrl: string, adminToken: string): Operator {
  const admin = adminClient(gatewayUrl, adminToken);
  return {
    admin,
    async account({ credit = 1_000_000_000, dailyBudget = 1_000_000_000, scopes } = {}) {
      const user = await admin<{ id: string }>("POST", "/admin/v1/users", { email: `test-${randomUUID()}@example.test` });
      const org = await admin<{ id: string }>("POST", "/admin/v1/organizations", { name: "test" });
      await admin("POST", `/admin/v1/organizations/${org.id}/members`, { user_id: user.id });
      if (credit > 0) await admin("POST", `/admin/v1/organizations/${org.id}/credits`, { amount_microrub: credit, reference: "test" });
      const key = await admin<{ id: string; key: string }>("POST", "/admin/v1/keys", {
        user_id: user.id,
        organization_id: org.id,
        scopes: scopes ?? ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"],
        daily_budget_microrub: dailyBudget,
      });
      return { key: key.key, keyId: key.id, userId: user.id, organizationId: org.id };
    },
    async settledBalance(organizationId, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const b = await admin<{ balance_microrub: number; reserved_microrub: number; available_microrub: number }>(
          "GET",
          `/admin/v1/organizations/${organizationId}/balance`,
        );
        if (b.reserved_microrub === 0) return b;
        if (Date.now() > deadline) throw new Error(`organization ${organizationId} still has ${b.reserved_microrub} microrub reserved`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/** The test catalog: the built-in echo model and a model on the fake upstream, at PRICES. */
export async function seedTestModels(operator: Operator, upstream: Pick<FakeUpstream, "anthropicBaseUrl">): Promise<void> {
  await operator.admin("PUT", `/admin/v1/models/${LOCAL_MODEL}`, { enabled: true, provider: { kind: "local" }, operations: { text: PRICES } });
  await operator.admin("PUT", `/admin/v1/models/${FAKE_MODEL}`, {
    enabled: true,
    provider: { kind: "anthropic", base_url: upstream.anthropicBaseUrl, api_key_env: "FAKE_UPSTREAM_API_KEY" },
    operations: { text: PRICES },
  });
}

/** `pnpm ledger:check` on a billing database: its printout and whether the books balance. */
export function booksCheck(billingDatabaseUrl: string, root = repoRoot()): { ok: boolean; output: string } {
  const r = spawnSync(
    path.join(root, "node_modules", ".bin", "tsx"),
    [path.join(root, "services/billing-ledger/src/cli/ledger-check.ts"), "--url", billingDatabaseUrl],
    {
      encoding: "utf8",
    },
  );
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}
