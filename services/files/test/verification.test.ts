import type { FileRecord, KeyIdentity } from "@meter/contracts";
import { eicar, pdf, png, startFiles, zeroPng, type FilesHarness } from "./support/files-harness";

/** POST /v1/files/{id}/complete and the worker behind it: every verdict, and what happens while clamd is down. */
let h: FilesHarness;

beforeAll(async () => {
  h = await startFiles({ policy: { completeWaitMs: 4_000 } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function verdict(content: Buffer, mimeType: string): Promise<{ status: number; body: FileRecord; owner: KeyIdentity }> {
  const owner = h.user();
  const file = await h.uploaded(owner, content, mimeType);
  return { ...(await h.complete(owner, file.id)), owner };
}

async function objectOf(id: string): Promise<{ size: number } | undefined> {
  const row = await h.repository.find(id);
  return h.objects.stat(row!.objectKey);
}

describe("verdicts", () => {
  it.each([
    ["a PNG", png(), "image/png"],
    // Filler without 0xFF: random bytes could hold a frame header of any size, which the pixel limit reads.
    [
      "a JPEG",
      Buffer.concat([Buffer.from("ffd8ffe000104a46494600010100000100010000", "hex"), Buffer.alloc(200, 0x5a), Buffer.from("ffd9", "hex")]),
      "image/jpeg",
    ],
    ["a WebP", webp(), "image/webp"],
    ["a PDF", pdf(), "application/pdf"],
    // The OCR model lists TIFF and GIF among its accepted types, so uploads take them too (an IFD with no
    // entries: fixed bytes, since random ones could declare an image over the pixel limit).
    ["a TIFF", Buffer.concat([Buffer.from("49492a0008000000", "hex"), Buffer.alloc(200, 0)]), "image/tiff"],
    ["a GIF", Buffer.from("47494638396101000100800000000000ffffff2c00000000010001000002024401003b", "hex"), "image/gif"],
  ])("verifies %s (200 with the final record)", async (_what, content, mimeType) => {
    const { status, body } = await verdict(content, mimeType);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: "verified", mime_type: mimeType, size_bytes: content.length });
    expect(body.rejection).toBeUndefined();
  });

  it("is idempotent: completing again returns the same record", async () => {
    const owner = h.user();
    const file = await h.uploaded(owner, png(), "image/png");
    const first = await h.complete(owner, file.id);
    const second = await h.complete(owner, file.id);
    expect(second).toEqual(first);
    expect(second.body.status).toBe("verified");
  });

  it("rejects EICAR inside an otherwise valid PNG (malware_detected) and deletes the object", async () => {
    const { status, body } = await verdict(png(eicar()), "image/png");
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: "rejected", rejection: { code: "malware_detected" } });
    expect(await objectOf(body.id)).toBeUndefined();
    const row = await h.db.file.findUnique({ where: { id: body.id } });
    expect(row?.rejectionDetail).toMatch(/EICAR/);
  });

  it("rejects a 389 KB PNG of 20000x20000 pixels (image_too_large) from its header, without sending it to clamd", async () => {
    const image = await zeroPng(20_000, 20_000);
    expect(image.length).toBeLessThan(400_000);
    // With clamd down, a file that went to the scanner would stay verifying: a verdict proves it did not.
    await h.clamd.stop();
    try {
      const { status, body, owner } = await verdict(image, "image/png");
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: "rejected", rejection: { code: "image_too_large" } });
      expect(await objectOf(body.id)).toBeUndefined();
      const row = await h.db.file.findUnique({ where: { id: body.id } });
      expect(row?.rejectionDetail).toBe("20000x20000 is 400000000 pixels, over 100000000");
      expect((await h.call("GET", `/v1/files/${body.id}/content`, owner)).status).toBe(409);
    } finally {
      await h.clamd.start();
    }
  }, 60_000);

  it("rejects a PDF declared as PNG (mime_mismatch)", async () => {
    const { body } = await verdict(pdf(), "image/png");
    expect(body).toMatchObject({ status: "rejected", rejection: { code: "mime_mismatch" } });
  });

  it("rejects content of no known type (mime_mismatch)", async () => {
    const { body } = await verdict(Buffer.from("just some text, not an image"), "image/webp");
    expect(body).toMatchObject({ status: "rejected", rejection: { code: "mime_mismatch" } });
  });

  it("rejects a completion without an upload (upload_missing)", async () => {
    const owner = h.user();
    const file = await h.create(owner, { filename: "x.png", mime_type: "image/png", size_bytes: 10, sha256: "b".repeat(64) });
    const { status, body } = await h.complete(owner, file.id);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: "rejected", rejection: { code: "upload_missing" } });
    // The link is dead once the file is completed.
    expect((await h.put(file.upload!.url, file.upload!.headers, Buffer.alloc(10))).status).toBe(409);
  });

  it("rechecks the stored object: different content -> checksum_mismatch, different size -> size_mismatch", async () => {
    for (const [replacement, code] of [
      [Buffer.concat([png().subarray(0, -1), Buffer.from([0])]), "checksum_mismatch"],
      [Buffer.concat([png(), Buffer.from("tail")]), "size_mismatch"],
    ] as const) {
      const owner = h.user();
      const file = await h.uploaded(owner, png(), "image/png");
      // The store is not a security boundary: the worker trusts the bytes it reads, not the upload.
      const row = await h.repository.find(file.id);
      await h.objects.put(
        row!.objectKey,
        (async function* () {
          yield replacement;
        })(),
        replacement.length,
        "image/png",
      );
      const { body } = await h.complete(owner, file.id);
      expect(body).toMatchObject({ status: "rejected", rejection: { code } });
    }
  });

  it("never serves a rejected file (409 file_not_verified)", async () => {
    const { body, owner } = await verdict(pdf(), "image/png");
    const res = await h.call("GET", `/v1/files/${body.id}/content`, owner);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("file_not_verified");
  });
});

describe("while clamd or the worker is away", () => {
  it("stays verifying while clamd is stopped (202), and is verified once clamd is back", async () => {
    const owner = h.user();
    const file = await h.uploaded(owner, png(), "image/png");
    await h.clamd.stop();
    let restarted = false;
    try {
      h.policy.completeWaitMs = 1_500;
      const pending = await h.call("POST", `/v1/files/${file.id}/complete`, owner);
      expect(pending.status).toBe(202);
      expect(pending.body.status).toBe("verifying");
      expect(pending.headers["retry-after"]).toBeDefined();
      // Several retries later it is still not verified: no verdict without a scan.
      await sleep(2_000);
      expect((await h.call("GET", `/v1/files/${file.id}`, owner)).body.status).toBe("verifying");
      expect((await h.call("GET", `/v1/files/${file.id}/content`, owner)).status).toBe(409);

      await h.clamd.start();
      restarted = true;
      h.policy.completeWaitMs = 10_000;
      const done = await h.complete(owner, file.id);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("verified");
    } finally {
      h.policy.completeWaitMs = 4_000;
      if (!restarted) await h.clamd.start();
    }
  }, 60_000);

  it("waits in the queue while the worker is down, and is decided when it comes back", async () => {
    const owner = h.user();
    const file = await h.uploaded(owner, png(eicar()), "image/png");
    await h.stopWorker();
    try {
      h.policy.completeWaitMs = 500;
      expect((await h.complete(owner, file.id)).status).toBe(202);
    } finally {
      h.policy.completeWaitMs = 4_000;
      await h.startWorker();
    }
    const done = await h.complete(owner, file.id);
    expect(done.body).toMatchObject({ status: "rejected", rejection: { code: "malware_detected" } });
  }, 60_000);

  it("sends a file stuck verifying (its message lost) to the worker again", async () => {
    const owner = h.user();
    const file = await h.uploaded(owner, png(), "image/png");
    // As if the message had been dead-lettered: verifying, with no message on the way.
    await h.db.file.update({ where: { id: file.id }, data: { status: "verifying", verificationRequestedAt: h.clock.now() } });
    expect((await h.retention.sweep()).requeued).toBe(0);
    h.clock.advance(h.policy.verifyRequeueAfterMs + 1_000);
    try {
      expect((await h.retention.sweep()).requeued).toBe(1);
    } finally {
      h.clock.advance(-(h.policy.verifyRequeueAfterMs + 1_000));
    }
    const done = await h.complete(owner, file.id);
    expect(done.body.status).toBe("verified");
  });
});

function webp(): Buffer {
  const vp8 = Buffer.from("9d012a0100010002003425a400037000fefb94000000", "hex");
  const chunk = Buffer.concat([Buffer.from("VP8 "), le32(vp8.length), vp8]);
  return Buffer.concat([Buffer.from("RIFF"), le32(4 + chunk.length), Buffer.from("WEBP"), chunk]);
}

function le32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe("the worker's health server (for probes and scraping)", () => {
  it("answers /healthz, /readyz with its dependencies, and /metrics", async () => {
    const url = h.workerUrl();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toEqual({
      status: 200,
      body: { status: "ok", checks: { database: "ok", object_store: "ok", rabbitmq: "ok", scanner: expect.stringMatching(/^test signatures only/) } },
    });
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('service="files-worker"');
  });

  it("stays ready while clamd is down: waiting for the scanner is its job, not a fault to restart", async () => {
    await h.clamd.stop();
    try {
      expect((await fetch(`${h.workerUrl()}/readyz`)).status).toBe(200);
    } finally {
      await h.clamd.start();
    }
  }, 60_000);
});

describe("the scanner in the API's readiness (what the operator's health report shows)", () => {
  const scanner = async () => {
    const res = await fetch(`${h.url}/readyz`);
    return { status: res.status, scanner: ((await res.json()) as { checks: Record<string, string> }).checks.scanner };
  };

  it("says the local clamd has only the test signatures", async () => {
    expect(await scanner()).toEqual({
      status: 200,
      scanner: expect.stringMatching(
        /^test signatures only \(ClamAV \d+\.\d+\.\d+, no official database\): uploads are checked for the EICAR test string alone$/,
      ),
    });
  });

  it("says it is not ready to verify while clamd is away, and stays ready itself", async () => {
    await h.clamd.stop();
    try {
      expect(await scanner()).toEqual({ status: 200, scanner: expect.stringMatching(/^not ready to verify: clamd at 127\.0\.0\.1:\d+: .*ECONNREFUSED/) });
    } finally {
      await h.clamd.start();
    }
    expect((await scanner()).scanner).toMatch(/^test signatures only/);
  }, 60_000);
});
