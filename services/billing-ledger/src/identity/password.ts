import { hash, verify, type Algorithm, type Options } from "@node-rs/argon2";

/**
 * argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): about 0.1 s of one core
 * per hash here, paid once per sign-in. The parameters travel inside each PHC string, so raising them
 * later leaves existing hashes verifiable.
 */
const ARGON2ID: Options = { algorithm: 2 as Algorithm, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2ID);
}

/**
 * Verified against a hash made once, on first need, when the user has none (unknown email, or invited but not yet
 * set up): every failed sign-in then costs the same time, so timing does not tell who has an account.
 */
let decoy: Promise<string> | undefined;

export async function passwordMatches(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    decoy ??= hashPassword("decoy password that no account has");
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    // An unreadable stored hash matches nothing; it must not turn into a 500 that tells it apart.
    return false;
  }
}
