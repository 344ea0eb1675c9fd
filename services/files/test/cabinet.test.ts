import { randomUUID } from "node:crypto";
import type { Identity, KeyIdentity } from "@meter/contracts";
import { png, startFiles, type FilesHarness } from "./support/files-harness";

/** The web cabinet's door (`/cabinet/v1/files`, a member's session signed by the gateway): list, download, delete. */
let h: FilesHarness;

beforeAll(async () => {
  // A verification waited for at length: a loaded machine scans slower than the default 3 s window.
  h = await startFiles({ policy: { completeWaitMs: 15_000 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

/** The member's session, in any organization: files are the user's, not the organization's. */
const sessionOf = (owner: KeyIdentity): Identity => ({
  kind: "session",
  role: "member",
  session_id: randomUUID(),
  user_id: owner.user_id,
  organization_id: randomUUID(),
});

describe("a member's files in the cabinet", () => {
  it("downloads a verified file as an attachment and deletes it; another member's file is 404", async () => {
    const owner = h.user();
    const content = png();
    const file = await h.uploaded(owner, content, "image/png", { filename: "scan.png" });
    expect((await h.complete(owner, file.id)).body.status).toBe("verified");

    const download = await h.call("GET", `/cabinet/v1/files/${file.id}/content`, sessionOf(owner)).buffer(true).expect(200);
    expect(download.headers["content-type"]).toBe("image/png");
    expect(download.headers["content-disposition"]).toMatch(/^attachment; filename="scan.png"/);
    expect(Buffer.compare(download.body as Buffer, content)).toBe(0);

    const stranger = sessionOf(h.user());
    expect((await h.call("GET", `/cabinet/v1/files/${file.id}/content`, stranger)).status).toBe(404);
    expect((await h.call("DELETE", `/cabinet/v1/files/${file.id}`, stranger)).status).toBe(404);
    expect((await h.call("GET", `/cabinet/v1/files/${file.id}/content`, { kind: "session", role: "operator", session_id: randomUUID() })).status).toBe(403);

    const deleted = await h.call("DELETE", `/cabinet/v1/files/${file.id}`, sessionOf(owner)).expect(200);
    expect(deleted.body).toEqual({ id: file.id, object: "file", deleted: true });
    expect((await h.call("GET", `/cabinet/v1/files/${file.id}/content`, sessionOf(owner))).status).toBe(404);
    expect((await h.call("GET", "/cabinet/v1/files", sessionOf(owner)).expect(200)).body.data).toEqual([]);
  });

  it("refuses a key where a session belongs", async () => {
    const owner = h.user();
    expect((await h.call("DELETE", `/cabinet/v1/files/${randomUUID()}`, owner)).status).toBe(403);
  });
});
