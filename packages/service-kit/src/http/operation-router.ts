import { Router, type RequestHandler } from "express";
import { routePathOf, type OperationGroup } from "@meter/contracts";

/** A handler (or a chain of them) for every operation of a group, under the operation's name. */
export type OperationHandlers<G extends OperationGroup> = { readonly [K in keyof G]: RequestHandler | readonly RequestHandler[] };

/**
 * The router of a group of operations (packages/contracts/src/openapi): each route is mounted at its
 * operation's method and path, in the group's order, so no route exists that the OpenAPI document does
 * not list. `publicPrefix` is the part of the public path where the router is mounted (`/admin/v1`).
 */
export function operationRouter<G extends OperationGroup>(group: G, publicPrefix: string, handlers: OperationHandlers<G>): Router {
  const r = Router();
  for (const [name, op] of Object.entries(group)) {
    const handler = handlers[name as keyof G];
    r[op.method](routePathOf(op, publicPrefix), ...(Array.isArray(handler) ? handler : [handler as RequestHandler]));
  }
  return r;
}
