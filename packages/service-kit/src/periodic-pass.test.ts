import { createLogger } from "./logger";
import { PeriodicPass } from "./periodic-pass";

const logger = createLogger("periodic-pass-test", "silent");

describe("PeriodicPass", () => {
  it("never runs two passes at once: a tick during a slow pass does nothing", async () => {
    let release!: () => void;
    let passes = 0;
    const pass = new PeriodicPass(
      async () => {
        passes++;
        await new Promise<void>((r) => (release = r));
        return 7;
      },
      { name: "test pass", intervalMs: 60_000, logger },
    );
    const first = pass.runOnce();
    expect(await pass.runOnce()).toBe(0);
    release();
    expect(await first).toBe(7);
    expect(passes).toBe(1);
  });

  it("logs a failed pass and answers 0; the next pass runs", async () => {
    const errors: string[] = [];
    const failing = { ...logger, error: (_o: unknown, msg: string) => errors.push(msg) } as unknown as typeof logger;
    let calls = 0;
    const pass = new PeriodicPass(
      async () => {
        if (++calls === 1) throw new Error("database gone");
        return 1;
      },
      { name: "test pass", intervalMs: 60_000, logger: failing },
    );
    expect(await pass.runOnce()).toBe(0);
    expect(errors).toEqual(["test pass failed; trying again at the next tick"]);
    expect(await pass.runOnce()).toBe(1);
  });

  it("runs its upkeep on the first pass and then at most once per period", async () => {
    let upkeeps = 0;
    const pass = new PeriodicPass(async () => 0, {
      name: "test pass",
      intervalMs: 60_000,
      logger,
      upkeep: { everyMs: 3_600_000, run: async () => void upkeeps++ },
    });
    await pass.runOnce();
    await pass.runOnce();
    expect(upkeeps).toBe(1);
  });
});
