import { Deployable, DEPLOYABLES } from "@meter/contracts";
import { generateGrantKeyPair, generateInternalKeyPair, generateInternalKeySet } from "@meter/service-kit";

/**
 * `pnpm internal-keys`: a new key set for every deployable, as environment lines: one
 * INTERNAL_SIGNING_KEY per deployable (a secret: give each only its own), the shared
 * INTERNAL_PUBLIC_KEYS, and billing-ledger's grant key (GRANT_SIGNING_KEY, its secret alone, and
 * GRANT_PUBLIC_KEYS). `pnpm internal-keys <deployable>`: one new pair, for a rotation (add its public key
 * to the shared list, roll everything, switch that deployable's signing key, roll it, then drop the old
 * public key). `pnpm internal-keys grant`: a new grant key, for its rotation (add its public key to
 * GRANT_PUBLIC_KEYS beside the old one, switch GRANT_SIGNING_KEY; drop the old public key only once no
 * owner keeps a record it signed: IDEMPOTENCY_RETENTION_HOURS later).
 */
const which = process.argv[2];
if (which === undefined) {
  const set = generateInternalKeySet();
  for (const d of DEPLOYABLES) console.log(`# ${d}\nINTERNAL_SIGNING_KEY=${set.signingKeys[d]}`);
  console.log(`# every deployable\nINTERNAL_PUBLIC_KEYS=${set.publicKeys}`);
  console.log(`# billing-ledger's grant key (secret), and its public list\nGRANT_SIGNING_KEY=${set.grantSigningKey}\nGRANT_PUBLIC_KEYS=${set.grantPublicKeys}`);
} else if (which === "grant") {
  const pair = generateGrantKeyPair();
  console.log(`# billing-ledger's new grant key (secret)\nGRANT_SIGNING_KEY=${pair.signingKey}`);
  console.log(`# add to GRANT_PUBLIC_KEYS (comma-separated) before switching; keep the old one listed\n${pair.publicKey}`);
} else {
  const parsed = Deployable.safeParse(which);
  if (!parsed.success) {
    console.error(`not a deployable: ${which} (one of ${DEPLOYABLES.join(", ")}, or grant)`);
    process.exit(2);
  }
  const pair = generateInternalKeyPair(parsed.data);
  console.log(`# ${parsed.data}'s new signing key (secret)\nINTERNAL_SIGNING_KEY=${pair.signingKey}`);
  console.log(`# add to INTERNAL_PUBLIC_KEYS (comma-separated) before switching\n${pair.publicKey}`);
}
