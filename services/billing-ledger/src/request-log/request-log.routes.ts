import type { Response } from "express";
import type { Router } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AdminRequestLogOperations,
  CABINET_API_PREFIX,
  CabinetRequestLogFilter,
  CabinetRequestLogOperations,
  CabinetRequestLogQuery,
  KeyIdentity,
  RequestLogQuery,
  UsageOperations,
} from "@meter/contracts";
import { AppError, operationRouter, parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import { REQUEST_LOG_CSV_HEADER, requestLogCsvLine } from "./request-log-csv.render";
import type { RequestLogExport, RequestLogService } from "./request-log.service";

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

/** The cabinet's Requests page and its CSV: the member's chosen organization. */
export function requestLogCabinetRoutes(log: RequestLogService): Router {
  return operationRouter(CabinetRequestLogOperations, CABINET_API_PREFIX, {
    requests: async (req, res) => {
      res.json(await log.forMember(sessionIdentityOf(req), parseInput(CabinetRequestLogQuery, req.query)));
    },
    requestsCsv: async (req, res) => {
      await sendCsv(res, await log.exportForMember(sessionIdentityOf(req), parseInput(CabinetRequestLogFilter, req.query)));
    },
  });
}

/** The operator: any organization's log, the same page and CSV. */
export function requestLogAdminRoutes(log: RequestLogService): Router {
  const organization = (v: unknown) => parseInput(z.uuid(), v);
  return operationRouter(AdminRequestLogOperations, ADMIN_PREFIX, {
    organizationRequests: async (req, res) => {
      res.json(await log.forOrganization(organization(req.params.organization_id), parseInput(CabinetRequestLogQuery, req.query)));
    },
    organizationRequestsCsv: async (req, res) => {
      const filter = parseInput(CabinetRequestLogFilter, req.query);
      await sendCsv(res, await log.exportForOrganization(organization(req.params.organization_id), filter));
    },
  });
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
