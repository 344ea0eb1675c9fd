import { createHash, randomBytes } from "node:crypto";
import { toMicrorub, type Scope, type VerifyKeyResponse } from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { ApiKeyRepository } from "./api-key.repository";

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
  status: "active" | "revoked";
  created_at: string;
  revoked_at: string | null;
}

/**
 * API keys: 192 random bits, shown once at creation; only a SHA-256 is stored (a slow hash adds
 * nothing for a key of that entropy and would cost every uncached verification).
 */
export class ApiKeyService {
  constructor(private readonly keys: ApiKeyRepository) {}

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

  async verify(key: string): Promise<VerifyKeyResponse> {
    if (!key.startsWith(KEY_PREFIX)) throw BillingErrors.invalidKey();
    const row = await this.keys.findByHash(hashKey(key));
    if (!row || row.status !== "active") throw BillingErrors.invalidKey();
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
  status: "active" | "revoked";
  createdAt: Date;
  revokedAt: Date | null;
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
  };
}
