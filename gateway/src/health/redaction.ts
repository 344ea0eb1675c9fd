/** A URL as the health page shows it: scheme, host, port and path, never a user or password in it. */
export function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return u.href.replace(/\/$/, "");
  } catch {
    return "(not a URL)";
  }
}

/** An error text with any `scheme://user:password@` in it masked: a driver may quote the URL it was given. */
export function redactCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1***@");
}

/** What went wrong, in one line for the operator: a timeout by its limit, a refused connection by its cause. */
export function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: unknown; message?: unknown; cause?: { message?: unknown; code?: unknown } } | undefined;
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `no answer within ${timeoutMs} ms`;
  // fetch() says only "fetch failed"; the reason (ECONNREFUSED 127.0.0.1:8081, say) is its cause.
  const cause = typeof e?.cause?.message === "string" && e.cause.message !== "" ? e.cause.message : undefined;
  const message = typeof e?.message === "string" && e.message !== "" ? e.message : String(err);
  return redactCredentials(cause ?? message);
}
