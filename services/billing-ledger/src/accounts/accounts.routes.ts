import { Router } from "express";
import { z } from "zod";
import {
  AddMemberRequest,
  CabinetLedgerFilter,
  CabinetLedgerLinesQuery,
  CabinetLedgerQuery,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  ListQuery,
  SpendQuery,
} from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import type { AccountService } from "./account.service";
import type { DirectoryService } from "./directory.service";
import { LEDGER_CSV_HEADER, ledgerCsvLine } from "./ledger-csv.render";
import type { MemberLedgerService } from "./member-ledger.service";
import type { MoneyReportService } from "./money-report.service";

const Uuid = z.uuid();
const ListFilter = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) });
const ActivityFilter = z.strictObject({ days: z.coerce.number().int().min(1).max(90).default(30) });

/**
 * The operator's accounts (`/admin/v1`): users, organizations and their members, credits, balances and
 * ledgers; the lists of the operator's pages; what a tariff change would touch.
 */
export function accountsAdminRoutes(deps: { accounts: AccountService; directory: DirectoryService; money: MoneyReportService }): Router {
  const { accounts, directory } = deps;
  const r = Router();
  const id = (v: unknown) => parseInput(Uuid, v);

  r.post("/users", async (req, res) => {
    const { email } = parseInput(CreateUserRequest, req.body);
    const { user, created } = await accounts.createUser(email);
    res.status(created ? 201 : 200).json(user);
  });
  r.get("/users", async (req, res) => {
    res.json({ object: "list", data: await directory.users(parseInput(ListFilter, req.query).limit) });
  });
  r.get("/users/:id", async (req, res) => {
    res.json(await accounts.getUser(id(req.params.id)));
  });

  r.post("/organizations", async (req, res) => {
    const { name } = parseInput(CreateOrganizationRequest, req.body);
    res.status(201).json(await accounts.createOrganization(name));
  });
  r.get("/organizations", async (req, res) => {
    res.json({ object: "list", data: await directory.organizations(parseInput(ListFilter, req.query).limit) });
  });
  r.get("/organizations/:id", async (req, res) => {
    res.json(await accounts.getOrganization(id(req.params.id)));
  });
  r.post("/organizations/:id/members", async (req, res) => {
    const { user_id } = parseInput(AddMemberRequest, req.body);
    res.status(201).json(await accounts.addMember(id(req.params.id), user_id));
  });
  r.post("/organizations/:id/credits", async (req, res) => {
    const body = parseInput(CreditRequest, req.body);
    const { entry, created } = await accounts.credit(id(req.params.id), body.amount_microrub, body.reference);
    res.status(created ? 201 : 200).json(entry);
  });
  r.get("/organizations/:id/balance", async (req, res) => {
    res.json(await accounts.balance(id(req.params.id)));
  });
  r.get("/organizations/:id/ledger", async (req, res) => {
    const q = parseInput(ListQuery, req.query);
    res.json(await accounts.ledger(id(req.params.id), q.limit, q.cursor));
  });

  /** Per model and operation: the last days' charges and the holds still active, shown before a tariff change. */
  r.get("/catalog/activity", async (req, res) => {
    res.json({ object: "list", data: await deps.money.modelActivity(parseInput(ActivityFilter, req.query).days) });
  });

  return r;
}

/** A member's money in the chosen organization (`/cabinet/v1`): balance, spend per day, the ledger and its CSV. */
export function memberMoneyRoutes(deps: { money: MoneyReportService; ledger: MemberLedgerService }): Router {
  const r = Router();

  r.get("/balance", async (req, res) => {
    res.json(await deps.money.balance(sessionIdentityOf(req)));
  });
  r.get("/spend", async (req, res) => {
    const { days } = parseInput(SpendQuery, req.query);
    res.json(await deps.money.spendPerDay(sessionIdentityOf(req), days));
  });

  r.get("/ledger/lines", async (req, res) => {
    res.json(await deps.ledger.linesPage(sessionIdentityOf(req), parseInput(CabinetLedgerLinesQuery, req.query)));
  });
  r.get("/ledger", async (req, res) => {
    res.json(await deps.ledger.page(sessionIdentityOf(req), parseInput(CabinetLedgerQuery, req.query)));
  });
  r.get("/ledger.csv", async (req, res) => {
    const { organizationId, pages } = await deps.ledger.export(sessionIdentityOf(req), parseInput(CabinetLedgerFilter, req.query));
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
