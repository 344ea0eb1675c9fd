import { Router } from "express";
import { z } from "zod";
import { CabinetLedgerFilter, CabinetLedgerQuery, MemberCreateKeyRequest, SignOutRequest, SpendQuery, SwitchOrganizationRequest } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { CabinetServices } from "../cabinet.services";
import { LEDGER_CSV_HEADER, ledgerCsvLine } from "../accounts/ledger-csv.render";
import { sessionIdentityOf } from "./session-identity";

const Uuid = z.uuid();

/**
 * The member API (`/cabinet/v1`; the gateway serves it as `/cabinet/api`): the signed-in member's
 * session and organizations, and the chosen organization's balance, spend, keys and ledger.
 */
export function cabinetRoutes(c: CabinetServices): Router {
  const r = Router();

  r.get("/me", async (req, res) => {
    res.json(await c.sessions.me(sessionIdentityOf(req)));
  });
  r.put("/session/organization", async (req, res) => {
    const { organization_id } = parseInput(SwitchOrganizationRequest, req.body);
    res.json(await c.sessions.switchOrganization(sessionIdentityOf(req), organization_id));
  });
  r.post("/session/sign-out", async (req, res) => {
    const { everywhere } = parseInput(SignOutRequest, req.body ?? {});
    res.json(await c.sessions.signOut(sessionIdentityOf(req), everywhere));
  });

  r.get("/balance", async (req, res) => {
    res.json(await c.money.balance(sessionIdentityOf(req)));
  });
  r.get("/spend", async (req, res) => {
    const { days } = parseInput(SpendQuery, req.query);
    res.json(await c.money.spendPerDay(sessionIdentityOf(req), days));
  });

  r.get("/keys", async (req, res) => {
    res.json({ object: "list", data: await c.memberKeys.list(sessionIdentityOf(req)) });
  });
  r.post("/keys", async (req, res) => {
    res.status(201).json(await c.memberKeys.create(sessionIdentityOf(req), parseInput(MemberCreateKeyRequest, req.body)));
  });
  r.post("/keys/:id/revoke", async (req, res) => {
    res.json(await c.memberKeys.revoke(sessionIdentityOf(req), parseInput(Uuid, req.params.id)));
  });

  r.get("/ledger", async (req, res) => {
    res.json(await c.ledger.page(sessionIdentityOf(req), parseInput(CabinetLedgerQuery, req.query)));
  });
  r.get("/ledger.csv", async (req, res) => {
    const { organizationId, pages } = await c.ledger.export(sessionIdentityOf(req), parseInput(CabinetLedgerFilter, req.query));
    res.setHeader("content-type", "text/csv; charset=utf-8");
    res.setHeader("content-disposition", `attachment; filename="ledger-${organizationId}.csv"`);
    res.write(`${LEDGER_CSV_HEADER}\r\n`);
    for await (const page of pages) {
      // Back-pressure: a slow download holds the next page's query until the socket drains.
      if (!res.write(page.map((e) => `${ledgerCsvLine(e)}\r\n`).join(""))) {
        await new Promise((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
      }
      // The client went away: stop reading pages nobody will receive.
      if (res.destroyed) return;
    }
    res.end();
  });

  return r;
}
