import type { KeyActivity, NextRequest } from "@meter/contracts";
import type { UsageAnalyticsService } from "../request-log/usage-analytics.service";
import type { ApiKeyDto, ApiKeyService } from "./api-key.service";
import type { KeyUsageService } from "./key-usage.service";

export type ApiKeyDetail = ApiKeyDto & { activity: KeyActivity; next_request: NextRequest | null };

/** One key as the operator reads it (`GET /admin/v1/keys/{id}`): with its activity and whether its next request fits. */
export class KeyDetailService {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly usage: KeyUsageService,
    private readonly analytics: UsageAnalyticsService,
  ) {}

  async detail(id: string): Promise<ApiKeyDetail> {
    const key = await this.keys.get(id);
    const [activity, usage] = await Promise.all([this.analytics.activityOf([key.id]), this.usage.usage(key.id)]);
    // Only an active key has a next request to make.
    const next =
      key.status === "active"
        ? await this.analytics.nextRequests([{ id: key.id, remaining_microrub: usage.remaining_microrub }], key.organization_id)
        : new Map();
    return { ...key, activity: activity.get(key.id)!, next_request: next.get(key.id) ?? null };
  }
}
