import {
  EngineAbortedError,
  type EngineError,
  EngineUnavailableError,
  InvalidInputError,
  LimitExceededError,
  QuantityUnknownError,
  UnsupportedMediaTypeError,
  UnsupportedParameterError,
} from "@meter/media-engines";
import { admissionError, jobErrorOf } from "./engine-errors";

describe("engine errors", () => {
  test("before the hold, each is the request's refusal with the contract's code and status", () => {
    const cases: [EngineError, string, number][] = [
      [new UnsupportedParameterError("settings.x", "no x", ["language"]), "unsupported_parameter", 400],
      [new QuantityUnknownError("unreadable", "file 0 (PDF) cannot be read"), "cost_unknown", 422],
      [new UnsupportedMediaTypeError("application/pdf", ["image/png"], 0), "unsupported_media_type", 415],
      [new LimitExceededError("pages", 200, 201, "too many pages"), "payload_too_large", 413],
      [new InvalidInputError("input is empty"), "invalid_request", 400],
      [new EngineUnavailableError("no tesseract"), "model_unavailable", 503],
      [new EngineAbortedError(), "service_unavailable", 503],
    ];
    for (const [error, code, status] of cases) {
      expect(admissionError(error, "m")).toMatchObject({ code, status });
    }
    expect(admissionError(new QuantityUnknownError("encrypted", "password-protected"), "m").message).toContain("nothing was reserved");
  });

  test("in a worker, each is the job's error; what has no code of its own is internal_error", () => {
    expect(jobErrorOf(new InvalidInputError("crop outside the image"))).toEqual({
      code: "invalid_input",
      message: "crop outside the image; nothing was charged",
    });
    expect(jobErrorOf(new EngineUnavailableError("tesseract crashed")).code).toBe("model_unavailable");
    expect(jobErrorOf(new EngineAbortedError()).code).toBe("internal_error");
  });
});
