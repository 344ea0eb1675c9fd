import type { FinalHold, Hold, HoldSource } from "@meter/contracts";
import { signGrant, verifyGrant, type GrantKeys, type GrantRefusal } from "@meter/service-kit";

/**
 * Why billing's word does not cover an owner's final record, which is then never repaired
 * automatically (docs/api.md, "Backups and the books cross-check"):
 * - `unsigned`: the record keeps no signature (made before grants were signed, or written by hand);
 * - `unknown_key`, `bad_signature`: not billing's signature over what the record claims (another
 *   organization, key, hold, service or amount than was granted);
 * - `grant_expired`: final after billing would have expired the hold unresolved;
 * - `over_signed_amount`: it claims more than was granted (an allowance: its requests together).
 */
export type Unverified = GrantRefusal | "grant_expired" | "over_signed_amount";

/** What a verified record may be repaired for: its grant, and for a request on an allowance the allowance's signed amount. */
export type Verified = { ok: true; allowance?: { allowance_id: string; amount_microrub: number } } | { ok: false; unverified: Unverified };

/**
 * billing-ledger's signatures over what it grants: each placement and grant it answers is signed once,
 * after its SQL function returned (one Ed25519 signature with a key parsed at start), and the books
 * cross-check checks an owner's record against it before any repair.
 */
export class GrantSignatures {
  constructor(
    private readonly keys: GrantKeys,
    /** HOLD_EXPIRY_HOURS: a grant holds until billing would expire its hold unresolved. */
    private readonly holdExpiryMs: number,
  ) {}

  /** The signature of a hold a placement or grant was answered with; none for a release's tombstone, which is nobody's. */
  of(hold: Hold): string | undefined {
    if (!hold.organization_id || !hold.key_id || !hold.source) return undefined;
    return signGrant(this.keys, {
      hold_id: hold.hold_id,
      kind: hold.kind ?? "request",
      source: hold.source,
      organization_id: hold.organization_id,
      key_id: hold.key_id,
      amount_microrub: hold.amount_microrub,
      expires_at: new Date(Date.parse(hold.created_at) + this.holdExpiryMs),
    });
  }

  /**
   * Whether billing granted what an owner's final record claims: the record's own hold (a request) or
   * the allowance it names, to this owner, for the record's organization and key, for at least its
   * estimate, and the record became final before the grant expired.
   */
  check(source: HoldSource, owner: FinalHold): Verified {
    const allowance = owner.allowance ?? null;
    const checked = verifyGrant(
      this.keys.trusted,
      {
        hold_id: allowance ? allowance.allowance_id : owner.hold_id,
        kind: allowance ? "allowance" : "request",
        source,
        organization_id: owner.organization_id,
        key_id: owner.key_id,
        amount_microrub: owner.grant?.amount_microrub ?? 0,
      },
      owner.grant?.signature,
    );
    if (!checked.ok) return { ok: false, unverified: checked.refused };
    const { grant } = checked;
    if (new Date(owner.final_at) > grant.expires_at) return { ok: false, unverified: "grant_expired" };
    if (owner.amount_microrub > grant.amount_microrub || (owner.settled_microrub ?? 0) > grant.amount_microrub) {
      return { ok: false, unverified: "over_signed_amount" };
    }
    return allowance ? { ok: true, allowance: { allowance_id: allowance.allowance_id, amount_microrub: grant.amount_microrub } } : { ok: true };
  }
}
