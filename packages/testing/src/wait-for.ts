/**
 * Polls `check` until it returns something truthy and returns that (no fixed sleeps in tests): a
 * settlement reaches billing a moment after its 200, a page shows what it loaded a moment later. A
 * check that throws counts as not yet. Fails naming `what` after `ms`.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false>, what: string, ms = 20_000, pollMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
