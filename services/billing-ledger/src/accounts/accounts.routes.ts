import type { Router } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AddMemberRequest,
  AdminAccountOperations,
  AdminUsersQuery,
  AdminOrganizationsQuery,
  CABINET_API_PREFIX,
  CabinetLedgerCsvQuery,
  CabinetLedgerLinesQuery,
  CabinetLedgerQuery,
  CabinetMoneyOperations,
  CatalogActivityQuery,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  ListQuery,
  SpendQuery,
  UpdateOrganizationRequest,
} from "@meter/contracts";
import { operationRouter, parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import type { AccountService } from "./account.service";
import type { DirectoryService } from "./directory.service";
import { LEDGER_CSV_HEADER, ledgerCsvLine } from "./ledger-csv.render";
import type { MemberLedgerService } from "./member-ledger.service";
import type { MoneyReportService } from "./money-report.service";

const Uuid = z.uuid();

/**
 * The operator's accounts (`/admin/v1`): users, organizations and their members, credits, balances and
 * ledgers; the lists of the operator's pages; what a tariff change would touch.
 */
export function accountsAdminRoutes(deps: {
  accounts: AccountService;
  directory: DirectoryService;
  money: MoneyReportService;
  lines: MemberLedgerService;
}): Router {
  const { accounts, directory } = deps;
  const id = (v: unknown) => parseInput(Uuid, v);

  return operationRouter(AdminAccountOperations, ADMIN_PREFIX, {
    createUser: async (req, res) => {
      const { email } = parseInput(CreateUserRequest, req.body);
      const { user, created } = await accounts.createUser(email);
      res.status(created ? 201 : 200).json(user);
    },
    users: async (req, res) => {
      res.json({ object: "list", data: await directory.users(parseInput(AdminUsersQuery, req.query)) });
    },
    user: async (req, res) => {
      res.json(await accounts.getUser(id(req.params.user_id)));
    },
    createOrganization: async (req, res) => {
      const { name } = parseInput(CreateOrganizationRequest, req.body);
      res.status(201).json(await accounts.createOrganization(name));
    },
    organizations: async (req, res) => {
      res.json(await directory.organizations(parseInput(AdminOrganizationsQuery, req.query)));
    },
    organization: async (req, res) => {
      res.json(await accounts.getOrganization(id(req.params.organization_id)));
    },
    updateOrganization: async (req, res) => {
      res.json(await accounts.updateOrganization(id(req.params.organization_id), parseInput(UpdateOrganizationRequest, req.body)));
    },
    addMember: async (req, res) => {
      const { user_id } = parseInput(AddMemberRequest, req.body);
      res.status(201).json(await accounts.addMember(id(req.params.organization_id), user_id));
    },
    credit: async (req, res) => {
      const body = parseInput(CreditRequest, req.body);
      const { entry, created } = await accounts.credit(id(req.params.organization_id), body.amount_microrub, body.reference);
      res.status(created ? 201 : 200).json(entry);
    },
    balance: async (req, res) => {
      res.json(await accounts.balance(id(req.params.organization_id)));
    },
    ledger: async (req, res) => {
      const q = parseInput(ListQuery, req.query);
      res.json(await accounts.ledger(id(req.params.organization_id), q.limit, q.cursor));
    },
    ledgerLines: async (req, res) => {
      const organizationId = id(req.params.organization_id);
      await accounts.getOrganization(organizationId);
      res.json(await deps.lines.linesOf(organizationId, parseInput(CabinetLedgerLinesQuery, req.query)));
    },
    spend: async (req, res) => {
      const organizationId = id(req.params.organization_id);
      await accounts.getOrganization(organizationId);
      res.json(await deps.money.spendOf(organizationId, parseInput(SpendQuery, req.query)));
    },
    /** Per model and operation: the last days' charges and the holds still active, shown before a tariff change. */
    catalogActivity: async (req, res) => {
      res.json({ object: "list", data: await deps.money.modelActivity(parseInput(CatalogActivityQuery, req.query).days) });
    },
  });
}

/** A member's money in the chosen organization (`/cabinet/v1`): balance, spend per day, the ledger and its CSV. */
export function memberMoneyRoutes(deps: { money: MoneyReportService; ledger: MemberLedgerService }): Router {
  return operationRouter(CabinetMoneyOperations, CABINET_API_PREFIX, {
    balance: async (req, res) => {
      res.json(await deps.money.balance(sessionIdentityOf(req)));
    },
    spend: async (req, res) => {
      res.json(await deps.money.spendPerDay(sessionIdentityOf(req), parseInput(SpendQuery, req.query)));
    },
    ledgerLines: async (req, res) => {
      res.json(await deps.ledger.linesPage(sessionIdentityOf(req), parseInput(CabinetLedgerLinesQuery, req.query)));
    },
    ledger: async (req, res) => {
      res.json(await deps.ledger.page(sessionIdentityOf(req), parseInput(CabinetLedgerQuery, req.query)));
    },
    ledgerCsv: async (req, res) => {
      const { organizationId, pages } = await deps.ledger.export(sessionIdentityOf(req), parseInput(CabinetLedgerCsvQuery, req.query));
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
    },
  });
}
