import { Readable } from "node:stream";
import { readFile, rm } from "node:fs/promises";
import NodeClam from "clamscan";
import { ensureClamd, pingClamd, stopClamd, type ClamdHandle } from "../src";
import { EICAR, EICAR_MD5, md5, png, tempDir, zeroPng } from "./fixtures";

// First run on a fresh machine installs clamav-daemon with apt-get (about 10 s here).
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const MB = 1024 * 1024;

/** A process's resident memory now and its high-water mark, in bytes (/proc/<pid>/status). */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

function scanner(host: string, port: number): Promise<NodeClam> {
  return new NodeClam().init({
    preference: "clamdscan",
    clamdscan: { host, port, localFallback: false, timeout: 10_000 },
  });
}

describe("local clamd with the project's signatures", () => {
  let clamd: ClamdHandle;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await tempDir("clamd");
    clamd = await ensureClamd({ port: 0, dataDir });
  }, INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await clamd?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("is started by us and answers PING", async () => {
    expect(clamd.startedByUs).toBe(true);
    expect(await pingClamd(clamd.host, clamd.port)).toBe(true);
  });

  it("flags the EICAR string appended to a valid PNG, by its body signature", async () => {
    expect(md5(EICAR)).toBe(EICAR_MD5);
    const clam = await scanner(clamd.host, clamd.port);
    const result = await clam.scanStream(Readable.from([png(), EICAR]));
    expect(result.isInfected).toBe(true);
    expect(result.viruses).toEqual(["Meter.Test.EICAR-Body.UNOFFICIAL"]);
  });

  it("flags the bare EICAR file", async () => {
    const clam = await scanner(clamd.host, clamd.port);
    const result = await clam.scanStream(Readable.from([EICAR]));
    expect(result.isInfected).toBe(true);
    expect(result.viruses[0]).toMatch(/^Meter\.Test\.EICAR-(File|Body)\.UNOFFICIAL$/);
  });

  it("passes a clean PNG", async () => {
    const clam = await scanner(clamd.host, clamd.port);
    const result = await clam.scanStream(Readable.from([png(64, 48)]));
    expect(result.isInfected).toBe(false);
    expect(result.viruses).toEqual([]);
  });

  it("scans a 389 KB PNG of 20000x20000 pixels without decoding it: clamd stays under 300 MB", async () => {
    const image = await zeroPng(20_000, 20_000);
    expect(image.length).toBeLessThan(400_000);
    const pid = clamd.pid!;
    const before = await memoryOf(pid);
    let sampled = before.rss;
    let over: (error: Error) => void = () => {};
    const overLimit = new Promise<never>((_, reject) => (over = reject));
    // Sampled while clamd scans; past the limit the test fails at once instead of waiting for the decode.
    const sampler = setInterval(() => {
      void memoryOf(pid)
        .then(({ rss }) => {
          sampled = Math.max(sampled, rss);
          if (rss > 300 * MB) over(new Error(`clamd's RSS reached ${Math.round(rss / MB)} MB during the scan`));
        })
        .catch(() => undefined);
    }, 10);
    const started = Date.now();
    try {
      const clam = await scanner(clamd.host, clamd.port);
      const result = await Promise.race([clam.scanStream(Readable.from([image])), overLimit]);
      expect(result.isInfected).toBe(false);
    } finally {
      clearInterval(sampler);
    }
    const after = await memoryOf(pid);
    console.log(
      `clamd RSS before ${Math.round(before.rss / MB)} MB, sampled peak ${Math.round(sampled / MB)} MB, ` +
        `high-water mark ${Math.round(after.peak / MB)} MB, scan ${Date.now() - started} ms`,
    );
    expect(sampled).toBeLessThan(300 * MB);
    expect(after.peak).toBeLessThan(300 * MB);
  }, 60_000);

  it("reuses a clamd that already answers, and leaves it running on stop()", async () => {
    const again = await ensureClamd({ host: clamd.host, port: clamd.port, dataDir });
    expect(again.startedByUs).toBe(false);
    await again.stop();
    expect(await pingClamd(clamd.host, clamd.port)).toBe(true);
  });
});

describe("clamd that is down", () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await tempDir("clamd-down");
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    "makes clamscan init and scans reject (ECONNREFUSED), which means 'not scanned', never 'clean'",
    async () => {
      const clamd = await ensureClamd({ port: 0, dataDir });
      const clam = await scanner(clamd.host, clamd.port);
      await clamd.stop();

      expect(await pingClamd(clamd.host, clamd.port)).toBe(false);
      await expect(scanner(clamd.host, clamd.port)).rejects.toThrow(/ECONNREFUSED/);
      await expect(clam.scanStream(Readable.from([png()]))).rejects.toThrow();
    },
    INSTALL_TIMEOUT_MS,
  );

  it(
    "stopClamd shuts down a clamd it did not start",
    async () => {
      const clamd = await ensureClamd({ port: 0, dataDir });
      expect(await stopClamd(clamd.host, clamd.port)).toBe(true);
      expect(await pingClamd(clamd.host, clamd.port)).toBe(false);
      expect(await stopClamd(clamd.host, clamd.port)).toBe(false);
      await clamd.stop();
    },
    INSTALL_TIMEOUT_MS,
  );
});
