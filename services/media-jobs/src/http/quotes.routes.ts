import { Router } from "express";
import { MediaQuoteRequest } from "@meter/contracts";
import { keyIdentityOf, parseInput } from "@meter/service-kit";
import type { QuoteService } from "../services/quote.service";

export function quotesRoutes(deps: { quotes: QuoteService }): Router {
  const r = Router();
  r.post("/v1/quotes", async (req, res) => {
    res.json(await deps.quotes.quote(keyIdentityOf(req), parseInput(MediaQuoteRequest, req.body)));
  });
  return r;
}
