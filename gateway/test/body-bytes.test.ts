import { FAKE_MODEL, startStack, type Stack, type TestAccount } from "@meter/testing";
import { outcomeOf, rawExchange, writeChunked, type RawAnswer } from "./support/raw-http";

/**
 * One body, one reading: what the gateway reads is what the service reads. A chunked body is forwarded
 * as the bytes read with their length, and a JSON body is UTF-8 at both ends. Through the real
 * gateway, text and files services (each built by its composition root), billing and a fake upstream.
 */
let stack: Stack;
let account: TestAccount;

beforeAll(async () => {
  stack = await startStack({ services: ["billing-ledger", "text", "files", "gateway"], workers: false });
  account = await stack.account({ scopes: ["text", "files:write"] });
}, 120_000);
afterAll(async () => {
  await stack?.assertBooksBalance();
  await stack?.close();
});

const messageBody = { model: FAKE_MODEL, max_tokens: 16, messages: [{ role: "user", content: "hello there" }] };
const fileBody = { filename: "a.png", mime_type: "image/png", size_bytes: 100, sha256: "a".repeat(64) };

const ROUTES = [
  { path: "/v1/chat/quote", body: messageBody, headers: () => ({ "x-api-key": account.key }), answers: 200, object: "quote" },
  {
    path: "/v1/messages",
    body: messageBody,
    headers: () => ({ "x-api-key": account.key, "idempotency-key": `chunked-${Math.random()}` }),
    answers: 200,
    type: "message",
  },
  { path: "/v1/files", body: fileBody, headers: () => ({ authorization: `Bearer ${account.key}` }), answers: 201, object: "file" },
];

async function fileCount(): Promise<number> {
  const res = await fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${account.key}` } });
  return ((await res.json()) as { data: unknown[] }).data.length;
}

function post(path: string, headers: Record<string, string>, body: Buffer, chunked: boolean): Promise<RawAnswer> {
  return rawExchange(
    stack.url,
    {
      method: "POST",
      path,
      headers: { ...headers, ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": body.length }), connection: "close" },
    },
    (socket) => {
      if (chunked) return writeChunked(socket, body);
      socket.write(body);
    },
  );
}

describe("a chunked JSON body", () => {
  it.each(ROUTES)("to $path is read once and served", async (route) => {
    const answer = await post(route.path, { "content-type": "application/json", ...route.headers() }, Buffer.from(JSON.stringify(route.body)), true);
    expect({ status: answer.status, body: answer.body.length > 0 ? (JSON.parse(answer.body) as unknown) : "(empty)" }).toEqual({
      status: route.answers,
      body: expect.objectContaining(route.object ? { object: route.object } : { type: route.type }),
    });
  });
});

describe("a JSON body declared in another charset than UTF-8", () => {
  const utf16 = (s: string) => Buffer.from(s, "utf16le");
  // `{"a":"+AGEAYgBj-"}` is valid UTF-8 JSON too: read as UTF-7 it is another string.
  const utf7 = (s: string) => Buffer.from(s.replace("hello there", "+AGgAZQBsAGwAbw- there"), "utf8");

  it.each(
    ROUTES.flatMap((route) => [
      { ...route, charset: "utf-16", encode: utf16 },
      { ...route, charset: "UTF-7", encode: utf7 },
    ]),
  )("to $path ($charset) is 415 unsupported_media_type at the gateway, nothing reserved", async (route) => {
    const callsBefore = stack.fake.callCount();
    const filesBefore = await fileCount();
    const answer = await post(
      route.path,
      { "content-type": `application/json; charset=${route.charset}`, ...route.headers() },
      route.encode(JSON.stringify(route.body)),
      false,
    );
    expect(outcomeOf(answer)).toEqual({ status: 415, code: "unsupported_media_type" });
    expect(stack.fake.callCount()).toBe(callsBefore);
    expect(await fileCount()).toBe(filesBefore);
    expect((await stack.settledBalance(account.organizationId)).reserved_microrub).toBe(0);
  });

  it("is accepted when it says charset=utf-8 (any case, quoted or not)", async () => {
    for (const contentType of ["application/json; charset=utf-8", 'application/json;charset="UTF-8"']) {
      const answer = await post("/v1/chat/quote", { "content-type": contentType, "x-api-key": account.key }, Buffer.from(JSON.stringify(messageBody)), false);
      expect(answer.status).toBe(200);
    }
  });
});

describe("a JSON body that is not well-formed UTF-8", () => {
  // Bytes no UTF-8 text has (a lone 0xFF, a cut 2-byte sequence) inside a string of the body.
  const withBadBytes = (json: string, after: string) => {
    const raw = Buffer.from(json);
    const at = raw.indexOf(after) + after.length;
    return Buffer.concat([raw.subarray(0, at), Buffer.from([0xff, 0xc3]), raw.subarray(at)]);
  };

  it.each(ROUTES)("to $path is 400 invalid_json at the gateway, nothing reserved or called", async (route) => {
    const callsBefore = stack.fake.callCount();
    const filesBefore = await fileCount();
    const body = withBadBytes(JSON.stringify(route.body), route.path === "/v1/files" ? '"a' : '"hello');
    const answer = await post(route.path, { "content-type": "application/json", ...route.headers() }, body, false);
    expect(outcomeOf(answer)).toEqual({ status: 400, code: "invalid_json" });
    expect(stack.fake.callCount()).toBe(callsBefore);
    expect(await fileCount()).toBe(filesBefore);
    expect((await stack.settledBalance(account.organizationId)).reserved_microrub).toBe(0);
  });
});
