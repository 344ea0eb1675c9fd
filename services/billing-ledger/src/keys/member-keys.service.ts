import type { CabinetKey, MemberCreateKeyRequest, SessionIdentity, UpdateKeyRequest } from "@meter/contracts";
import { CabinetErrors } from "../errors";
import type { UsageAnalyticsService } from "../request-log/usage-analytics.service";
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
    private readonly analytics: UsageAnalyticsService,
  ) {}

  async list(identity: SessionIdentity): Promise<CabinetKey[]> {
    const { userId, organizationId } = await this.scope.of(identity);
    return this.withActivity(await this.keys.list({ user_id: userId, organization_id: organizationId }), organizationId);
  }

  async create(identity: SessionIdentity, input: MemberCreateKeyRequest): Promise<CabinetKey & { key: string }> {
    const { userId, organizationId } = await this.scope.of(identity);
    const created = await this.keys.create({ ...input, user_id: userId, organization_id: organizationId });
    return { ...(await this.one(created)), key: created.key };
  }

  async revoke(identity: SessionIdentity, keyId: string): Promise<CabinetKey> {
    await this.ownKey(identity, keyId);
    return this.one(await this.keys.revoke(keyId));
  }

  /** The operator's change (ApiKeyService.update), on the member's own key. */
  async update(identity: SessionIdentity, keyId: string, input: UpdateKeyRequest): Promise<CabinetKey> {
    await this.ownKey(identity, keyId);
    return this.one(await this.keys.update(keyId, input));
  }

  private async one(k: ApiKeyDto): Promise<CabinetKey> {
    return (await this.withActivity([k], k.organization_id))[0]!;
  }

  /**
   * Each key with today's usage (a member has a handful of keys; each usage is the one query the
   * budget itself is computed by), its activity, and whether its next typical request fits.
   */
  private async withActivity(keys: ApiKeyDto[], organizationId: string): Promise<CabinetKey[]> {
    const [usages, activity] = await Promise.all([Promise.all(keys.map((k) => this.usage.usage(k.id))), this.analytics.activityOf(keys.map((k) => k.id))]);
    const active = keys.flatMap((k, i) => (k.status === "active" ? [{ id: k.id, remaining_microrub: usages[i]!.remaining_microrub }] : []));
    const next = await this.analytics.nextRequests(active, organizationId);
    return keys.map((k, i) => {
      const u = usages[i]!;
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
        activity: activity.get(k.id)!,
        next_request: next.get(k.id) ?? null,
      };
    });
  }

  private async ownKey(identity: SessionIdentity, keyId: string): Promise<void> {
    const { userId, organizationId } = await this.scope.of(identity);
    const key = await this.keys.get(keyId).catch(() => undefined);
    // Another member's key is as missing as one that never was.
    if (!key || key.user_id !== userId || key.organization_id !== organizationId) throw CabinetErrors.notYourKey(keyId);
  }
}
