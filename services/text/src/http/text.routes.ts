import { Router, type Response } from "express";
import { ChatQuoteRequest, IdempotencyKeyHeader, MessagesRequest, ResponsesRequest } from "@meter/contracts";
import { keyIdentityOf, parseInput, requireScope } from "@meter/service-kit";
import type { HttpAnswer } from "../render/text.render";
import type { QuoteService } from "../services/quote.service";
import type { TextRequestService } from "../services/text-request.service";
import { normalizeMessages, normalizeResponses } from "../services/text-plan";

/** Thin handlers: parse, hand to the use-case, write its answer exactly as rendered. */
export function textRoutes(deps: { requests: TextRequestService; quotes: QuoteService; defaultMaxTokens: number }): Router {
  const r = Router();

  r.post("/messages", async (req, res) => {
    const identity = keyIdentityOf(req);
    requireScope(identity, "text");
    const body = parseInput(MessagesRequest, req.body);
    send(
      res,
      await deps.requests.handle({
        identity,
        requestId: req.requestId,
        endpoint: "messages",
        idempotencyKey: req.header(IdempotencyKeyHeader),
        body: req.body,
        text: normalizeMessages(body),
        model: body.model,
      }),
    );
  });

  r.post("/responses", async (req, res) => {
    const identity = keyIdentityOf(req);
    requireScope(identity, "text");
    const body = parseInput(ResponsesRequest, req.body);
    send(
      res,
      await deps.requests.handle({
        identity,
        requestId: req.requestId,
        endpoint: "responses",
        idempotencyKey: req.header(IdempotencyKeyHeader),
        body: req.body,
        text: normalizeResponses(body, deps.defaultMaxTokens),
        model: body.model,
      }),
    );
  });

  r.post("/chat/quote", (req, res) => {
    requireScope(keyIdentityOf(req), "text");
    res.json(deps.quotes.quote(parseInput(ChatQuoteRequest, req.body)));
  });

  return r;
}

function send(res: Response, answer: HttpAnswer): void {
  res.status(answer.status);
  for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
  res.setHeader("content-type", "application/json");
  res.end(answer.body);
}
