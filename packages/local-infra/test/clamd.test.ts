import { Readable } from "node:stream";
import { rm } from "node:fs/promises";
import NodeClam from "clamscan";
import { ensureClamd, pingClamd, stopClamd, type ClamdHandle } from "../src";
import { freePort } from "../src/port";
import { EICAR, EICAR_MD5, md5, png, tempDir } from "./fixtures";

// First run on a fresh machine installs clamav-daemon with apt-get (about 10 s here).
const INSTALL_TIMEOUT_MS = 10 * 60_000;

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
    clamd = await ensureClamd({ port: await freePort(), dataDir });
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
      const clamd = await ensureClamd({ port: await freePort(), dataDir });
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
      const clamd = await ensureClamd({ port: await freePort(), dataDir });
      expect(await stopClamd(clamd.host, clamd.port)).toBe(true);
      expect(await pingClamd(clamd.host, clamd.port)).toBe(false);
      expect(await stopClamd(clamd.host, clamd.port)).toBe(false);
      await clamd.stop();
    },
    INSTALL_TIMEOUT_MS,
  );
});
