import { randomUUID } from "node:crypto";
import { AppError } from "@meter/service-kit";
import { UploadLinkService, type UploadGrant } from "./upload-link.service";

const grant = (): UploadGrant => ({
  fileId: randomUUID(),
  sizeBytes: 1234,
  mimeType: "image/webp",
  sha256: "f".repeat(64),
  expiresAt: new Date("2030-01-01T00:00:00.000Z"),
});

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
const codeOf = (fn: () => unknown): string => {
  try {
    fn();
    return "ok";
  } catch (e) {
    return e instanceof AppError ? e.code : String(e);
  }
};

describe("UploadLinkService", () => {
  const links = new UploadLinkService("a-secret-of-at-least-32-characters!!");

  it("issues a link that carries its grant back", () => {
    const g = grant();
    const upload = links.instructions(g, "https://api.example.test/");
    expect(upload.url.startsWith("https://api.example.test/v1/uploads/")).toBe(true);
    expect(upload.headers).toEqual({ "content-type": "image/webp", "content-length": "1234", "x-content-sha256": "f".repeat(64) });
    expect(links.verify(tokenOf(upload.url), new Date("2029-12-31T23:59:59.999Z"))).toEqual(g);
  });

  it("refuses a link signed with another secret, or altered, before looking at its expiry", () => {
    const token = tokenOf(links.instructions(grant(), "http://x").url);
    const other = new UploadLinkService("another-secret-of-at-least-32-chars!!");
    const past = new Date("2031-01-01T00:00:00.000Z");
    expect(codeOf(() => other.verify(token, past))).toBe("invalid_upload_link");
    expect(codeOf(() => links.verify(`${token}x`, past))).toBe("invalid_upload_link");
    expect(codeOf(() => links.verify(`e30.${token.split(".")[1]}`, past))).toBe("invalid_upload_link");
    expect(codeOf(() => links.verify(token, past))).toBe("upload_link_expired");
    expect(codeOf(() => links.verify(token, new Date("2030-01-01T00:00:00.000Z")))).toBe("upload_link_expired");
  });
});
