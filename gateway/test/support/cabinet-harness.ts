import { buildCabinet, type CabinetBundle } from "@meter/cabinet-web";
import type { ServiceName } from "@meter/contracts";
import { startGateway, type GatewayHarness } from "./gateway-harness";

export { ADMIN_TOKEN } from "./gateway-harness";

export interface CabinetHarness extends GatewayHarness {
  /** The cabinet's pages and assets as the gateway serves them (the build is deterministic). */
  bundle: CabinetBundle;
}

/**
 * A gateway with the web cabinet in front of a real billing-ledger (its own test database); files and
 * media-jobs are at an address nothing listens on.
 */
export async function startCabinetGateway(
  opts: { mediaEnabled?: boolean; billingEnv?: Record<string, string>; trustProxy?: string; services?: Partial<Record<ServiceName, string>> } = {},
): Promise<CabinetHarness> {
  const gateway = await startGateway({
    keyCacheTtlMs: 0,
    ...(opts.services ? { services: opts.services } : {}),
    ...(opts.trustProxy !== undefined ? { trustProxy: opts.trustProxy } : {}),
    ...(opts.mediaEnabled !== undefined ? { mediaEnabled: opts.mediaEnabled } : {}),
    ...(opts.billingEnv ? { billingEnv: opts.billingEnv } : {}),
  });
  return { ...gateway, bundle: await buildCabinet() };
}

/** A browser's cookie jar, as far as the cabinet needs one: names and values, set and cleared by Set-Cookie. */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  take(res: Response): string[] {
    const lines = res.headers.getSetCookie();
    for (const line of lines) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === "" || /max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return lines;
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}
