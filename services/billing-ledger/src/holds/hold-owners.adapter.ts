import {
  AllowanceHolderEndpoints,
  Deployable,
  HoldOwnerEndpoints,
  type FinalHoldsRequest,
  type FinalHoldsResponse,
  type HoldAuditRequest,
  type HoldAuditVerdict,
  type HoldSource,
} from "@meter/contracts";
import { InternalClient, type InternalAuth } from "@meter/service-kit";

/** The services that place holds, by the `source` their holds carry: each answers the hold audit. */
export interface HoldOwners {
  sources(): HoldSource[];
  /** The owner's verdict on each hold; throws when the owner cannot be reached or answers nonsense. */
  audit(source: HoldSource, holds: HoldAuditRequest["holds"]): Promise<HoldAuditVerdict[]>;
  /** A page of the owner's final records (the books cross-check); throws like `audit`. */
  finalHolds(source: HoldSource, request: FinalHoldsRequest): Promise<FinalHoldsResponse>;
  /** Tells a holder that billing has no open record of these allowances of its, so it closes them; the ids it closed. Throws like `audit`. */
  unknownAllowances(source: HoldSource, allowanceIds: string[]): Promise<string[]>;
  close(): Promise<void>;
}

/** Calls each owner's `POST /internal/v1/hold-audit`, `/internal/v1/final-holds` and `/internal/v1/allowances/unknown`, signed as this process (billing-ledger) for that owner alone. */
export function createHoldOwners(auth: InternalAuth, urls: Partial<Record<HoldSource, string>>, timeoutMs = 10_000): HoldOwners {
  const clients = new Map<HoldSource, InternalClient>();
  for (const [source, baseUrl] of Object.entries(urls) as [HoldSource, string | undefined][]) {
    if (baseUrl) clients.set(source, new InternalClient({ baseUrl, auth, audience: Deployable.parse(source), timeoutMs, connections: 2 }));
  }
  const clientOf = (source: HoldSource): InternalClient => {
    const client = clients.get(source);
    if (!client) throw new Error(`no URL for the owner of ${source} holds`);
    return client;
  };
  return {
    sources: () => [...clients.keys()],
    async audit(source, holds) {
      return (await clientOf(source).send(HoldOwnerEndpoints.audit, { body: { holds } })).verdicts;
    },
    finalHolds(source, request) {
      return clientOf(source).send(HoldOwnerEndpoints.finalHolds, { body: request });
    },
    async unknownAllowances(source, allowanceIds) {
      return (await clientOf(source).send(AllowanceHolderEndpoints.unknownAllowances, { body: { allowance_ids: allowanceIds } })).closed;
    },
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}
