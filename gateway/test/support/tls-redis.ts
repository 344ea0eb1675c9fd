import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { withAssignedPorts } from "@meter/testing";

export interface TlsRedis {
  /** `rediss://:<password>@127.0.0.1:<port>` */
  url: string;
  /** The self-signed certificate, which is also its CA (REDIS_TLS_CA_FILE). */
  caFile: string;
  stop(): Promise<void>;
}

/**
 * A Redis of the test's own that speaks TLS only and asks for a password, as a platform's does: the
 * machine's redis-server with a certificate made here by openssl, on an assigned port (redis-server
 * cannot take any port and say which), nothing kept on disk.
 */
export async function startTlsRedis(password: string): Promise<TlsRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), "meter-tls-redis-"));
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  try {
    return await withAssignedPorts(1, async ([port]) => {
      const args = ["--port", "0", "--tls-port", String(port), "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert];
      args.push("--tls-auth-clients", "no", "--requirepass", password, "--save", "", "--appendonly", "no", "--dir", dir, "--bind", "127.0.0.1");
      const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      await new Promise<void>((resolve, reject) => {
        const onData = (d: Buffer) => {
          output += d.toString();
          if (output.includes("Ready to accept connections")) resolve();
        };
        child.stdout.on("data", onData);
        child.stderr.on("data", onData);
        child.once("exit", (code) => reject(new Error(`redis-server exited (${code}) while starting: ${output}`)));
      });
      return {
        url: `rediss://:${password}@127.0.0.1:${port}`,
        caFile: cert,
        async stop() {
          const exited = new Promise((r) => child.once("exit", r));
          child.kill("SIGKILL");
          await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
