import { Router, type Response } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AdminRequestLogOperations,
  AnalyticsQuery,
  BillingEndpoints,
  CABINET_API_PREFIX,
  CabinetRequestLogFilter,
  CabinetRequestLogOperations,
  CabinetRequestLogQuery,
  KeyIdentity,
  RequestLogQuery,
  UsageOperations,
  type AnalyticsReport,
} from "@meter/contracts";
import { AppError, onlyFrom, operationRouter, parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import { ANALYTICS_CSV_HEADER, analyticsCsvLines, REQUEST_LOG_CSV_HEADER, requestLogCsvLine } from "./request-log-csv.render";
import type { RequestLogExport, RequestLogService } from "./request-log.service";
import type { UsageAnalyticsService } from "./usage-analytics.service";

/** `POST /internal/v1/request-log/refusals`: the gateway's batches of refusals of authenticated keys. */
export function requestLogInternalRoutes(log: RequestLogService): Router {
  const r = Router();
  r.post(BillingEndpoints.recordRefusals.path, onlyFrom("gateway"), async (req, res) => {
    res.json({ recorded: await log.recordRefusals(parseInput(BillingEndpoints.recordRefusals.request, req.body)) });
  });
  return r;
}

/** `GET /v1/usage/requests`: the calling key's own entries; any valid key, no scope. */
export function requestLogPublicRoutes(log: RequestLogService): Router {
  return operationRouter(UsageOperations, "/v1", {
    usageRequests: async (req, res) => {
      const parsed = KeyIdentity.safeParse(req.identity);
      if (!parsed.success) throw new AppError("authentication_required", "an API key is required");
      res.json(await log.forKey(parsed.data, parseInput(RequestLogQuery, req.query)));
    },
  });
}

/** The cabinet's Requests page, its CSV and totals, and the analytics: the member's chosen organization. */
export function requestLogCabinetRoutes(log: RequestLogService, analytics: UsageAnalyticsService): Router {
  return operationRouter(CabinetRequestLogOperations, CABINET_API_PREFIX, {
    requests: async (req, res) => {
      res.json(await log.forMember(sessionIdentityOf(req), parseInput(CabinetRequestLogQuery, req.query)));
    },
    requestsCsv: async (req, res) => {
      await sendCsv(res, await log.exportForMember(sessionIdentityOf(req), parseInput(CabinetRequestLogFilter, req.query)));
    },
    requestTotals: async (req, res) => {
      res.json(await log.totalsForMember(sessionIdentityOf(req), parseInput(CabinetRequestLogFilter, req.query)));
    },
    analytics: async (req, res) => {
      res.json(await analytics.forMember(sessionIdentityOf(req), parseInput(AnalyticsQuery, req.query)));
    },
    analyticsCsv: async (req, res) => {
      sendAnalyticsCsv(res, await analytics.forMember(sessionIdentityOf(req), parseInput(AnalyticsQuery, req.query)));
    },
  });
}

/** The operator: any organization's log, the same page, CSV, totals and analytics. */
export function requestLogAdminRoutes(log: RequestLogService, analytics: UsageAnalyticsService): Router {
  const organization = (v: unknown) => parseInput(z.uuid(), v);
  return operationRouter(AdminRequestLogOperations, ADMIN_PREFIX, {
    organizationRequests: async (req, res) => {
      res.json(await log.forOrganization(organization(req.params.organization_id), parseInput(CabinetRequestLogQuery, req.query)));
    },
    organizationRequestsCsv: async (req, res) => {
      const filter = parseInput(CabinetRequestLogFilter, req.query);
      await sendCsv(res, await log.exportForOrganization(organization(req.params.organization_id), filter));
    },
    organizationRequestTotals: async (req, res) => {
      res.json(await log.totalsForOrganization(organization(req.params.organization_id), parseInput(CabinetRequestLogFilter, req.query)));
    },
    organizationAnalytics: async (req, res) => {
      res.json(await analytics.forOrganization(organization(req.params.organization_id), parseInput(AnalyticsQuery, req.query)));
    },
    organizationAnalyticsCsv: async (req, res) => {
      sendAnalyticsCsv(res, await analytics.forOrganization(organization(req.params.organization_id), parseInput(AnalyticsQuery, req.query)));
    },
  });
}

/** A report is at most 366 days x its groups: built whole, then sent. */
function sendAnalyticsCsv(res: Response, report: AnalyticsReport): void {
  res.setHeader("content-type", "text/csv; charset=utf-8");
  res.setHeader("content-disposition", `attachment; filename="usage-${report.organization_id}-${report.from}-${report.to}.csv"`);
  res.send([ANALYTICS_CSV_HEADER, ...analyticsCsvLines(report)].map((l) => `${l}\r\n`).join(""));
}

async function sendCsv(res: Response, { organizationId, pages }: RequestLogExport): Promise<void> {
  res.setHeader("content-type", "text/csv; charset=utf-8");
  res.setHeader("content-disposition", `attachment; filename="requests-${organizationId}.csv"`);
  res.write(`${REQUEST_LOG_CSV_HEADER}\r\n`);
  for await (const page of pages) {
    // Back-pressure: a slow download holds the next page's query until the socket drains.
    if (!res.write(page.map((e) => `${requestLogCsvLine(e)}\r\n`).join(""))) {
      await new Promise((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
    }
    if (res.destroyed) return;
  }
  res.end();
}
