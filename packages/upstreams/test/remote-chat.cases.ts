import { createServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import type { ProviderKind } from "@meter/contracts";
import { startFakeUpstream, type FakeUpstream } from "@meter/testing";
import { chatProviderFor, closeUpstreamAgents } from "../src";
import { UpstreamError, type ChatProvider, type ChatRequest } from "../src";

export const KEY_ENV = "TEST_UPSTREAM_KEY";
export const KEY = "sk-test-0123456789abcdef";

export interface RemoteCase {
  kind: Exclude<ProviderKind, "local">;
  /** The path the adapter posts to, as the fake records it. */
  path: string;
  /** The catalog base_url for an upstream at this origin. */
  baseUrl(origin: string): string;
  /** The smallest maxTokens this upstream accepts (OpenAI Responses: 16). */
  minMaxTokens: number;
}

export const request = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "upstream-model-1",
  messages: [{ role: "user", text }],
  maxTokens: 64,
  ...extra,
});

/** The UpstreamError a call ends with (failing the test if it succeeds or throws anything else). */
export async function failureOf(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(UpstreamError);
    return e as UpstreamError;
  }
  throw new Error("expected the call to fail");
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A TCP server that accepts connections and never says a word (a TLS handshake to it hangs). */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Helpers for a test file of one adapter, on one fake upstream. */
export function remoteHarness(c: RemoteCase) {
  const h = {
    fake: undefined as unknown as FakeUpstream,
    /** The upstream keys the service read at start, by variable name. */
    keys: new Map<string, string>([[KEY_ENV, KEY]]),
    provider(overrides: { base_url?: string; api_key_env?: string | undefined } = {}): ChatProvider {
      return chatProviderFor({ kind: c.kind, base_url: c.baseUrl(h.fake.url), api_key_env: KEY_ENV, ...overrides }, h.keys);
    },
  };
  beforeAll(async () => {
    h.fake = await startFakeUpstream();
  });
  afterEach(() => h.fake.reset());
  afterAll(async () => {
    await closeUpstreamAgents();
    await h.fake.close();
  });
  return h;
}

/** What every remote adapter must do with failures: the kind decides what happens to the money. */
export function describeRemoteFailures(c: RemoteCase, h: ReturnType<typeof remoteHarness>): void {
  const call = (opts: { timeoutMs?: number; signal?: AbortSignal } = {}, provider = h.provider()) =>
    provider.complete(request("hello", { maxTokens: Math.max(64, c.minMaxTokens) }), {
      timeoutMs: opts.timeoutMs ?? 5_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });

  describe(`${c.kind}: failures`, () => {
    it.each([400, 401, 403, 404, 413, 422])("HTTP %i -> rejected, with the upstream's message", async (status) => {
      h.fake.configure({ status });
      const err = await failureOf(call());
      expect({ kind: err.kind, status: err.status }).toEqual({ kind: "rejected", status });
      expect(err.message).toContain("the fake upstream was told to fail");
    });

    it.each([408, 429, 500, 502, 503, 529])("HTTP %i -> failed", async (status) => {
      h.fake.configure({ status });
      const err = await failureOf(call());
      expect({ kind: err.kind, status: err.status }).toEqual({ kind: "failed", status });
    });

    it("a 3xx (a wrong base_url) -> rejected", async () => {
      h.fake.configure({ status: 302, errorBody: "" });
      expect((await failureOf(call())).kind).toBe("rejected");
    });

    it("never repeats the API key the upstream echoes in its error", async () => {
      h.fake.configure({ status: 401, errorBody: { error: { message: `Incorrect API key provided: ${KEY}`, type: "invalid_request_error" } } });
      const err = await failureOf(call());
      expect(err.kind).toBe("rejected");
      expect(err.message).toContain("Incorrect API key provided");
      expect(err.message).not.toContain(KEY);
      expect(err.message).not.toContain(KEY.slice(-8));
    });

    it("an HTML error page is summarised, not quoted", async () => {
      h.fake.configure({ status: 502, errorBody: "<html><body>Bad Gateway</body></html>" });
      const err = await failureOf(call());
      expect(err.kind).toBe("failed");
      expect(err.message).not.toContain("<html>");
    });

    it("connection refused -> not_sent", async () => {
      const port = await closedPort();
      const err = await failureOf(call({}, h.provider({ base_url: c.baseUrl(`http://127.0.0.1:${port}`) })));
      expect(err.kind).toBe("not_sent");
      expect(err.message).toContain("ECONNREFUSED");
    });

    it("a connection not established within timeoutMs (TLS handshake never answered) -> not_sent, promptly", async () => {
      const silent = await silentServer();
      try {
        const started = Date.now();
        const err = await failureOf(call({ timeoutMs: 300 }, h.provider({ base_url: c.baseUrl(`https://127.0.0.1:${silent.port}`) })));
        expect(err.kind).toBe("not_sent");
        expect(Date.now() - started).toBeLessThan(2_000);
      } finally {
        await silent.close();
      }
    });

    it("an unset API key variable -> not_sent, nothing sent", async () => {
      const err = await failureOf(call({}, h.provider({ api_key_env: "TEST_UPSTREAM_KEY_NOT_SET" })));
      expect(err.kind).toBe("not_sent");
      expect(err.message).toContain("TEST_UPSTREAM_KEY_NOT_SET");
      expect(h.fake.callCount()).toBe(0);
    });

    it("no base_url -> not_sent", async () => {
      const provider = chatProviderFor({ kind: c.kind, api_key_env: KEY_ENV }, h.keys);
      expect((await failureOf(provider.complete(request("x"), { timeoutMs: 1000 }))).kind).toBe("not_sent");
    });

    it("no answer within timeoutMs -> unknown, promptly", async () => {
      h.fake.configure({ delayMs: 1_500 });
      const started = Date.now();
      const err = await failureOf(call({ timeoutMs: 300 }));
      expect(err.kind).toBe("unknown");
      expect(Date.now() - started).toBeLessThan(1_200);
      expect(h.fake.callCount()).toBe(1);
    });

    it("connection dropped before the answer -> unknown", async () => {
      h.fake.configure({ drop: "before-response" });
      expect((await failureOf(call())).kind).toBe("unknown");
      expect(h.fake.callCount()).toBe(1);
    });

    it("connection dropped in the middle of a 200 body -> unknown", async () => {
      h.fake.configure({ drop: "mid-body" });
      expect((await failureOf(call())).kind).toBe("unknown");
    });

    it("a 200 that is not JSON -> unknown", async () => {
      h.fake.configure({ status: 200, errorBody: "<html>ok?</html>" });
      const err = await failureOf(call());
      expect({ kind: err.kind, status: err.status }).toEqual({ kind: "unknown", status: 200 });
    });

    it("a 200 JSON of the wrong shape -> unknown", async () => {
      h.fake.configure({ status: 200, errorBody: { hello: "world" } });
      expect((await failureOf(call())).kind).toBe("unknown");
    });

    it("the pool recovers after a dropped connection", async () => {
      h.fake.configure({ drop: "before-response", failTimes: 1 });
      expect((await failureOf(call())).kind).toBe("unknown");
      await expect(call()).resolves.toMatchObject({ text: "Fake reply to: hello" });
    });

    it("an abort before the call -> not_sent, nothing sent", async () => {
      const err = await failureOf(call({ signal: AbortSignal.abort() }));
      expect(err.kind).toBe("not_sent");
      expect(h.fake.callCount()).toBe(0);
    });

    it("an abort while waiting for the answer -> unknown, promptly", async () => {
      h.fake.configure({ delayMs: 2_000 });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      const started = Date.now();
      const err = await failureOf(call({ signal: controller.signal }));
      expect(err.kind).toBe("unknown");
      expect(Date.now() - started).toBeLessThan(1_500);
    });

    it.each([
      ["missing", undefined],
      ["negative", undefined],
      ["inflated", { input_tokens: 1_000_000, output_tokens: 1_000_000 }],
    ] as const)("usage %s -> %j", async (usage, expected) => {
      h.fake.configure({ usage });
      const result = await call();
      expect(result.text).toBe("Fake reply to: hello");
      expect(result.usage).toEqual(expected);
    });
  });
}
