import { EngineAbortedError, UnsupportedMediaTypeError } from "./errors";
import type { InputFile, Progress } from "./provider";
import { eachImage } from "./input";

const png: InputFile = { data: Buffer.from("png"), mimeType: "image/png" };
const pdf: InputFile = { data: Buffer.from("%PDF"), mimeType: "application/pdf" };

describe("eachImage", () => {
  test("works on each image in order and reports progress per image, starting at 0", async () => {
    const progress: Progress[] = [];
    const results = await eachImage([png, png, png], ["image/png"], { onProgress: (p) => progress.push(p) }, (_file, index) => Promise.resolve(index * 10));
    expect(results).toEqual([0, 10, 20]);
    expect(progress.map((p) => p.done)).toEqual([0, 1, 2, 3]);
    expect(progress.every((p) => p.total === 3 && p.unit === "image")).toBe(true);
  });

  test("stops before the next image once aborted, and refuses a file of a type not accepted before working on it", async () => {
    const stop = new AbortController();
    const seen: number[] = [];
    const aborted = eachImage([png, png, png], ["image/png"], { signal: stop.signal }, (_file, index) => {
      seen.push(index);
      stop.abort();
      return Promise.resolve(index);
    });
    await expect(aborted).rejects.toBeInstanceOf(EngineAbortedError);
    expect(seen).toEqual([0]);

    const worked: number[] = [];
    const refused = eachImage([png, pdf], ["image/png"], {}, (_file, index) => Promise.resolve(worked.push(index)));
    await expect(refused).rejects.toBeInstanceOf(UnsupportedMediaTypeError);
    expect(worked).toEqual([0]);
  });
});
