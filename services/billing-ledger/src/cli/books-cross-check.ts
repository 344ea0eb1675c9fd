import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ServiceCatalog } from "@meter/contracts";

/**
 * `npm run books:cross-check [-- --no-repair]`: asks billing-ledger, over the admin API of a running
 * gateway (METER_URL, default http://127.0.0.1:8080; ADMIN_TOKEN from the environment or from
 * .local/secrets.json written by `npm start`), to compare every hold owner's final records with its own
 * holds now, and to repair what it lost. billing-ledger does the comparing: it alone holds the signed
 * identity the owners answer. Prints each difference; exits 1 when any is left unrepaired.
 */
interface Report {
  owners: { source: string; compared: number; unreachable: boolean }[];
  differences: { source: string; kind: string; hold_id: string; repaired: boolean }[];
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { "no-repair": { type: "boolean" } } });
  const base = process.env.METER_URL ?? `http://127.0.0.1:${process.env.GATEWAY_PORT ?? ServiceCatalog.gateway.port}`;
  const res = await fetch(`${base}/admin/v1/books/cross-check`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken()}`, "content-type": "application/json" },
    body: JSON.stringify({ repair: !values["no-repair"] }),
  });
  if (!res.ok) {
    console.error(`books cross-check: ${res.status} ${await res.text()}`);
    return 2;
  }
  const report = (await res.json()) as Report;
  for (const o of report.owners) {
    console.log(`${o.source}: ${o.unreachable ? "could not be asked (nothing concluded)" : `${o.compared} final records compared`}`);
  }
  for (const d of report.differences) console.log(`  ${d.source} ${d.kind} hold ${d.hold_id}: ${d.repaired ? "repaired" : "NOT repaired"}`);
  const open = report.differences.filter((d) => !d.repaired).length + report.owners.filter((o) => o.unreachable).length;
  console.log(open === 0 ? `OK: ${report.differences.length} difference(s), all repaired` : `FAILED: ${open} difference(s) or owner(s) left for a person`);
  return open === 0 ? 0 : 1;
}

function adminToken(): string {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  try {
    const secrets = JSON.parse(readFileSync(".local/secrets.json", "utf8")) as { ADMIN_TOKEN?: string };
    if (secrets.ADMIN_TOKEN) return secrets.ADMIN_TOKEN;
  } catch {
    // fall through to the error below
  }
  throw new Error("set ADMIN_TOKEN (or run `npm start` first, which writes .local/secrets.json)");
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(2);
  },
);
