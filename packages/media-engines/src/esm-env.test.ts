/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { importEsm } from "./esm";

test("ES-module-only packages load in the native-ESM test environment", async () => {
  const { eld } = await importEsm<typeof import("eld")>("eld/medium");
  expect(eld.detect("Привет, как дела у тебя сегодня?").language).toBe("ru");
});
