import type { IncomingHttpHeaders } from "node:http";
import { AppError } from "@meter/service-kit";
import { isAdminToken, presentedKey } from "./credentials";

/** The operator's bearer token (ADMIN_TOKEN) or a 401: `invalid_api_key` when something else was presented. */
export function assertAdminToken(headers: IncomingHttpHeaders, adminToken: string): void {
  if (!isAdminToken(headers, adminToken)) {
    throw new AppError(presentedKey(headers, false) ? "invalid_api_key" : "authentication_required", "the admin token is missing or wrong");
  }
}
