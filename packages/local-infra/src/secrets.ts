import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { BUS_DEPLOYABLES, DEPLOYABLES, type BusDeployable } from "@meter/contracts";
import { generateInternalKeySet, type InternalKeySet } from "@meter/service-kit";
import { localStateDir } from "./repo-paths";

export type { InternalKeySet };

export interface LocalSecrets {
  ADMIN_TOKEN: string;
  internalKeys: InternalKeySet;
  /** Each deployable's broker password (its user is `meter-<deployable>`). */
  brokerPasswords: Record<BusDeployable, string>;
}

/**
 * The local system's secrets: the admin token (from the environment when set), every deployable's
 * internal signing key (and billing-ledger's grant key) and broker password, generated once and kept in .local/secrets.json (gitignored, mode 600) so
 * restarts and `pnpm cabinet` agree on them.
 */
export function localSecrets(env: NodeJS.ProcessEnv = process.env): LocalSecrets {
  const file = path.join(localStateDir("."), "secrets.json");
  let stored: Partial<LocalSecrets> = {};
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, "utf8")) as Partial<LocalSecrets>;
  // A set from before billing's grant key (GRANT_SIGNING_KEY) is made anew whole, as an incomplete one is.
  const keysComplete = stored.internalKeys && DEPLOYABLES.every((d) => stored.internalKeys!.signingKeys[d]) && stored.internalKeys.grantSigningKey;
  const brokerComplete = stored.brokerPasswords && BUS_DEPLOYABLES.every((d) => stored.brokerPasswords![d]);
  const secrets: LocalSecrets = {
    ADMIN_TOKEN: env.ADMIN_TOKEN || stored.ADMIN_TOKEN || `adm_${randomBytes(24).toString("base64url")}`,
    internalKeys: keysComplete ? stored.internalKeys! : generateInternalKeySet(),
    brokerPasswords: brokerComplete
      ? stored.brokerPasswords!
      : (Object.fromEntries(BUS_DEPLOYABLES.map((d) => [d, randomBytes(24).toString("hex")])) as Record<BusDeployable, string>),
  };
  if (secrets.ADMIN_TOKEN !== stored.ADMIN_TOKEN || !keysComplete || !brokerComplete) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(secrets, null, 2) + "\n", { mode: 0o600 });
  }
  return secrets;
}
