/**
 * The one rule for a JSON request body's Content-Type, the same at the gateway and in every service
 * (docs/api.md): `application/json` or `*+json`, in UTF-8 (RFC 8259). A body declared in another
 * charset (utf-16, utf-7) would be decoded differently by whoever honoured it, so the checks made on
 * it at one end would not hold at the other. Returns why the type is refused, or undefined.
 */
export function jsonContentTypeProblem(contentType: string | undefined): string | undefined {
  const [mediaType = "", ...params] = (contentType ?? "").split(";");
  const type = mediaType.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) return "the request body must be JSON (Content-Type: application/json)";
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
    if (charset !== "utf-8") return `a JSON body must be UTF-8; charset=${charset} is not accepted`;
  }
  return undefined;
}
