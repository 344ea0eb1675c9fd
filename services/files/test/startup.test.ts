import path from "node:path";
import { repoRoot } from "@meter/local-infra";
import { startServiceProcess, testKeyEnv } from "@meter/testing";

const MAIN = path.resolve(__dirname, "../src/main.ts");

it("refuses to start the API in production without PUBLIC_BASE_URL, naming the setting", async () => {
  const outcome = await startServiceProcess(MAIN, repoRoot(), { ...testKeyEnv("files"), NODE_ENV: "production", PUBLIC_BASE_URL: "", FILES_PORT: "0" }).then(
    async (started) => {
      await started.stop();
      return "started";
    },
    (error: Error) => error.message,
  );
  expect(outcome).toMatch(/exited \(1\) while starting[\s\S]*PUBLIC_BASE_URL: required in production/);
}, 60_000);
