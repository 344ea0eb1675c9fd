import { createLogger } from "@meter/service-kit";
import { OwnerReconciler } from "./owner-reconciler";

const logger = createLogger("hold-client-test", "silent");

describe("OwnerReconciler", () => {
  it("takes up every due record, counts those it got, and one that throws stops none of the others", async () => {
    const taken: string[] = [];
    let afterPasses = 0;
    const reconciler = new OwnerReconciler(
      {
        due: async (limit) => [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }].slice(0, limit),
        takeUp: async (r) => {
          if (r.id === "b") throw new Error("database gone");
          taken.push(r.id);
          return r.id !== "c";
        },
        afterPass: async () => void afterPasses++,
        purge: async () => 0,
      },
      logger,
      { intervalMs: 60_000, batch: 3 },
    );
    expect(await reconciler.tick()).toBe(1);
    expect(taken).toEqual(["a", "c"]);
    expect(afterPasses).toBe(1);
  });

  it("purges at the first pass and not again within the hour", async () => {
    let purges = 0;
    const reconciler = new OwnerReconciler({ due: async () => [], takeUp: async () => true, purge: async () => ++purges }, logger, { intervalMs: 60_000 });
    await reconciler.tick();
    await reconciler.tick();
    expect(purges).toBe(1);
  });
});
