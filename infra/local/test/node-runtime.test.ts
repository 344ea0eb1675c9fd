import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const root = path.join(__dirname, "..", "..", "..");
const runtimeModule = pathToFileURL(path.join(__dirname, "..", "node-runtime.mjs")).href;

/** Runs an ES-module snippet with node-runtime.mjs imported as `m` (plain Node, like bootstrap.mjs) and parses what it prints. */
function evaluate(body: string): unknown {
  const script = `import * as m from ${JSON.stringify(runtimeModule)};\n${body}`;
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
}

const chooseNode = (args: { machine: string; pinned: string; installed?: string }) =>
  evaluate(`console.log(JSON.stringify(m.chooseNode(${JSON.stringify(args)})));`);

let dir: string;
beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), "meter-node-runtime-"))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in for a node binary: a shell script that prints `output` and exits with `code`. */
function fakeNode(file: string, output: string, code = 0): string {
  writeFileSync(file, `#!/bin/sh\necho '${output}'\nexit ${code}\n`, { mode: 0o755 });
  return file;
}

describe("which Node runs the workspace", () => {
  it("package.json pins an exact Node 24 for the two commands, and engines asks for 24 or newer", () => {
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { nodeRuntime: string; engines: { node: string } };
    expect(pkg.nodeRuntime).toMatch(/^24\.\d+\.\d+$/);
    expect(pkg.engines.node).toBe(">=24");
  });

  it("on a machine with an older Node, the pinned one from .tools/node, installed only when it is not there already", () => {
    expect(chooseNode({ machine: "20.20.2", pinned: "24.21.0" })).toEqual({ use: "tools", install: true });
    expect(chooseNode({ machine: "20.20.2", pinned: "24.21.0", installed: "24.21.0" })).toEqual({ use: "tools", install: false });
    // A .tools/node left by an older pin is replaced.
    expect(chooseNode({ machine: "22.12.0", pinned: "24.21.0", installed: "24.20.0" })).toEqual({ use: "tools", install: true });
  });

  it("on a machine whose Node is the pinned major or newer, the machine's, without installing anything", () => {
    expect(chooseNode({ machine: "24.3.0", pinned: "24.21.0" })).toEqual({ use: "machine" });
    expect(chooseNode({ machine: "26.1.0", pinned: "24.21.0" })).toEqual({ use: "machine" });
  });

  it("trusts .tools/node only when it runs and answers --version", () => {
    const version = (file: string) => evaluate(`console.log(JSON.stringify(m.nodeVersionOf(${JSON.stringify(file)}) ?? null));`);
    expect(version(fakeNode(path.join(dir, "good"), "v24.21.0"))).toBe("24.21.0");
    expect(version(fakeNode(path.join(dir, "failing"), "v24.21.0", 1))).toBeNull();
    expect(version(fakeNode(path.join(dir, "garbled"), "Segmentation fault"))).toBeNull();
    writeFileSync(path.join(dir, "truncated"), "\x7fELF\x02\x01", { mode: 0o755 });
    expect(version(path.join(dir, "truncated"))).toBeNull();
    expect(version(path.join(dir, "absent"))).toBeNull();
  });
});

describe("installing the pinned Node", () => {
  /** installNode with `npm install` replaced by a fake that unpacks a node binary printing `answers`. */
  function install(answers: string, npmFails = false): { ok: boolean; error?: string } {
    const nodeDir = path.join(dir, ".tools", "node");
    return evaluate(`
      import { mkdirSync, writeFileSync } from "node:fs";
      import path from "node:path";
      const run = (cmd, args) => {
        const staging = args[args.indexOf("--prefix") + 1];
        const bin = path.join(staging, "node_modules", m.nodePackageName(), "bin");
        mkdirSync(bin, { recursive: true });
        writeFileSync(path.join(bin, "node"), "#!/bin/sh\\necho ${answers}\\n", { mode: 0o755 });
        if (${npmFails}) throw new Error("npm install failed (exit 1)");
      };
      try {
        m.installNode({ version: "24.21.0", nodeDir: ${JSON.stringify(nodeDir)}, run });
        console.log(JSON.stringify({ ok: true }));
      } catch (e) {
        console.log(JSON.stringify({ ok: false, error: e.message }));
      }
    `) as { ok: boolean; error?: string };
  }

  it("puts a download that answers as the pinned version into .tools/node/bin/node, leaving nothing beside it", () => {
    expect(install("v24.21.0")).toEqual({ ok: true });
    expect(execFileSync(path.join(dir, ".tools", "node", "bin", "node"), ["--version"], { encoding: "utf8" }).trim()).toBe("v24.21.0");
    expect(readdirSync(path.join(dir, ".tools"))).toEqual(["node"]);
  });

  it("never leaves a download that does not answer as the pinned version in .tools/node", () => {
    expect(install("v22.0.0")).toEqual({ ok: false, error: expect.stringContaining("answers --version with 22.0.0") });
    expect(existsSync(path.join(dir, ".tools", "node"))).toBe(false);
    expect(readdirSync(path.join(dir, ".tools"))).toEqual([]);
  });

  it("leaves nothing behind when the download breaks off", () => {
    expect(install("v24.21.0", true)).toEqual({ ok: false, error: "npm install failed (exit 1)" });
    expect(readdirSync(path.join(dir, ".tools"))).toEqual([]);
  });
});
