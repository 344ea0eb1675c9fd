import { Deployable, DEPLOYABLES } from "@meter/contracts";
import { generateInternalKeyPair, generateInternalKeySet } from "@meter/service-kit";

/**
 * `pnpm internal-keys`: a new key set for every deployable, as environment lines: one
 * INTERNAL_SIGNING_KEY per deployable (a secret: give each only its own) and the shared
 * INTERNAL_PUBLIC_KEYS. `pnpm internal-keys <deployable>`: one new pair, for a rotation (add its
 * public key to the shared list, roll everything, switch that deployable's signing key, roll it,
 * then drop the old public key).
 */
const which = process.argv[2];
if (which === undefined) {
  const set = generateInternalKeySet();
  for (const d of DEPLOYABLES) console.log(`# ${d}\nINTERNAL_SIGNING_KEY=${set.signingKeys[d]}`);
  console.log(`# every deployable\nINTERNAL_PUBLIC_KEYS=${set.publicKeys}`);
} else {
  const parsed = Deployable.safeParse(which);
  if (!parsed.success) {
    console.error(`not a deployable: ${which} (one of ${DEPLOYABLES.join(", ")})`);
    process.exit(2);
  }
  const pair = generateInternalKeyPair(parsed.data);
  console.log(`# ${parsed.data}'s new signing key (secret)\nINTERNAL_SIGNING_KEY=${pair.signingKey}`);
  console.log(`# add to INTERNAL_PUBLIC_KEYS (comma-separated) before switching\n${pair.publicKey}`);
}
