import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { localStateDir } from "./repo-paths";

export interface LocalSecrets {
  INTERNAL_SECRET: string;
  ADMIN_TOKEN: string;
}

/**
 * The local system's secrets: taken from the environment when set, otherwise generated once and kept
 * in .local/secrets.json (gitignored, mode 600) so restarts and `pnpm cabinet` agree on them.
 */
export function localSecrets(env: NodeJS.ProcessEnv = process.env): LocalSecrets {
  const file = path.join(localStateDir("."), "secrets.json");
  let stored: Partial<LocalSecrets> = {};
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, "utf8")) as Partial<LocalSecrets>;
  const secrets: LocalSecrets = {
    INTERNAL_SECRET: env.INTERNAL_SECRET || stored.INTERNAL_SECRET || randomBytes(32).toString("base64url"),
    ADMIN_TOKEN: env.ADMIN_TOKEN || stored.ADMIN_TOKEN || `adm_${randomBytes(24).toString("base64url")}`,
  };
  if (secrets.INTERNAL_SECRET !== stored.INTERNAL_SECRET || secrets.ADMIN_TOKEN !== stored.ADMIN_TOKEN) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(secrets, null, 2) + "\n", { mode: 0o600 });
  }
  return secrets;
}
