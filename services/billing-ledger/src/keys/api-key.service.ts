import { createHash, randomBytes } from "node:crypto";
import { toMicrorub, type Scope, type UpdateKeyRequest, type VerifyKeyResponse } from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { ApiKeyRepository, OpenAllowance } from "./api-key.repository";

/**
 * Asks the holders of these allowances to close them (no request is placed on them from the answer on;
 * each is then returned with what its requests used). Throws when a holder could not be told.
 */
export type AllowanceRecall = (allowances: OpenAllowance[]) => Promise<void>;

const KEY_PREFIX = "mtr_";
/** Characters of the key kept in clear so a holder can tell keys apart. */
const SHOWN_PREFIX_LENGTH = 12;

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export interface ApiKeyDto {
  id: string;
  object: "api_key";
  name: string | null;
  prefix: string;
  user_id: string;
  organization_id: string;
  scopes: Scope[];
  daily_budget_microrub: number;
  status: "active" | "revoked" | "expired";
  created_at: string;
  revoked_at: string | null;
  expires_at: string | null;
  budget_alert_percents: number[];
}

/**
 * API keys: 192 random bits, shown once at creation; only a SHA-256 is stored (a slow hash adds
 * nothing for a key of that entropy and would cost every uncached verification).
 */
export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyRepository,
    /** Without it (the CLI) open allowances are not called back: they return within their holder's idle time. */
    private readonly recall?: AllowanceRecall,
  ) {}

  async create(input: {
    user_id: string;
    organization_id: string;
    scopes: Scope[];
    daily_budget_microrub: number;
    name?: string | undefined;
  }): Promise<ApiKeyDto & { key: string }> {
    const membership = await this.keys.membership(input.organization_id, input.user_id);
    if (membership === "no_user") throw BillingErrors.userNotFound(input.user_id);
    if (membership === "no_organization") throw BillingErrors.organizationNotFound(input.organization_id);
    if (membership === "not_member") throw BillingErrors.notAMember();
    const key = KEY_PREFIX + randomBytes(24).toString("base64url");
    const row = await this.keys.create({
      userId: input.user_id,
      organizationId: input.organization_id,
      name: input.name ?? null,
      prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
      keyHash: hashKey(key),
      scopes: [...new Set(input.scopes)],
      dailyBudget: BigInt(input.daily_budget_microrub),
    });
    return { ...renderKey(row), key };
  }

  async get(id: string): Promise<ApiKeyDto> {
    const row = await this.keys.find(id);
    if (!row) throw BillingErrors.keyNotFound(id);
    return renderKey(row);
  }

  async list(filter: { organization_id?: string | undefined; user_id?: string | undefined }): Promise<ApiKeyDto[]> {
    const rows = await this.keys.list({ organizationId: filter.organization_id, userId: filter.user_id });
    return rows.map(renderKey);
  }

  /** Revoking is final; gateways hear of it on the bus and drop the key from their caches at once. */
  async revoke(id: string): Promise<ApiKeyDto> {
    const row = await this.keys.revoke(id, new Date());
    if (!row) throw BillingErrors.keyNotFound(id);
    return renderKey(row);
  }

  /**
   * Changes a key (docs/api.md, "Changing a key"). A budget set no higher than it was holds from the
   * answer on: the key's open allowances (money its holders spend without asking billing) are closed
   * at their holders before the answer, so every later request is checked against the new budget.
   */
  async update(id: string, input: UpdateKeyRequest): Promise<ApiKeyDto> {
    const now = new Date();
    const expiresAt = input.expires_at === undefined ? undefined : input.expires_at === null ? null : new Date(input.expires_at);
    if (expiresAt && expiresAt <= now) throw BillingErrors.expiryNotInFuture();
    const result = await this.keys.update(
      id,
      {
        name: input.name,
        dailyBudget: input.daily_budget_microrub === undefined ? undefined : BigInt(input.daily_budget_microrub),
        expiresAt,
        budgetAlertPercents: input.budget_alert_percents,
      },
      now,
    );
    if (!result) throw BillingErrors.keyNotFound(id);
    if (result === "not_active") throw BillingErrors.keyNotActive(id);
    // The same change sent again (after a failed call-back) calls back again: "no higher", not "lower".
    // Against the budget read under the key's lock: an edit committed meanwhile is what this one lowers.
    const lowered = input.daily_budget_microrub !== undefined && BigInt(input.daily_budget_microrub) <= result.budgetBefore;
    if (lowered && result.allowances.length > 0 && this.recall) {
      await this.recall(result.allowances).catch((e: unknown) => {
        throw BillingErrors.allowancesNotRecalled(id, e);
      });
    }
    return renderKey(result.row);
  }

  /**
   * Closes the keys whose expires_at passed (`billing.key.expired`) and calls back their allowances.
   * Verification refuses such a key already; this returns the money parked for it. A call-back that
   * fails is left to the holders' idle time (no request can reach an expired key's allowance).
   */
  async expireDue(now = new Date()): Promise<{ expired: string[]; recallFailed?: unknown }> {
    const { keyIds, allowances } = await this.keys.expireDue(now);
    if (allowances.length === 0 || !this.recall) return { expired: keyIds };
    try {
      await this.recall(allowances);
      return { expired: keyIds };
    } catch (e) {
      return { expired: keyIds, recallFailed: e };
    }
  }

  async verify(key: string): Promise<VerifyKeyResponse> {
    if (!key.startsWith(KEY_PREFIX)) throw BillingErrors.invalidKey();
    const row = await this.keys.findByHash(hashKey(key));
    // An expired key is refused as a revoked one, from its expires_at on (the sweep only tidies up).
    if (!row || row.status !== "active" || (row.expiresAt !== null && row.expiresAt <= new Date())) throw BillingErrors.invalidKey();
    return {
      identity: {
        kind: "key",
        key_id: row.id,
        user_id: row.userId,
        organization_id: row.organizationId,
        scopes: row.scopes as Scope[],
      },
      daily_budget_microrub: toMicrorub(row.dailyBudget),
      status: "active",
      expires_at: row.expiresAt ? row.expiresAt.toISOString() : null,
    };
  }
}

function renderKey(row: {
  id: string;
  name: string | null;
  prefix: string;
  userId: string;
  organizationId: string;
  scopes: string[];
  dailyBudget: bigint;
  status: "active" | "revoked" | "expired";
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  budgetAlertPercents: number[];
}): ApiKeyDto {
  return {
    id: row.id,
    object: "api_key",
    name: row.name,
    prefix: row.prefix,
    user_id: row.userId,
    organization_id: row.organizationId,
    scopes: row.scopes as Scope[],
    daily_budget_microrub: toMicrorub(row.dailyBudget),
    status: row.status,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt ? row.revokedAt.toISOString() : null,
    expires_at: row.expiresAt ? row.expiresAt.toISOString() : null,
    budget_alert_percents: row.budgetAlertPercents,
  };
}
