import { AppError } from "@meter/service-kit";

/** The media-jobs service's refusals, with the contract's codes. Every one of them reserves nothing. */
export const MediaErrors = {
  idempotencyMismatch: () => new AppError("idempotency_key_mismatch", "this Idempotency-Key was already used with a different request body"),
  modelNotFound: (model: string) => new AppError("model_not_found", `model "${model}" does not exist`),
  costUnknown: (model: string, why: string) => new AppError("cost_unknown", `the cost of this job on "${model}" is unknown (${why}); nothing was reserved`),
  modelUnavailable: (why: string) => new AppError("model_unavailable", `${why}; nothing was reserved`),
  maxCostExceeded: (estimate: number, max: number) =>
    new AppError("max_cost_exceeded", `the estimate ${estimate} microrub exceeds max_cost_microrub ${max}; nothing was reserved`, {
      details: { estimated_cost_microrub: estimate },
    }),
  /** A field the operation does not use: sending it means the client expects something that will not happen. */
  fieldNotUsed: (field: string, operation: string) => new AppError("unsupported_parameter", `"${field}" is not used by ${operation}`),
  fieldRequired: (field: string, why: string) => new AppError("invalid_request", `${field}: required ${why}`),
  invalidInput: (message: string) => new AppError("invalid_request", message),
  inputTooLarge: (bytes: number, max: number) => new AppError("payload_too_large", `the input files are ${bytes} bytes in all; a job takes at most ${max}`),
  fileNotFound: (id: string) => new AppError("file_not_found", `file ${id} does not exist`),
  fileNotVerified: (id: string) => new AppError("file_not_verified", `file ${id} has not passed verification`),
  billingUnavailable: () =>
    new AppError("service_unavailable", "billing is not reachable right now; nothing was reserved", { headers: { "retry-after": "2" } }),
  filesUnavailable: () =>
    new AppError("service_unavailable", "the files service is not reachable right now; nothing was reserved", { headers: { "retry-after": "2" } }),
  /** The catalog has not been loaded since this process started: whether the model exists is not known yet. */
  catalogNotLoaded: () =>
    new AppError("service_unavailable", "the model catalog is not loaded yet; nothing was reserved, retry shortly", { headers: { "retry-after": "2" } }),
  jobNotFound: (id: string) => new AppError("not_found", `job ${id} does not exist`),
  badCursor: (after: string) => new AppError("invalid_request", `after: ${after} is not a job of yours`),
  notCancellable: (why: string) => new AppError("conflict", why),
};
