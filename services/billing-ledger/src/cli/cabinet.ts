import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ServiceCatalog } from "@meter/contracts";

/**
 * `pnpm cabinet <resource> <action> [--flags]`: the account cabinet from a terminal, over the admin API
 * of a running gateway (METER_URL, default http://127.0.0.1:8080; ADMIN_TOKEN from the environment or
 * from .local/secrets.json written by `npm start`). Prints the API's JSON answer.
 */
const USAGE = `usage: pnpm cabinet <command> [flags]
  user create --email E
  user invite --email E [--org ORG]        one-time sign-in link to the web cabinet (valid a day)
  user list
  invitations [--status pending|used|expired|revoked]
  invitations revoke --id INVITATION_ID
  org create --name N
  org list
  org add-member --org ORG --user USER
  org credit --org ORG --amount MICRORUB --reference REF
  org balance --org ORG
  org ledger --org ORG [--limit N] [--cursor C]
  key create --user USER --org ORG --scopes text,images,... --daily-budget MICRORUB [--name N]
  key get --key KEY_ID
  key list [--org ORG]
  key revoke --key KEY_ID
  key usage --key KEY_ID
  model put --id MODEL --json '{...}' | --file model.json
  model list
  holds [--status active|settled|released|expired] [--older-than SECONDS]
  holds release --hold HOLD_ID --reason TEXT`;

type Flags = Record<string, string | undefined>;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: Object.fromEntries(
      [
        "email",
        "name",
        "org",
        "user",
        "amount",
        "reference",
        "limit",
        "cursor",
        "scopes",
        "daily-budget",
        "key",
        "id",
        "json",
        "file",
        "status",
        "older-than",
        "hold",
        "reason",
      ].map((k) => [k, { type: "string" as const }]),
    ),
  });
  const flags = values as Flags;
  const [resource, action] = positionals;
  const need = (name: string): string => {
    const v = flags[name];
    if (!v) throw new UsageError(`--${name} is required`);
    return v;
  };
  const int = (name: string): number => {
    const n = Number(need(name));
    if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} must be an integer`);
    return n;
  };
  const query = (params: Record<string, string | undefined>) => {
    const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
    return q.size ? `?${q}` : "";
  };

  switch (`${resource} ${action ?? ""}`.trim()) {
    case "user create":
      return call("POST", "/admin/v1/users", { email: need("email") });
    case "user invite":
      return call("POST", "/admin/v1/invitations", { email: need("email"), ...(flags.org ? { organization_id: flags.org } : {}) }, (answer) => {
        const link = (answer as { link_path?: string }).link_path;
        if (link) console.log(`\nSign-in link (works once, until ${(answer as { expires_at?: string }).expires_at}):\n  ${baseUrl()}${link}`);
      });
    case "user list":
      return call("GET", "/admin/v1/users");
    case "invitations":
      return call("GET", `/admin/v1/invitations${query({ status: flags.status })}`);
    case "invitations revoke":
      return call("POST", `/admin/v1/invitations/${need("id")}/revoke`);
    case "org list":
      return call("GET", "/admin/v1/organizations");
    case "org create":
      return call("POST", "/admin/v1/organizations", { name: need("name") });
    case "org add-member":
      return call("POST", `/admin/v1/organizations/${need("org")}/members`, { user_id: need("user") });
    case "org credit":
      return call("POST", `/admin/v1/organizations/${need("org")}/credits`, { amount_microrub: int("amount"), reference: need("reference") });
    case "org balance":
      return call("GET", `/admin/v1/organizations/${need("org")}/balance`);
    case "org ledger":
      return call("GET", `/admin/v1/organizations/${need("org")}/ledger${query({ limit: flags.limit, cursor: flags.cursor })}`);
    case "key create":
      return call("POST", "/admin/v1/keys", {
        user_id: need("user"),
        organization_id: need("org"),
        scopes: need("scopes")
          .split(",")
          .map((s) => s.trim()),
        daily_budget_microrub: int("daily-budget"),
        ...(flags.name ? { name: flags.name } : {}),
      });
    case "key get":
      return call("GET", `/admin/v1/keys/${need("key")}`);
    case "key list":
      return call("GET", `/admin/v1/keys${query({ organization_id: flags.org })}`);
    case "key revoke":
      return call("POST", `/admin/v1/keys/${need("key")}/revoke`);
    case "key usage":
      return call("GET", `/admin/v1/keys/${need("key")}/usage`);
    case "model put": {
      const text = flags.file ? readFileSync(flags.file, "utf8") : need("json");
      return call("PUT", `/admin/v1/models/${encodeURIComponent(need("id"))}`, JSON.parse(text));
    }
    case "model list":
      return call("GET", "/admin/v1/models");
    case "holds":
      return call("GET", `/admin/v1/holds${query({ status: flags.status, older_than_s: flags["older-than"] })}`);
    case "holds release":
      return call("POST", `/admin/v1/holds/${need("hold")}/release`, { reason: need("reason") });
    default:
      throw new UsageError(resource ? `unknown command: ${positionals.join(" ")}` : "a command is required");
  }
}

function baseUrl(): string {
  return process.env.METER_URL ?? `http://127.0.0.1:${process.env.GATEWAY_PORT ?? ServiceCatalog.gateway.port}`;
}

/** Prints the API's answer; `then` may add to it (a successful answer only). */
async function call(method: string, path: string, body?: unknown, then?: (answer: unknown) => void): Promise<number> {
  const res = await fetch(baseUrl() + path, {
    method,
    headers: { authorization: `Bearer ${adminToken()}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let answer: unknown = text;
  try {
    answer = JSON.parse(text);
    console.log(JSON.stringify(answer, null, 2));
  } catch {
    console.log(text);
  }
  if (res.ok) then?.(answer);
  return res.ok ? 0 : 1;
}

function adminToken(): string {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  try {
    const secrets = JSON.parse(readFileSync(".local/secrets.json", "utf8")) as { ADMIN_TOKEN?: string };
    if (secrets.ADMIN_TOKEN) return secrets.ADMIN_TOKEN;
  } catch {
    // fall through to the error below
  }
  throw new UsageError("set ADMIN_TOKEN (or run `npm start` first, which writes .local/secrets.json)");
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e instanceof UsageError ? `${e.message}\n\n${USAGE}` : e);
    process.exit(2);
  },
);
