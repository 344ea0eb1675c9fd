import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { assignPorts } from "@meter/local-infra";
import { sleep } from "./figures";

/**
 * The `portkey` target of `pnpm bench:text`: Portkey's AI gateway (`@portkey-ai/gateway`, the npm
 * package, a bench dependency) in its own process, used as a plain proxy: no keys, no money, no cache.
 * Each request names the provider (`x-portkey-provider: openai`) and the fake upstream as its custom
 * host, so Portkey forwards the OpenAI chat call to the same fake upstream the other targets use.
 */

/** The headers every request to the Portkey target carries. */
export function portkeyHeaders(openaiBaseUrl: string): Record<string, string> {
  return {
    "content-type": "application/json",
    authorization: "Bearer bench",
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": openaiBaseUrl,
  };
}

export const portkeyBody = JSON.stringify({ model: "gpt-fake", max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });

/** Starts Portkey's gateway on an assigned port and waits until it answers; `nodeArgs` (--cpu-prof) go to its node. */
export async function startPortkey(nodeArgs: string[]): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const fromBench = createRequire(path.join(__dirname, "..", "package.json"));
  const pkg = fromBench.resolve("@portkey-ai/gateway/package.json");
  const entry = path.join(path.dirname(pkg), "build", "start-server.js");
  // A port below the ephemeral range (docs/architecture.md, "Tests", Ports): only an explicit bind takes it.
  const [port] = await assignPorts(1);
  const child = spawn(process.execPath, [...nodeArgs, entry, `--port=${port}`, "--headless"], {
    // production: no web UI and no log stream; its banner goes nowhere.
    env: { ...process.env, NODE_ENV: "production" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Portkey's gateway exited (${child.exitCode}) before it was ready`);
    const ok = await fetch(`${url}/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (performance.now() - started > 60_000) {
      child.kill("SIGTERM");
      throw new Error("Portkey's gateway did not answer within 60 s");
    }
    await sleep(200);
  }
  return { child, url, pid: child.pid! };
}
