import type { Pool } from "pg";
import type { KeyOrganizations } from "../keys/key-organizations";
import type { LedgerOp } from "./hold-ops.repository";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whose money each hold op moves, so that a batch runs as one transaction per organization
 * (docs/scale.md): the organization an op names (settle, release, recover and expire carry it), else
 * its key's (a placement's or grant's key, the key of the allowance a request's command names), else
 * that of an earlier op of the batch that makes its hold, else its hold's. Null where billing has neither
 * key nor hold: that op finds nothing in any organization.
 */
export class OpOrganizations {
  constructor(
    private readonly pool: Pool,
    private readonly keys: KeyOrganizations,
  ) {}

  async of(ops: readonly LedgerOp[]): Promise<(string | null)[]> {
    const keyOf = ops.map((op) => (named(op) ? undefined : opKey(op)));
    const keys = await this.keys.of(keyOf.filter((k): k is string => k !== undefined));
    const orgs = ops.map((op, i) => named(op) ?? (keyOf[i] === undefined ? undefined : keys.get(keyOf[i]!)));
    // A hold an earlier op of the batch makes (a placement, a grant, a request's command on an
    // allowance): a later op on it is that op's organization's.
    const madeHere = new Map<string, { at: number; org: string }>();
    ops.forEach((op, i) => {
      const id = op.hold_id.toLowerCase();
      if (makes(op) && orgs[i] !== undefined && !madeHere.has(id)) madeHere.set(id, { at: i, org: orgs[i]! });
    });
    const earlier = (op: LedgerOp, i: number) => {
      const made = madeHere.get(holdOf(op));
      return made !== undefined && made.at < i ? made.org : undefined;
    };
    const unknown = ops.flatMap((op, i) => (orgs[i] === undefined && earlier(op, i) === undefined ? [holdOf(op)] : []));
    const holds = await this.holdOrganizations(unknown);
    return ops.map((op, i) => orgs[i] ?? earlier(op, i) ?? holds.get(holdOf(op)) ?? null);
  }

  private async holdOrganizations(holdIds: readonly string[]): Promise<Map<string, string>> {
    const ids = [...new Set(holdIds.filter((id) => UUID.test(id)))];
    if (ids.length === 0) return new Map();
    const { rows } = await this.pool.query<{ id: string; organization_id: string }>("SELECT id, organization_id FROM holds WHERE id = ANY ($1::uuid[])", [ids]);
    return new Map(rows.map((r) => [r.id, r.organization_id]));
  }
}

/** The organization an op names itself, if it does. */
function named(op: LedgerOp): string | undefined {
  const org = "organization_id" in op ? op.organization_id : undefined;
  return typeof org === "string" && UUID.test(org) ? org.toLowerCase() : undefined;
}

/** The key an op's money is on, when the op says: a placement's or grant's, or its allowance's. */
function opKey(op: LedgerOp): string | undefined {
  const key = op.op === "place" || op.op === "grant" || op.op === "recover" ? op.key_id : "allowance" in op ? op.allowance?.key_id : undefined;
  return typeof key === "string" && UUID.test(key) ? key.toLowerCase() : undefined;
}

/** An op that makes its hold: a placement, a grant, a recovery, a request's command on an allowance. */
function makes(op: LedgerOp): boolean {
  return op.op === "place" || op.op === "grant" || op.op === "recover" || ("allowance" in op && op.allowance !== undefined);
}

/** The hold whose organization an op is in, when nothing else tells: its allowance's, or its own. */
function holdOf(op: LedgerOp): string {
  const allowance = "allowance" in op ? op.allowance?.allowance_id : undefined;
  return (allowance ?? op.hold_id).toLowerCase();
}
