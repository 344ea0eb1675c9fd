import type { CabinetKey, MemberCreateKeyRequest, SessionIdentity, UpdateKeyRequest } from "@meter/contracts";
import { CabinetErrors } from "../errors";
import type { ApiKeyDto, ApiKeyService } from "./api-key.service";
import type { KeyUsageService } from "./key-usage.service";
import type { MemberScope } from "../accounts/member-scope";

/**
 * A member's own API keys in the chosen organization: the same keys and rules as the admin API's (only
 * a hash stored, the key shown once, revocation published to every gateway), scoped to the member.
 */
export class MemberKeysService {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly usage: KeyUsageService,
    private readonly scope: MemberScope,
  ) {}

  async list(identity: SessionIdentity): Promise<CabinetKey[]> {
    const { userId, organizationId } = await this.scope.of(identity);
    const keys = await this.keys.list({ user_id: userId, organization_id: organizationId });
    // A member has a handful of keys; each usage is the one query the budget itself is computed by.
    return Promise.all(keys.map(async (k) => this.withUsage(k)));
  }

  async create(identity: SessionIdentity, input: MemberCreateKeyRequest): Promise<CabinetKey & { key: string }> {
    const { userId, organizationId } = await this.scope.of(identity);
    const created = await this.keys.create({ ...input, user_id: userId, organization_id: organizationId });
    return { ...(await this.withUsage(created)), key: created.key };
  }

  async revoke(identity: SessionIdentity, keyId: string): Promise<CabinetKey> {
    await this.ownKey(identity, keyId);
    return this.withUsage(await this.keys.revoke(keyId));
  }

  /** The operator's change (ApiKeyService.update), on the member's own key. */
  async update(identity: SessionIdentity, keyId: string, input: UpdateKeyRequest): Promise<CabinetKey> {
    await this.ownKey(identity, keyId);
    return this.withUsage(await this.keys.update(keyId, input));
  }

  private async ownKey(identity: SessionIdentity, keyId: string): Promise<void> {
    const { userId, organizationId } = await this.scope.of(identity);
    const key = await this.keys.get(keyId).catch(() => undefined);
    // Another member's key is as missing as one that never was.
    if (!key || key.user_id !== userId || key.organization_id !== organizationId) throw CabinetErrors.notYourKey(keyId);
  }

  private async withUsage(k: ApiKeyDto): Promise<CabinetKey> {
    const u = await this.usage.usage(k.id);
    return {
      id: k.id,
      object: "api_key",
      name: k.name,
      prefix: k.prefix,
      scopes: k.scopes,
      daily_budget_microrub: k.daily_budget_microrub,
      status: k.status,
      created_at: k.created_at,
      revoked_at: k.revoked_at,
      expires_at: k.expires_at,
      budget_alert_percents: k.budget_alert_percents,
      usage: { day: u.day, spent_microrub: u.spent_microrub, reserved_microrub: u.reserved_microrub, remaining_microrub: u.remaining_microrub },
    };
  }
}
