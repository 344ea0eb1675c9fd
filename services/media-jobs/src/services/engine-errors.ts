import type { JobErrorCode } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import type { StoredError } from "../domain/job-record";
import { EngineError } from "@meter/media-engines";
import { MediaErrors } from "../errors";

/**
 * Engines know nothing of HTTP: each of their errors carries the code it stands for. Before the hold
 * (settings, prompt, measure) it is the request's refusal; in a worker it is the job's failure.
 */
export function admissionError(error: EngineError, model: string): AppError {
  switch (error.code) {
    case "unsupported_parameter":
      return new AppError("unsupported_parameter", error.message, { details: error.details, cause: error });
    case "cost_unknown":
      return MediaErrors.costUnknown(model, error.message);
    case "unsupported_media_type":
      return new AppError("unsupported_media_type", error.message, { details: error.details, cause: error });
    case "payload_too_large":
      return new AppError("payload_too_large", error.message, { details: error.details, cause: error });
    case "invalid_input":
      return new AppError("invalid_request", error.message, { details: error.details, cause: error });
    case "model_unavailable":
      return MediaErrors.modelUnavailable(error.message);
    default:
      return new AppError("service_unavailable", `${error.message}; nothing was reserved`, { cause: error });
  }
}

const JOB_CODES: Partial<Record<string, JobErrorCode>> = {
  unsupported_parameter: "unsupported_parameter",
  cost_unknown: "cost_unknown",
  unsupported_media_type: "unsupported_media_type",
  payload_too_large: "payload_too_large",
  invalid_input: "invalid_input",
  model_unavailable: "model_unavailable",
  upstream_error: "upstream_error",
  upstream_timeout: "upstream_timeout",
};

/** An engine's failure in a worker: the job fails with it and nothing is charged. */
export function jobErrorOf(error: EngineError): StoredError {
  return { code: JOB_CODES[error.code] ?? "internal_error", message: `${error.message}; nothing was charged` };
}

export function isEngineError(error: unknown): error is EngineError {
  return error instanceof EngineError;
}
