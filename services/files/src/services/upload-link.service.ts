import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { Sha256Hex, UploadMimeType, UploadSha256Header, type UploadInstructions } from "@meter/contracts";
import { FilesErrors } from "../errors";

/** What an upload link allows: these exact bytes into this file, until `expiresAt`. */
export interface UploadGrant {
  fileId: string;
  sizeBytes: number;
  mimeType: UploadMimeType;
  sha256: string;
  expiresAt: Date;
}

/** The signed part of a token, kept short because it travels in a URL. */
const Claims = z.strictObject({
  f: z.uuid(),
  s: z.number().int().positive(),
  m: UploadMimeType,
  h: Sha256Hex,
  e: z.number().int().positive(),
});

const TOKEN = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

/**
 * Upload links are the service's own: `/v1/uploads/<claims>.<mac>`, the claims base64url JSON and the MAC
 * HMAC-SHA256 over them with the upload secret. No database lookup is needed to refuse a forged or
 * expired link, and the object store never sees a client: it is not the security boundary.
 */
export class UploadLinkService {
  constructor(private readonly secret: string) {}

  private token(grant: UploadGrant): string {
    const claims = Buffer.from(
      JSON.stringify({ f: grant.fileId, s: grant.sizeBytes, m: grant.mimeType, h: grant.sha256, e: grant.expiresAt.getTime() }),
    ).toString("base64url");
    return `${claims}.${this.mac(claims)}`;
  }

  /** The instructions a client follows: PUT to `<base>/v1/uploads/<token>` with exactly these headers. */
  instructions(grant: UploadGrant, publicBaseUrl: string): UploadInstructions {
    return {
      url: `${publicBaseUrl.replace(/\/+$/, "")}/v1/uploads/${this.token(grant)}`,
      method: "PUT",
      headers: uploadHeaders(grant),
      expires_at: grant.expiresAt.toISOString(),
    };
  }

  /** The grant a token carries; a forged or altered token is invalid, an old one expired (in that order). */
  verify(token: string, now: Date): UploadGrant {
    const match = TOKEN.exec(token);
    if (!match) throw FilesErrors.invalidUploadLink();
    const [, claims = "", mac = ""] = match;
    const expected = Buffer.from(this.mac(claims));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw FilesErrors.invalidUploadLink();
    let parsed: z.infer<typeof Claims>;
    try {
      parsed = Claims.parse(JSON.parse(Buffer.from(claims, "base64url").toString("utf8")));
    } catch {
      // Signed by us but unreadable: only a change of format does that.
      throw FilesErrors.invalidUploadLink();
    }
    if (parsed.e <= now.getTime()) throw FilesErrors.uploadLinkExpired();
    return { fileId: parsed.f, sizeBytes: parsed.s, mimeType: parsed.m, sha256: parsed.h, expiresAt: new Date(parsed.e) };
  }

  private mac(claims: string): string {
    return createHmac("sha256", this.secret).update(`upload.v1.${claims}`).digest("base64url");
  }
}

/** The headers a PUT must carry, and the only values accepted for them. */
export function uploadHeaders(grant: Pick<UploadGrant, "mimeType" | "sizeBytes" | "sha256">): Record<string, string> {
  return {
    "content-type": grant.mimeType,
    "content-length": String(grant.sizeBytes),
    [UploadSha256Header]: grant.sha256,
  };
}
