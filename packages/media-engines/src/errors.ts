/**
 * What engines throw. They know nothing of HTTP: each error carries the public error code the job service
 * should map it to (`code`, one of the contract's codes where one fits), and the service's error catalog
 * turns that into the HTTP status. Thrown before the hold (settings, prompt, measure): a request error.
 * Thrown by `run` in a worker: the job fails with `error: {code, message}` and its hold is released.
 */
export abstract class EngineError extends Error {
  abstract readonly code: string;

  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A setting the model does not declare, a bad value, or an edit instruction outside the grammar.
 * HTTP 400 `unsupported_parameter`; `supported` lists what the model accepts (also in the message).
 */
export class UnsupportedParameterError extends EngineError {
  readonly code = "unsupported_parameter";

  constructor(
    readonly parameter: string,
    message: string,
    readonly supported: readonly string[] = [],
  ) {
    super(message, { parameter, supported });
  }
}

/**
 * The billable quantity cannot be determined (an unreadable, corrupt or password-protected PDF):
 * HTTP 422 `cost_unknown`, before any reservation.
 */
export class QuantityUnknownError extends EngineError {
  readonly code = "cost_unknown";

  constructor(
    readonly reason: "unreadable" | "encrypted",
    message: string,
    readonly fileIndex?: number,
    options?: { cause?: unknown },
  ) {
    super(message, { reason, file_index: fileIndex }, options);
  }
}

/** An input file of a type the model does not take: HTTP 415 `unsupported_media_type`. */
export class UnsupportedMediaTypeError extends EngineError {
  readonly code = "unsupported_media_type";

  constructor(
    readonly mimeType: string,
    readonly accepted: readonly string[],
    readonly fileIndex?: number,
  ) {
    super(`input ${fileIndex === undefined ? "file" : `file ${fileIndex}`} is ${mimeType}; this model takes ${accepted.join(", ")}`, {
      mime_type: mimeType,
      accepted,
      file_index: fileIndex,
    });
  }
}

/**
 * More than a model's limit (files per job, pages per document, input characters, image pixels):
 * HTTP 413 `payload_too_large`, before any reservation.
 */
export class LimitExceededError extends EngineError {
  readonly code = "payload_too_large";

  constructor(
    readonly limit: "files" | "pages" | "characters" | "pixels" | "output_pixels" | "prompt_characters" | "file_bytes",
    readonly max: number,
    readonly actual: number,
    message: string,
  ) {
    super(message, { limit, max, actual });
  }
}

/**
 * The input turned out to be unusable while running (an image that does not decode, a crop outside the
 * image): the job fails with `invalid_input` and its hold is released. Not a request error: it is found
 * only when the work starts.
 */
export class InvalidInputError extends EngineError {
  readonly code = "invalid_input";
}

/** The run was aborted through its AbortSignal. The job is not failed by the engine: the caller decides. */
export class EngineAbortedError extends EngineError {
  readonly code = "aborted";

  constructor(options?: { cause?: unknown }) {
    super("the run was aborted", {}, options);
  }
}

/**
 * The engine cannot run here (Tesseract or its language data missing, a child process crashing):
 * HTTP 503 `model_unavailable` at admission, a failed job (hold released) in a worker.
 */
export class EngineUnavailableError extends EngineError {
  readonly code = "model_unavailable";
}

/**
 * An upstream model did not produce the job's result: it failed after failover, refused, timed out, lost
 * its connection once the request was sent, or answered something that is no result. The job fails with
 * `upstream_error` (`upstream_timeout` when it did not answer in time) and nothing is charged; `mayHaveRun`
 * says the upstream may have done (and billed us for) the work all the same.
 */
export class UpstreamFailedError extends EngineError {
  constructor(
    readonly code: "upstream_error" | "upstream_timeout",
    message: string,
    readonly mayHaveRun: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, { may_have_run: mayHaveRun }, options);
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineAbortedError({ cause: signal.reason });
}
