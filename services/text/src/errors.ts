import { AppError } from "@meter/service-kit";

export const TextErrors = {
  /** Only system/developer text: no upstream takes a request without a turn to answer. */
  noConversation: (field: string) =>
    new AppError("invalid_request", `${field}: at least one user or assistant message is required (system and developer text is the instructions)`),
  idempotencyMismatch: () => new AppError("idempotency_key_mismatch", "this Idempotency-Key was already used with a different request body"),
  modelNotFound: (model: string) => new AppError("model_not_found", `model "${model}" does not exist`),
  costUnknown: (model: string, why: string) => new AppError("cost_unknown", `the cost of this request on "${model}" is unknown (${why}); nothing was reserved`),
  modelUnavailable: (why: string) => new AppError("model_unavailable", `${why}; nothing was reserved`),
  maxCostExceeded: (estimate: number, max: number) =>
    new AppError("max_cost_exceeded", `the estimate ${estimate} microrub exceeds max_cost_microrub ${max}`, {
      details: { estimated_cost_microrub: estimate },
    }),
  billingUnavailable: () =>
    new AppError("service_unavailable", "billing is not reachable right now; nothing was reserved", { headers: { "retry-after": "2" } }),
  /** The catalog has not been loaded since this process started: whether the model exists is not known yet. */
  catalogNotLoaded: () =>
    new AppError("service_unavailable", "the model catalog is not loaded yet; nothing was reserved, retry shortly", { headers: { "retry-after": "2" } }),
};
