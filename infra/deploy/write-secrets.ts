import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DEPLOYABLES, type Deployable } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";
import { generateInternalKeySet } from "@meter/service-kit";

/**
 * `pnpm k8s:secrets <dev|prod|prod-ha>`: writes k8s/overlays/<overlay>/secrets/ (never committed) from its
 * secrets.example/: a fresh Ed25519 signing key for each deployable and their public keys, billing-ledger's
 * grant key, and a random
 * value for every `change-me-…` placeholder, the same placeholder getting the same value in every file
 * (so the test PostgreSQL's role passwords are the ones in the services' URLs). Refuses to overwrite.
 * In prod, then replace the example hosts (postgres.example.internal, …) with the platform's, and give
 * the printed role passwords to service-database.sql (docs/deploy.md).
 */
/**
 * Fills `target` from the example files of `overlayDir`/secrets.example: the same placeholder, the same
 * random value in every file. Returns the names of the files written.
 */
export function writeOverlaySecrets(overlayDir: string, target: string): string[] {
  const keys = generateInternalKeySet();
  const values = new Map<string, string>();
  // Hex: valid inside URLs and long enough for every minimum of the configs.
  const valueOf = (placeholder: string) => values.get(placeholder) ?? values.set(placeholder, randomBytes(24).toString("hex")).get(placeholder)!;
  mkdirSync(target, { recursive: true, mode: 0o700 });
  const files = readdirSync(path.join(overlayDir, "secrets.example"));
  for (const file of files) {
    const deployable = path.basename(file, ".env");
    const signingKey = DEPLOYABLES.includes(deployable as Deployable) ? keys.signingKeys[deployable as Deployable] : undefined;
    const text = readFileSync(path.join(overlayDir, "secrets.example", file), "utf8")
      .replace(/^INTERNAL_SIGNING_KEY=.*$/m, (line) => (signingKey ? `INTERNAL_SIGNING_KEY=${signingKey}` : line))
      .replace(/^INTERNAL_PUBLIC_KEYS=.*$/m, `INTERNAL_PUBLIC_KEYS=${keys.publicKeys}`)
      .replace(/^GRANT_SIGNING_KEY=.*$/m, `GRANT_SIGNING_KEY=${keys.grantSigningKey}`)
      .replace(/^GRANT_PUBLIC_KEYS=.*$/m, `GRANT_PUBLIC_KEYS=${keys.grantPublicKeys}`)
      .replace(/change-me-[a-z0-9-]+/g, valueOf);
    writeFileSync(path.join(target, file), text, { mode: 0o600 });
  }
  return files;
}

function main(overlay: string | undefined): number {
  if (overlay !== "dev" && overlay !== "prod" && overlay !== "prod-ha") {
    console.error("usage: pnpm k8s:secrets <dev|prod|prod-ha>");
    return 2;
  }
  const dir = path.join(repoRoot(), "k8s", "overlays", overlay);
  const target = path.join(dir, "secrets");
  if (existsSync(target) && readdirSync(target).length > 0) {
    console.error(`${path.relative(process.cwd(), target)} is not empty: move it away first (it holds this environment's secrets)`);
    return 1;
  }
  const written = writeOverlaySecrets(dir, target);
  console.log(`wrote ${path.relative(process.cwd(), target)}/ (${written.length} files)`);
  if (overlay === "prod") {
    console.log("\nNow: replace the example hosts in those files with your PostgreSQL, RabbitMQ and object store, and create");
    console.log("each service's database and roles with k8s/dev-dependencies/postgres/service-database.sql, using the");
    console.log("passwords in the *_DATABASE_URL (app role) and *_MIGRATION_DATABASE_URL (owner role) lines.");
  }
  if (overlay === "prod-ha") {
    console.log("\nThe databases' roles and the broker's users take the same passwords (<service>-db-*.env, <deployable>-broker.env).");
    console.log("Now: put your object store's URL in files-config and files-worker-config (kustomization.yaml), its backup");
    console.log("user in postgres-backups.env, and your Redis's address in gateway-config and network-policy.yaml.");
  }
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv[2]);
