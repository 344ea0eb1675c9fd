import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "@meter/local-infra";

/**
 * The boundary rule of eslint.config.mjs, tried on real files with an import added (eslint run as
 * `npm test` runs it, the file's text on stdin): a service reaching into another service's code (its
 * src or its tests, by path or by package) is an error, and so is a shared package or a benchmark
 * importing a service; an import of a shared package is not.
 */
const run = promisify(execFile);

async function boundaryErrors(file: string, importLine: string): Promise<string[]> {
  const eslint = path.join(repoRoot(), "node_modules", ".bin", "eslint");
  const args = ["--stdin", "--stdin-filename", path.join(repoRoot(), file), "--format", "json"];
  const linting = run(eslint, args, { cwd: repoRoot(), maxBuffer: 16 * 1024 * 1024 });
  linting.child.stdin!.end(`${importLine}\nexport const touched = imported;\n`);
  // eslint exits 1 when it found errors: its report is on stdout either way.
  const { stdout } = await linting.catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? "" }));
  const [result] = JSON.parse(stdout) as { messages: { ruleId: string | null; message: string }[] }[];
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

const CASES: [file: string, importLine: string, refusal: string | undefined][] = [
  [
    "services/text/src/services/pricing.ts",
    'import { imported } from "../../../media-jobs/src/services/job-pricing";',
    "text may not import media-jobs's code",
  ],
  [
    "services/files/test/support/files-harness.ts",
    'import { imported } from "../../../billing-ledger/test/support/harness";',
    "files may not import billing-ledger's code",
  ],
  ["gateway/src/routes.ts", 'import { imported } from "@meter/text";', "gateway may not import text's code"],
  ["packages/service-kit/src/batcher.ts", 'import { imported } from "../../../services/files/src/db";', "packages/ hold what services share"],
  ["bench/media/engines.ts", 'import { imported } from "../../services/media-jobs/test/support/slow-job";', "bench/ imports packages, never a service's code"],
  ["services/text/src/services/pricing.ts", 'import { imported } from "@meter/service-kit";', undefined],
];

// Each case is a type-aware eslint process loading the whole project: minutes on a busy machine.
it("refuses every import across a service boundary, and none of a shared package", async () => {
  const found = await Promise.all(CASES.map(([file, line]) => boundaryErrors(file, line)));
  CASES.forEach(([file, line, refusal], i) => {
    if (refusal) expect({ file, line, errors: found[i]!.join("\n") }).toEqual({ file, line, errors: expect.stringContaining(refusal) });
    else expect({ file, line, errors: found[i] }).toEqual({ file, line, errors: [] });
  });
}, 240_000);
