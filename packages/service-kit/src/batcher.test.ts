import { Batcher } from "./batcher";

describe("Batcher", () => {
  it("runs concurrent submissions together, one batch after the other", async () => {
    const batches: number[][] = [];
    const b = new Batcher<number, number>(async (items) => {
      batches.push(items);
      await new Promise((r) => setTimeout(r, 10));
      return items.map((i) => i * 2);
    });
    const results = await Promise.all([1, 2, 3, 4].map((i) => b.submit(i)));
    expect(results).toEqual([2, 4, 6, 8]);
    // The first goes at once, alone; the rest wait for it and go together.
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it("fails only the item that cannot be processed when a batch throws: the rest are run again alone", async () => {
    const b = new Batcher<string, string>(async (items) => {
      await Promise.resolve();
      if (items.includes("poison")) throw new Error("the whole statement failed");
      return items.map((i) => i.toUpperCase());
    });
    const first = b.submit("warm-up");
    const rest = ["a", "poison", "b"].map((i) =>
      b.submit(i).then(
        (v) => ({ ok: v }),
        (e: Error) => ({ err: e.message }),
      ),
    );
    await first;
    expect(await Promise.all(rest)).toEqual([{ ok: "A" }, { err: "the whole statement failed" }, { ok: "B" }]);
  });

  it("rejects one item with its own Error and resolves the others", async () => {
    const b = new Batcher<number, number>(async (items) => items.map((i) => (i < 0 ? new Error(`negative ${i}`) : i)));
    await expect(Promise.all([b.submit(1), b.submit(-1).catch((e: Error) => e.message)])).resolves.toEqual([1, "negative -1"]);
  });

  it("rejects every item with the batch's error when the failure is not the items' doing", async () => {
    let calls = 0;
    const b = new Batcher<number, number>(
      async () => {
        calls++;
        await Promise.resolve();
        throw new Error(calls <= 2 ? "answer lost" : "refused at once");
      },
      { splitFailedBatch: (e) => (e as Error).message !== "answer lost" },
    );
    const first = b.submit(0).catch((e: Error) => e.message);
    const rest = [1, 2, 3].map((i) => b.submit(i).catch((e: Error) => e.message));
    expect(await first).toBe("answer lost");
    // Run again alone, each would have seen "refused at once": what the batch's own call saw stands.
    expect(await Promise.all(rest)).toEqual(["answer lost", "answer lost", "answer lost"]);
    expect(calls).toBe(2);
  });
});
