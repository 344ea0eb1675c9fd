import { Router, type RequestHandler } from "express";
import { jsonBody, type Logger } from "@meter/service-kit";
import { ProtocolVersionHeader, RpcErrorCode } from "../domain/protocol";
import { McpErrors } from "../errors";
import { checkLegacyEnvelope, withServedVersion } from "../services/json-rpc-envelope";
import { decideEra } from "../services/protocol-era";
import type { StatelessMcp } from "../services/stateless-mcp.service";
import { unsupportedVersion } from "../services/stateless-request";
import type { ToolCatalog } from "../services/tool-catalog";
import type { ToolInvoker } from "../services/tool-invoker.service";
import { callerOf } from "./caller";
import { serveHandshakeEra } from "./handshake-era";
import { idOf, sendRpcError } from "./json-rpc.render";
import { originGuard } from "./origin-guard";
import { serveStatelessEra } from "./stateless-era";

export interface McpRoutesDeps {
  catalog: ToolCatalog;
  invoker: ToolInvoker;
  stateless: StatelessMcp;
  logger: Logger;
  bodyLimitBytes: number;
  publicBaseUrl: string;
  allowedOrigins: readonly string[];
}

/** Streamable HTTP: the client must take both a JSON answer and an event stream. */
const requireStreamableAccept: RequestHandler = (req, _res, next) => {
  const accept = req.headers.accept ?? "";
  next(accept.includes("application/json") && accept.includes("text/event-stream") ? undefined : McpErrors.notAcceptable());
};

/**
 * `POST /mcp`: the Origin (403), the Accept header (406) and the body (415, 413 before parsing, 400
 * for bad JSON) are checked here for both eras, then the message goes to the era it speaks; GET and
 * DELETE are 405.
 */
export function mcpRoutes(deps: McpRoutesDeps): Router {
  const r = Router();
  r.use("/mcp", originGuard(deps.allowedOrigins));
  r.post("/mcp", requireStreamableAccept, ...jsonBody({ limit: deps.bodyLimitBytes }), async (req, res) => {
    const raw = req.headers[ProtocolVersionHeader];
    const version = Array.isArray(raw) ? raw[0] : raw;
    const decision = decideEra(req.body, version);
    switch (decision.era) {
      case "unsupported":
        return sendRpcError(res, idOf(req.body), unsupportedVersion(decision.requested));
      case "modern_batch":
        return sendRpcError(res, undefined, {
          code: RpcErrorCode.invalidRequest,
          message: "Invalid Request: MCP 2026-07-28 sends one message per POST, not a batch",
        });
      case "modern":
        return serveStatelessEra(req, res, deps, callerOf(req, res, deps.publicBaseUrl));
      case "legacy": {
        const refused = checkLegacyEnvelope(req.body, version);
        if (refused) return sendRpcError(res, idOf(req.body), refused);
        req.body = withServedVersion(req.body);
        return serveHandshakeEra(req, res, deps, callerOf(req, res, deps.publicBaseUrl));
      }
    }
  });
  r.all("/mcp", (req, _res, next) => next(McpErrors.methodNotAllowed(req.method)));
  return r;
}
