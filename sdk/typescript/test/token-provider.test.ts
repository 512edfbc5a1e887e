/**
 * The token provider's rules without a gateway, against a scripted local server (answers the
 * real gateway gives only for tokens a real provider would not issue: opaque tokens, a 401
 * without `invalid_token`): when the provider is asked, what a 401 does, `apiKey` and
 * `tokenProvider` exclusive, and no token in the client or in an error. The same rules against
 * the gateway and a real provider are in oidc.test.ts.
 */

import assert from "node:assert/strict";
import { inspect } from "node:util";
import { after, afterEach, describe, test } from "node:test";

import { AuthenticationError, Forgebench, type TokenProvider } from "@seedlinglabs/forgebench-sdk";

import { startScriptedServer, type ScriptedAnswer, type ScriptedServer } from "./support/proxies.js";
import { rejection } from "./support/util.js";

const A_TASK = {
  id: "7d4c5a8e-0000-4000-8000-000000000001",
  context_id: "c",
  status: { state: "submitted", message: null, timestamp: "t" },
  artifacts: [],
  error: null,
};
const OK: ScriptedAnswer = { status: 200, body: A_TASK };
const INVALID_TOKEN: ScriptedAnswer = {
  status: 401,
  body: { detail: { code: "unauthenticated", message: "invalid token" } },
  headers: { "WWW-Authenticate": 'Bearer error="invalid_token", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"' },
};
const NO_CREDENTIAL: ScriptedAnswer = {
  status: 401,
  body: { detail: { code: "unauthenticated", message: "unknown key" } },
  headers: { "WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"' },
};

const servers: ScriptedServer[] = [];
after(() => Promise.all(servers.map((server) => server.close())));

async function scripted(script: readonly ScriptedAnswer[]): Promise<ScriptedServer> {
  const server = await startScriptedServer(script);
  servers.push(server);
  return server;
}

/** A JWT-shaped token (never verified by the SDK) whose `exp` is `secondsLeft` from now. */
function jwt(secondsLeft: number, id: number): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const exp = Math.floor(Date.now() / 1000) + secondsLeft;
  return `${part({ alg: "RS256", typ: "JWT" })}.${part({ sub: "workload", exp, jti: id })}.c2lnbmF0dXJl`;
}

/** A provider answering `make(n)` for its n-th call (from 1), counting its calls. */
function counting(make: (call: number) => ReturnType<TokenProvider>): { provider: TokenProvider; calls: () => number } {
  let calls = 0;
  return { provider: () => make(++calls), calls: () => calls };
}

function sentTokens(server: ScriptedServer): (string | undefined)[] {
  return server.received().map((request) => request.headers.authorization?.replace(/^Bearer /, ""));
}

describe("when the token provider is asked", () => {
  test("a JWT with a distant exp is kept; one within 60 s of it is asked for every request", async () => {
    const server = await scripted([OK]);
    const distant = counting((call) => jwt(3600, call));
    const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: distant.provider });
    for (let i = 0; i < 3; i++) await forgebench.agents.getTask("callee", A_TASK.id);
    assert.equal(distant.calls(), 1);
    assert.deepEqual(new Set(sentTokens(server)).size, 1);

    const close = counting((call) => jwt(59, call));
    const closeClient = new Forgebench({ baseUrl: server.url, tokenProvider: close.provider });
    for (let i = 0; i < 3; i++) await closeClient.agents.getTask("callee", A_TASK.id);
    assert.equal(close.calls(), 3);
  });

  test("a kept token is asked for again once the clock is within 60 s of its expiry (exp, or expiresIn)", async (t) => {
    const server = await scripted([OK]);
    t.mock.timers.enable({ apis: ["Date"], now: Date.now() });
    // exp 64 s away (whole seconds): kept for between 3 and 4 s; expiresIn 63: kept for 3 s
    const byExp = counting((call) => jwt(64, call));
    const byExpiresIn = counting((call) => ({ token: `opaque-${call}`, expiresIn: 63 }));
    const clients = [byExp, byExpiresIn].map(({ provider }) => new Forgebench({ baseUrl: server.url, tokenProvider: provider }));
    const requestAll = () => Promise.all(clients.map((client) => client.agents.getTask("callee", A_TASK.id)));
    await requestAll();
    t.mock.timers.tick(2_000);
    await requestAll();
    assert.deepEqual([byExp.calls(), byExpiresIn.calls()], [1, 1], "kept while more than 60 s are left");
    t.mock.timers.tick(2_500);
    await requestAll();
    assert.deepEqual([byExp.calls(), byExpiresIn.calls()], [2, 2], "asked again once 60 s or less are left");
  });

  test("a token whose expiry is known neither way is asked for before every request; expiresIn wins over exp", async () => {
    const server = await scripted([OK]);
    const opaque = counting((call) => `opaque-${call}`);
    const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: opaque.provider });
    await forgebench.agents.getTask("callee", A_TASK.id);
    await forgebench.agents.getTask("callee", A_TASK.id);
    assert.equal(opaque.calls(), 2);
    assert.deepEqual(sentTokens(server), ["opaque-1", "opaque-2"]);

    // an opaque token with an expiresIn is kept; a JWT's distant exp yields to a short expiresIn
    const kept = counting(async (call) => ({ token: `opaque-kept-${call}`, expiresIn: 3600 }));
    const keptClient = new Forgebench({ baseUrl: server.url, tokenProvider: kept.provider });
    await keptClient.agents.getTask("callee", A_TASK.id);
    await keptClient.agents.getTask("callee", A_TASK.id);
    assert.equal(kept.calls(), 1);
    const short = counting((call) => ({ token: jwt(3600, call), expiresIn: 30 }));
    const shortClient = new Forgebench({ baseUrl: server.url, tokenProvider: short.provider });
    await shortClient.agents.getTask("callee", A_TASK.id);
    await shortClient.agents.getTask("callee", A_TASK.id);
    assert.equal(short.calls(), 2);
  });
});

describe("a 401", () => {
  test("invalid_token: a new token and the request once more, even a POST, even with maxRetries 0", async () => {
    const server = await scripted([INVALID_TOKEN, OK]);
    const tokens = counting((call) => jwt(3600, call));
    const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: tokens.provider, maxRetries: 0 });
    const task = await forgebench.agents.call("callee", { text: "hello", messageId: "m-1" });
    assert.equal(task.id, A_TASK.id);
    assert.equal(tokens.calls(), 2);
    const [first, second, ...more] = server.received();
    assert.equal(more.length, 0);
    assert.notEqual(first?.headers.authorization, second?.headers.authorization);
    assert.deepEqual(second?.body, first?.body, "the same request");
  });

  test("invalid_token twice: AuthenticationError after one new token; without invalid_token: no new token", async () => {
    const refused = await scripted([INVALID_TOKEN]);
    const tokens = counting((call) => jwt(3600, call));
    const error = await rejection(new Forgebench({ baseUrl: refused.url, tokenProvider: tokens.provider }).agents.getTask("callee", "t"));
    assert.ok(error instanceof AuthenticationError);
    assert.equal(tokens.calls(), 2);
    assert.equal(refused.received().length, 2);
    for (const token of sentTokens(refused)) {
      assert.ok(token !== undefined && !inspect(error, { depth: 10 }).includes(token), "no token in the error");
    }

    const unknown = await scripted([NO_CREDENTIAL]);
    const once = counting((call) => jwt(3600, call));
    assert.ok((await rejection(new Forgebench({ baseUrl: unknown.url, tokenProvider: once.provider }).agents.getTask("callee", "t"))) instanceof AuthenticationError);
    assert.equal(once.calls(), 1);
    assert.equal(unknown.received().length, 1);
  });

  test("invalid_token with a key: the key is not replaced, one request only", async () => {
    const server = await scripted([INVALID_TOKEN]);
    const error = await rejection(new Forgebench({ baseUrl: server.url, apiKey: "fb_agt_" + "1".repeat(64) }).agents.getTask("callee", "t"));
    assert.ok(error instanceof AuthenticationError);
    assert.equal(server.received().length, 1);
  });
});

describe("the provider's answers and errors", () => {
  test("what the provider throws reaches the caller as it is, and nothing is sent", async () => {
    const server = await scripted([OK]);
    const failure = new Error("the identity endpoint is down");
    const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: async () => { throw failure; } });
    assert.equal(await rejection(forgebench.agents.getTask("callee", "t")), failure);
    assert.equal(server.received().length, 0);
  });

  test("an answer that is no token is a TypeError that does not show it", async () => {
    const server = await scripted([OK]);
    const answers: unknown[] = ["", { token: "" }, { token: "secret-token-1", expiresIn: "soon" }, { access_token: "secret-token-2" }, 42];
    for (const answer of answers) {
      const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: () => answer as string });
      const error = await rejection(forgebench.agents.getTask("callee", "t"));
      assert.ok(error instanceof TypeError, String(error));
      assert.ok(!error.message.includes("secret-token"), error.message);
    }
    assert.equal(server.received().length, 0);
  });
});

describe("apiKey or tokenProvider", () => {
  const saved = process.env.FORGEBENCH_API_KEY;
  afterEach(() => {
    if (saved === undefined) delete process.env.FORGEBENCH_API_KEY;
    else process.env.FORGEBENCH_API_KEY = saved;
  });

  test("both, or neither, is a TypeError before any request", () => {
    delete process.env.FORGEBENCH_API_KEY;
    assert.throws(
      () => new Forgebench({ baseUrl: "http://127.0.0.1:1", apiKey: "fb_agt_x", tokenProvider: () => "t" }),
      (error: unknown) => error instanceof TypeError && /not both/.test(error.message) && !error.message.includes("fb_agt_x"),
    );
    assert.throws(() => new Forgebench({ baseUrl: "http://127.0.0.1:1" }), /apiKey.*FORGEBENCH_API_KEY.*tokenProvider/);
    assert.throws(() => new Forgebench({ baseUrl: "http://127.0.0.1:1", tokenProvider: "t" as unknown as TokenProvider }), TypeError);
  });

  test("with a provider, FORGEBENCH_API_KEY is not read nor sent", async () => {
    process.env.FORGEBENCH_API_KEY = "fb_agt_" + "9".repeat(64);
    const server = await scripted([OK]);
    await new Forgebench({ baseUrl: server.url, tokenProvider: () => "opaque-token" }).agents.getTask("callee", A_TASK.id);
    assert.deepEqual(sentTokens(server), ["opaque-token"]);
  });

  test("no token shows in the client: inspect, JSON, its enumerable fields", async () => {
    const server = await scripted([OK]);
    const token = jwt(3600, 1);
    const forgebench = new Forgebench({ baseUrl: server.url, tokenProvider: () => token });
    await forgebench.agents.getTask("callee", A_TASK.id);
    assert.ok(!inspect(forgebench, { depth: 10, showHidden: true }).includes(token));
    assert.ok(!JSON.stringify(forgebench).includes(token));
  });
});
