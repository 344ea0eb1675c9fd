import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { assignPorts, ephemeralPortRange, withAssignedPorts } from "../src/port";
import { repoRoot } from "../src/repo-paths";

/** A child that binds `port` as a service does and exits 1 with Node's error when it cannot. */
function childOn(port: number): Promise<{ stop(): void }> {
  const script = `require("node:net").createServer().listen(${port}, "127.0.0.1", () => console.log("listening")).on("error", (e) => { console.error(e.message); process.exit(1); });`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on("data", () => output.includes("listening") && resolve({ stop: () => child.kill("SIGKILL") }));
    child.once("exit", (code) => reject(new Error(`the child exited (${code}) while starting: ${output}`)));
  });
}

function occupy(port: number): Promise<Server> {
  const server = createServer();
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

describe("ports a launcher assigns (docs/architecture.md, Tests)", () => {
  it("are distinct, bindable, and outside the range the kernel hands out for outgoing connections", async () => {
    const { low, high } = ephemeralPortRange();
    const ports = await assignPorts(20);
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) expect(port < low || port > high).toBe(true);
    const servers = await Promise.all(ports.map(occupy));
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  it("start a child again on other ports when its port was taken before it bound it", async () => {
    const tried: number[] = [];
    let squatter: Server | undefined;
    const child = await withAssignedPorts(1, async ([port]) => {
      tried.push(port!);
      // Someone else binds the port between its assignment and the child's start, once.
      if (tried.length === 1) squatter = await occupy(port!);
      return childOn(port!);
    });
    child.stop();
    await new Promise((r) => squatter?.close(r));
    expect(tried).toHaveLength(2);
    expect(tried[1]).not.toBe(tried[0]);
  });

  it("give up on a failure that is not a taken port", async () => {
    let attempts = 0;
    await expect(
      withAssignedPorts(1, () => {
        attempts++;
        return Promise.reject(new Error("the child exited (1) while starting: bad setting"));
      }),
    ).rejects.toThrow(/bad setting/);
    expect(attempts).toBe(1);
  });
});

/**
 * The idiom that made CI red once: bind port 0, read the port, close, and hand it to a child to bind
 * later; meanwhile any process's outgoing connection may take it. A child binds 0 and reports its port,
 * or its launcher assigns ports with withAssignedPorts; nothing else picks "free" ports.
 */
describe("no test picks a free port for a child to bind later", () => {
  const sources = execFileSync("git", ["ls-files", "*.ts", "*.mjs", "*.js"], { cwd: repoRoot(), encoding: "utf8" })
    .split("\n")
    .filter((f) => f !== "" && !f.includes("node_modules/"));

  it("finds the sources", () => {
    expect(sources.length).toBeGreaterThan(100);
  });

  it("has no helper that binds port 0, closes, and returns the port", () => {
    const probeThenClose = /\.listen\(\s*0\b[^;]*?=>[\s\S]{0,300}?\.address\(\)[\s\S]{0,200}?\.close\(/;
    const offenders = sources.filter((f) => probeThenClose.test(readFileSync(path.join(repoRoot(), f), "utf8")));
    expect(offenders).toEqual([]);
  });

  it("has no free-port helper by name, nor a package that picks ports", () => {
    const named = /\b(freePort|getFreePort|findFreePort|getPort|pickPort)\s*\(|from ["'](get-port|portfinder|find-free-port|detect-port)["']/;
    const offenders = sources.filter((f) => named.test(readFileSync(path.join(repoRoot(), f), "utf8")));
    expect(offenders).toEqual([]);
  });
});
