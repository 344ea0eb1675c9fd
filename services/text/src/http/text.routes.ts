import { Router, type Response } from "express";
import { ChatQuoteRequest, IdempotencyKeyHeader, IdempotentReplayedHeader, MessagesRequest, ResponsesRequest } from "@meter/contracts";
import { keyIdentityOf, mark, parseInput, requireScope } from "@meter/service-kit";
import type { QuoteService } from "../services/quote.service";
import type { TextOutcome, TextRequestService } from "../services/text-request.service";
import { normalizeMessages, normalizeResponses } from "../services/text-plan";
import { renderRecord } from "./text.render";

/** Thin handlers: parse, hand to the use-case, render its outcome. */
export function textRoutes(deps: { requests: TextRequestService; quotes: QuoteService; defaultMaxTokens: number }): Router {
  const r = Router();

  r.post("/v1/messages", async (req, res) => {
    mark("validate.start");
    const identity = keyIdentityOf(req);
    requireScope(identity, "text");
    const body = parseInput(MessagesRequest, req.body);
    const text = normalizeMessages(body);
    mark("validate.end");
    send(
      res,
      await deps.requests.handle({
        identity,
        requestId: req.requestId,
        endpoint: "messages",
        idempotencyKey: req.header(IdempotencyKeyHeader),
        body: req.body,
        text,
        model: body.model,
      }),
    );
  });

  r.post("/v1/responses", async (req, res) => {
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

  r.post("/v1/chat/quote", (req, res) => {
    requireScope(keyIdentityOf(req), "text");
    res.json(deps.quotes.quote(parseInput(ChatQuoteRequest, req.body)));
  });

  return r;
}

function send(res: Response, outcome: TextOutcome): void {
  mark("render");
  const answer = renderRecord(outcome.record);
  res.status(answer.status);
  for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
  if (outcome.replayed) res.setHeader(IdempotentReplayedHeader, "true");
  res.setHeader("content-type", "application/json");
  res.end(answer.body);
}
