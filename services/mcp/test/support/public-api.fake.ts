import type { KeyIdentity } from "@meter/contracts";
import { ApiUnreachable, type ApiRequest, type ApiResponse, type PublicApi } from "../../src/domain/public-api";
import type { Caller } from "../../src/domain/tool-call";

type Answer = ApiResponse | ApiUnreachable | ((req: ApiRequest) => ApiResponse | ApiUnreachable);

/**
 * The public API for the tools' unit tests: answers scripted per `METHOD path`, in order (the last one
 * repeats), every request recorded, so the job tools' waiting, linking and inlining are exercised
 * against the contract's shapes without a gateway and media-jobs behind it.
 */
export class FakePublicApi implements PublicApi {
  readonly requests: ApiRequest[] = [];
  private readonly answers = new Map<string, Answer[]>();

  on(method: ApiRequest["method"], path: string, ...answers: Answer[]): this {
    this.answers.set(`${method} ${path}`, answers);
    return this;
  }

  async call(_caller: Caller, req: ApiRequest): Promise<ApiResponse> {
    this.requests.push(req);
    const queue = this.answers.get(`${req.method} ${req.path}`);
    if (!queue || queue.length === 0) throw new Error(`unexpected ${req.method} ${req.path}`);
    const next = queue.length > 1 ? queue.shift()! : queue[0]!;
    const answer = typeof next === "function" ? next(req) : next;
    if (answer instanceof ApiUnreachable) throw answer;
    return answer;
  }

  async close(): Promise<void> {}
}

export const ok = (body: unknown, status = 200): ApiResponse => ({ status, body, retryAfterS: undefined });

export function testCaller(signal: AbortSignal = new AbortController().signal): Caller {
  const identity: KeyIdentity = {
    kind: "key",
    key_id: "00000000-0000-4000-8000-000000000001",
    user_id: "00000000-0000-4000-8000-000000000002",
    organization_id: "00000000-0000-4000-8000-000000000003",
    scopes: ["mcp:read", "mcp:invoke", "text", "images"],
  };
  return { identity, authorization: "Bearer sk-test", publicBaseUrl: "https://api.example.test", requestId: "req_test", signal };
}
