/**
 * Requests, error classes and retries against a scripted local server (statuses the real
 * gateway cannot be made to answer on demand: 413, 429, 500, 503, a dropped connection).
 */

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, describe, test } from "node:test";

import {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  DEFAULT_MAX_RETRIES,
  Forgebench,
  ForgebenchError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  UnprocessableEntityError,
  reply,
} from "@seedlinglabs/forgebench-sdk";

import { startScriptedServer, type ScriptedAnswer, type ScriptedServer } from "./support/proxies.js";
import { rejection } from "./support/util.js";

const KEY = "fb_agt_" + "0".repeat(64);
const servers: ScriptedServer[] = [];
after(() => Promise.all(servers.map((server) => server.close())));

async function scripted(script: readonly (ScriptedAnswer | "drop")[]): Promise<ScriptedServer> {
  const server = await startScriptedServer(script);
  servers.push(server);
  return server;
}

function client(server: ScriptedServer, maxRetries = 4): Forgebench {
  return new Forgebench({ baseUrl: server.url + "/", apiKey: KEY, maxRetries });
}

const A_TASK = {
  id: "7d4c5a8e-0000-4000-8000-000000000001",
  context_id: "c",
  status: { state: "submitted", message: null, timestamp: "t" },
  artifacts: [],
  error: null,
};

describe("each refusal status is its own error class, with the status and the body", () => {
  const cases: [number, unknown, new (...args: never[]) => ForgebenchError][] = [
    [400, { detail: { code: "invalid_request", message: "wait must be 0-30" } }, BadRequestError],
    [401, { detail: { code: "unauthenticated", message: "unknown key" } }, AuthenticationError],
    [403, { detail: { code: "not_permitted", message: "not permitted to call that agent" } }, PermissionDeniedError],
    [404, { detail: "task not found" }, NotFoundError],
    [409, { detail: { code: "task_not_working", state: "canceled" } }, ConflictError],
    [413, { detail: { code: "too_large", message: "past 4 MiB" } }, PayloadTooLargeError],
    [422, { detail: "a pull result must be completed, failed, or input_required" }, UnprocessableEntityError],
    [429, { detail: { code: "too_many_requests", message: "10 polls" } }, RateLimitError],
    [503, { detail: { code: "unavailable", message: "store" } }, ServiceUnavailableError],
    [500, { detail: { code: "internal", message: "internal error" } }, InternalServerError],
  ];
  for (const [status, body, ErrorClass] of cases) {
    test(`${status} → ${ErrorClass.name}`, async () => {
      const server = await scripted([{ status, body, headers: { "Retry-After": "0" } }]);
      const error = await rejection(client(server, 0).agents.getTask("callee", "t1"));
      assert.ok(error instanceof ErrorClass, `${String(error)} is a ${ErrorClass.name}`);
      assert.ok(error instanceof ForgebenchError);
      assert.equal(error.constructor, ErrorClass);
      assert.equal(error.status, status);
      assert.deepEqual(error.body, body);
    });
  }

  test("the error's code, detail and a conflict's state come from the body", async () => {
    const server = await scripted([{ status: 409, body: { detail: { code: "task_not_working", state: "completed" } } }]);
    const error = await rejection(client(server, 0).agents.reply("t1", { state: "completed" }));
    assert.ok(error instanceof ConflictError);
    assert.equal(error.code, "task_not_working");
    assert.equal(error.state, "completed");
    assert.match(error.message, /409: task_not_working/);
  });
});

describe("the behaviour every SDK shares (docs/sdks.md)", () => {
  const UNAVAILABLE: ScriptedAnswer = { status: 503, body: { detail: { code: "unavailable", message: "x" } } };
  const BAD_GATEWAY: ScriptedAnswer = { status: 502, body: "<html>502 Bad Gateway</html>" };

  test("by default a request is retried twice: three attempts, 0.5 s then 1 s apart (give or take 25 %)", async () => {
    const server = await scripted([UNAVAILABLE]);
    const started = Date.now();
    const error = await rejection(new Forgebench({ baseUrl: server.url, apiKey: KEY }).agents.getTask("callee", "t1"));
    const elapsed = Date.now() - started;
    assert.equal(DEFAULT_MAX_RETRIES, 2);
    assert.ok(error instanceof ServiceUnavailableError);
    assert.ok(error instanceof InternalServerError, "a 503 is a kind of InternalServerError, as in Python");
    assert.equal(server.received().length, 3);
    assert.ok(elapsed >= 1_100 && elapsed < 2_500, `${elapsed} ms between the three attempts`);
  });

  test("a 502 is retried for a GET but not for a POST that is not safe to repeat", async () => {
    const read = await scripted([BAD_GATEWAY, { status: 200, body: A_TASK }]);
    const result = await scripted([BAD_GATEWAY, { status: 200, body: A_TASK }]);
    const task = await client(read, 2).agents.getTask("callee", A_TASK.id);
    const error = await rejection(client(result, 2).agents.reply("t1", reply.done({ text: "done" })));
    assert.equal(task.id, A_TASK.id);
    assert.equal(read.received().length, 2);
    assert.ok(error instanceof InternalServerError);
    assert.equal(error.status, 502);
    assert.equal(result.received().length, 1, "a result without message_id was sent once");
  });

  test("a 504 on a call is retried: its message_id makes it safe to repeat", async () => {
    const server = await scripted([{ status: 504 }, { status: 200, body: A_TASK }]);
    await client(server, 2).agents.call("callee", { text: "hi" });
    const [first, second] = server.received();
    assert.equal(server.received().length, 2);
    assert.deepEqual(first?.body, second?.body);
  });

  test("a dropped connection is not retried for a POST that is not safe to repeat", async () => {
    const server = await scripted(["drop", { status: 200, body: A_TASK }]);
    const error = await rejection(client(server, 2).agents.reply("t1", reply.done({ text: "done" })));
    assert.ok(error instanceof ConnectionError);
    assert.ok(error instanceof APIConnectionError, "APIConnectionError is the same class");
    assert.equal(server.received().length, 1);
  });

  test("a 429 waits its Retry-After (seconds, fractions allowed), even for a POST not safe to repeat", async () => {
    const server = await scripted([
      { status: 429, body: { detail: { code: "too_many_requests", message: "x" } }, headers: { "Retry-After": "1.2" } },
      { status: 200, body: A_TASK },
    ]);
    const started = Date.now();
    await client(server, 2).agents.reply("t1", reply.done({ text: "done" }));
    const elapsed = Date.now() - started;
    assert.equal(server.received().length, 2);
    // the backoff alone would be at most 0.625 s
    assert.ok(elapsed >= 1_150 && elapsed < 2_500, `waited ${elapsed} ms for a Retry-After of 1.2 s`);
  });

  test("a Retry-After longer than 30 s is not waited for: the error says how long", async () => {
    const server = await scripted([
      { status: 429, body: { detail: { code: "too_many_requests", message: "x" } }, headers: { "Retry-After": "31" } },
      { status: 200, body: A_TASK },
    ]);
    const error = await rejection(client(server, 2).agents.getTask("callee", "t1"));
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.retryAfterSeconds, 31);
    assert.equal(server.received().length, 1);
  });

  test("an error carries status, code, and the request id of its body, else of X-Request-Id", async () => {
    const server = await scripted([
      { status: 403, body: { detail: { code: "forbidden", message: "no", request_id: "req-body" } }, headers: { "X-Request-Id": "req-header" } },
      { status: 404, body: { detail: "task not found" }, headers: { "X-Request-Id": "req-header" } },
      { status: 400, body: { detail: { code: "invalid_request", message: "x" } } },
    ]);
    const forgebench = client(server, 0);
    const denied = await rejection(forgebench.agents.cancelTask("callee", "t1"));
    const missing = await rejection(forgebench.agents.getTask("callee", "t1"));
    const bad = await rejection(forgebench.agents.getTask("callee", "t1"));
    assert.ok(denied instanceof PermissionDeniedError && missing instanceof NotFoundError && bad instanceof BadRequestError);
    assert.deepEqual([denied.status, denied.code, denied.requestId], [403, "forbidden", "req-body"]);
    assert.deepEqual([missing.status, missing.code, missing.requestId], [404, undefined, "req-header"]);
    assert.equal(bad.requestId, undefined);
  });

  test("a 422 is an UnprocessableEntityError, by that name", async () => {
    const server = await scripted([{ status: 422, body: { detail: "a pull result must be completed" } }]);
    const error = await rejection(client(server, 2).agents.reply("t1", { state: "completed" }));
    assert.ok(error instanceof UnprocessableEntityError);
    assert.equal(error.name, "UnprocessableEntityError");
    assert.equal(server.received().length, 1);
  });
});

describe("retries", () => {
  test("a 503 is tried again, and the retry's answer is the result", async () => {
    const server = await scripted([{ status: 503, body: { detail: { code: "unavailable", message: "x" } } }, { status: 200, body: A_TASK }]);
    const task = await client(server).agents.getTask("callee", A_TASK.id);
    assert.equal(task.id, A_TASK.id);
    assert.equal(server.received().length, 2);
  });

  test("a 429 waits for Retry-After before trying again", async () => {
    const server = await scripted([
      { status: 429, body: { detail: { code: "too_many_requests", message: "x" } }, headers: { "Retry-After": "1" } },
      { status: 200, body: A_TASK },
    ]);
    const started = Date.now();
    await client(server).agents.getTask("callee", A_TASK.id, { wait: 1 });
    assert.ok(Date.now() - started >= 900, "waited about a second");
    assert.equal(server.received().length, 2);
  });

  test("a 429 with no retries left carries Retry-After", async () => {
    const server = await scripted([
      { status: 429, body: { detail: { code: "too_many_requests", message: "x" } }, headers: { "Retry-After": "3" } },
    ]);
    const error = await rejection(client(server, 0).agents.nextTask({ wait: 5 }));
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.retryAfterSeconds, 3);
  });

  test("a refusal that retrying cannot mend is not retried", async () => {
    for (const status of [400, 404, 409, 413, 422, 500]) {
      const server = await scripted([{ status, body: { detail: "no" } }, { status: 200, body: A_TASK }]);
      await rejection(client(server).agents.getTask("callee", "t1"));
      assert.equal(server.received().length, 1, `${status} was sent once`);
    }
  });

  test("a dropped connection is retried; a call keeps its message_id across the retries", async () => {
    const server = await scripted(["drop", "drop", { status: 200, body: A_TASK }]);
    await client(server).agents.call("callee", { text: "hi" });
    const received = server.received();
    assert.equal(received.length, 3);
    const ids = received.map((request) => (request.body as { message: { message_id: string } }).message.message_id);
    assert.equal(new Set(ids).size, 1);
    assert.match(ids[0] ?? "", /^[0-9a-f-]{36}$/);
  });

  test("two calls get two message ids", async () => {
    const server = await scripted([{ status: 200, body: A_TASK }]);
    const forgebench = client(server);
    await forgebench.agents.call("callee", { text: "one" });
    await forgebench.agents.call("callee", { text: "two" });
    const ids = server.received().map((request) => (request.body as { message: { message_id: string } }).message.message_id);
    assert.notEqual(ids[0], ids[1]);
  });

  test("when every attempt loses its connection, the error is a ConnectionError", async () => {
    const server = await scripted(["drop"]);
    const error = await rejection(client(server, 2).agents.getTask("callee", "t1"));
    assert.ok(error instanceof ConnectionError);
    assert.equal(error.status, 0);
    assert.equal(server.received().length, 3);
  });
});

describe("requests", () => {
  test("the key is a bearer token, names are encoded, and call builds the message", async () => {
    const server = await scripted([{ status: 200, body: A_TASK }]);
    await client(server).agents.call("invoice classifier/x", {
      text: "Classify this invoice",
      data: { invoice_id: "INV-1" },
      parts: [{ file: { uri: "s3://b/k.pdf", mime: "application/pdf" } }],
      wait: 7,
      contextId: "11111111-2222-4333-8444-555555555555",
      parentCallId: "66666666-7777-4888-8999-000000000000",
      messageId: "my-id",
    });
    const [request] = server.received();
    assert.ok(request !== undefined);
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/v1/agents/invoice%20classifier%2Fx/tasks?wait=7");
    assert.equal(request.headers.authorization, `Bearer ${KEY}`);
    assert.equal(request.headers["x-parent-call"], "66666666-7777-4888-8999-000000000000");
    assert.deepEqual(request.body, {
      message: {
        role: "user",
        parts: [
          { text: "Classify this invoice" },
          { data: { invoice_id: "INV-1" } },
          { file: { uri: "s3://b/k.pdf", mime: "application/pdf" } },
        ],
        message_id: "my-id",
      },
      context_id: "11111111-2222-4333-8444-555555555555",
    });
  });

  test("call needs something to say", async () => {
    const server = await scripted([{ status: 200, body: A_TASK }]);
    await assert.rejects(client(server).agents.call("callee", {}), TypeError);
    assert.equal(server.received().length, 0);
  });

  test("a reply's question gets a message_id, and a TaskReply posts its result", async () => {
    const server = await scripted([{ status: 200, body: A_TASK }]);
    const forgebench = client(server);
    await forgebench.agents.reply("t1", reply.ask("which invoice?"));
    const [request] = server.received();
    assert.equal(request?.url, "/v1/agents/me/tasks/t1/result");
    const body = request?.body as { state: string; message: { role: string; parts: unknown[]; message_id?: string } };
    assert.equal(body.state, "input_required");
    assert.equal(body.message.role, "agent");
    assert.deepEqual(body.message.parts, [{ text: "which invoice?" }]);
    assert.match(body.message.message_id ?? "", /^[0-9a-f-]{36}$/);
  });

  test("nextTask is null on 204", async () => {
    const server = await scripted([{ status: 204 }]);
    assert.equal(await client(server).agents.nextTask({ wait: 3 }), null);
    assert.equal(server.received()[0]?.url, "/v1/agents/me/tasks/next?wait=3");
  });

  test("an aborted signal ends a waiting request at once, without a retry", async () => {
    const server = await startHangingServer();
    const controller = new AbortController();
    const pending = client(server).agents.nextTask({ wait: 20, signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const error = await rejection(pending);
    assert.equal((error as Error).name, "AbortError");
    assert.ok(Date.now() - started < 2_000);
    assert.equal(server.received().length, 1);
  });

  test("an answer that is not a task is an error", async () => {
    const server = await scripted([{ status: 200, body: { hello: "world" } }]);
    const error = await rejection(client(server).agents.getTask("callee", "t1"));
    assert.ok(error instanceof ForgebenchError);
    assert.deepEqual(error.body, { hello: "world" });
  });

  test("a client needs a key", () => {
    assert.throws(() => new Forgebench({ baseUrl: "http://127.0.0.1:1", apiKey: "" }), TypeError);
    assert.throws(() => new Forgebench({ apiKey: undefined as unknown as string }), TypeError);
  });
});

describe("a binding's contract: quota_exceeded, the skill, and updateBinding", () => {
  const QUOTA_EXCEEDED = { detail: { code: "quota_exceeded", message: "the binding's rate of 1 tasks a minute is reached" } };
  const A_BINDING = {
    id: "b-1",
    caller_agent_id: "a-caller",
    callee_agent_id: "a-callee",
    source: "api",
    revoked: false,
    approved_at: "2026-12-06T10:00:00.000000Z",
    limits: { max_call_depth: 4, refuse_cycles: null, max_fan_out: null, max_open_in_tree: null },
    contract: { skills: ["lookup"], rate_per_minute: null, max_concurrent: null, daily_quota: null },
    usage: { minute: null, day: null, open: null },
  };

  test("an open past its contract is a RateLimitError with code quota_exceeded and its Retry-After", async () => {
    const server = await scripted([{ status: 429, body: QUOTA_EXCEEDED, headers: { "Retry-After": "17" } }]);
    const error = await rejection(client(server, 0).agents.call("callee", { text: "Classify INV-2" }));
    assert.ok(error instanceof RateLimitError, String(error));
    assert.deepEqual([error.status, error.code, error.retryAfterSeconds], [429, "quota_exceeded", 17]);
    assert.deepEqual(error.body, QUOTA_EXCEEDED);
    assert.match(error.message, /429: quota_exceeded: the binding's rate/);
    assert.equal(server.received().length, 1);
  });

  test("a quota_exceeded open is sent again after its Retry-After with the same message_id (it opened nothing)", async () => {
    const server = await scripted([
      { status: 429, body: QUOTA_EXCEEDED, headers: { "Retry-After": "1" } },
      { status: 200, body: { ...A_TASK, skill: "lookup" } },
    ]);
    const started = Date.now();
    const task = await client(server, 2).agents.call("callee", { text: "Classify", skill: "lookup" });
    assert.ok(Date.now() - started >= 900, "waited about a second");
    assert.equal(task.skill, "lookup");
    const [first, second] = server.received();
    assert.equal(server.received().length, 2);
    assert.deepEqual(first?.body, second?.body);
    assert.equal((first?.body as { skill?: string }).skill, "lookup");
  });

  test("a quota whose Retry-After is past 30 s (the daily quota's) is thrown at once", async () => {
    const daily = { detail: { code: "quota_exceeded", message: "the binding's daily quota of 10 tasks is reached" } };
    const server = await scripted([{ status: 429, body: daily, headers: { "Retry-After": "40000" } }, { status: 200, body: A_TASK }]);
    const error = await rejection(client(server, 2).agents.call("callee", { text: "Classify" }));
    assert.ok(error instanceof RateLimitError);
    assert.deepEqual([error.code, error.retryAfterSeconds], ["quota_exceeded", 40000]);
    assert.equal(server.received().length, 1);
  });

  test("an open sends its skill only when given; an empty one is refused before anything is sent", async () => {
    const server = await scripted([{ status: 200, body: A_TASK }]);
    await client(server).agents.call("callee", { text: "a" });
    await client(server).agents.call("callee", { text: "b", skill: "lookup" });
    await assert.rejects(client(server).agents.call("callee", { text: "c", skill: "" }), TypeError);
    const [plain, named] = server.received();
    assert.equal(server.received().length, 2);
    assert.ok(!("skill" in (plain?.body as object)));
    assert.equal((named?.body as { skill?: string }).skill, "lookup");
  });

  test("updateBinding PATCHes the merge patches as given, null included, and is not sent again after a lost answer", async () => {
    const server = await scripted([{ status: 200, body: A_BINDING }]);
    const forgebench = client(server);
    const updated = await forgebench.agents.updateBinding("billing orchestrator", "b-1", {
      limits: { max_call_depth: 4, max_fan_out: null },
      contract: { skills: ["lookup"], rate_per_minute: null },
    });
    await forgebench.agents.updateBinding("invoice-classifier", "b-1", { contract: { daily_quota: 10 } });
    await forgebench.agents.updateBinding("invoice-classifier", "b-1", {});
    assert.deepEqual(updated, A_BINDING);
    const received = server.received();
    assert.deepEqual(
      received.map((request) => [request.method, request.url, request.body]),
      [
        ["PATCH", "/v1/agents/billing%20orchestrator/agents/b-1", { limits: { max_call_depth: 4, max_fan_out: null }, contract: { skills: ["lookup"], rate_per_minute: null } }],
        ["PATCH", "/v1/agents/invoice-classifier/agents/b-1", { contract: { daily_quota: 10 } }],
        ["PATCH", "/v1/agents/invoice-classifier/agents/b-1", {}],
      ],
    );

    const lost = await scripted(["drop", { status: 200, body: A_BINDING }]);
    const error = await rejection(client(lost, 2).agents.updateBinding("a", "b-1", { contract: { max_concurrent: 2 } }));
    assert.ok(error instanceof ConnectionError, String(error));
    assert.equal(lost.received().length, 1, "a PATCH that may have landed is not sent again");
  });

  test("a redrive sends its since as RFC 3339; enabling is sent again after a lost answer, a replay and a redrive are not", async () => {
    const REDRIVEN = { redriven: 0, task_ids: [], next_since: null };
    const server = await scripted([{ status: 200, body: REDRIVEN }]);
    await client(server).agents.redriveDeliveries("invoice classifier", new Date(Date.UTC(2026, 11, 7, 9)));
    await client(server).agents.redriveDeliveries("a", "2026-12-07T09:00:00+01:00");
    assert.deepEqual(
      server.received().map((request) => [request.method, request.url, request.body]),
      [
        ["POST", "/v1/agents/invoice%20classifier/endpoint/redrive", { since: "2026-12-07T09:00:00.000Z" }],
        ["POST", "/v1/agents/a/endpoint/redrive", { since: "2026-12-07T09:00:00+01:00" }],
      ],
    );
    assert.ok((await rejection(client(server).agents.redriveDeliveries("a", new Date(Number.NaN)))) instanceof TypeError);

    const HEALTH = { agent_id: "a-1", url: "https://callee.example/a2a", state: "active", attempts: { ok: 0, failed: 0, since: "t" } };
    const enabled = await scripted(["drop", { status: 200, body: HEALTH }]);
    assert.equal((await client(enabled, 2).agents.enableEndpoint("a")).state, "active");
    assert.deepEqual(enabled.received().map((request) => [request.method, request.url]), [
      ["POST", "/v1/agents/a/endpoint/enable"],
      ["POST", "/v1/agents/a/endpoint/enable"],
    ]);
    for (const send of [
      (forgebench: Forgebench) => forgebench.agents.replayDelivery("a", "t/1"),
      (forgebench: Forgebench) => forgebench.agents.redriveDeliveries("a", "2026-12-07T09:00:00Z"),
    ]) {
      const lost = await scripted(["drop", { status: 202, body: { task_id: "t/1", webhook_id: "w" } }]);
      assert.ok((await rejection(send(client(lost, 2)))) instanceof ConnectionError);
      assert.equal(lost.received().length, 1, "a write that may have landed is not sent again");
    }
    const replayed = await scripted([{ status: 202, body: { task_id: "t/1", webhook_id: "w" } }]);
    assert.deepEqual(await client(replayed).agents.replayDelivery("a", "t/1"), { task_id: "t/1", webhook_id: "w" });
    assert.equal(replayed.received()[0]?.url, "/v1/agents/a/tasks/t%2F1/replay");
  });

  test("a notification replay POSTs to its config's route without a body, and is not sent again after a lost answer", async () => {
    const REPLAYED = { task_id: "t/1", config_id: "refund hook", event: 4, webhook_id: "t/1:refund hook:4" };
    const server = await scripted([{ status: 202, body: REPLAYED }]);
    assert.deepEqual(await client(server).agents.replayNotification("invoice classifier", "t/1", "refund hook"), REPLAYED);
    assert.deepEqual(
      server.received().map((request) => [request.method, request.url, request.body]),
      [["POST", "/v1/agents/invoice%20classifier/tasks/t%2F1/notifications/refund%20hook/replay", null]],
    );
    for (const [callee, taskId, configId] of [["", "t", "c"], ["a", "", "c"], ["a", "t", ""]] as const) {
      assert.ok((await rejection(client(server).agents.replayNotification(callee, taskId, configId))) instanceof TypeError);
    }
    assert.equal(server.received().length, 1, "an empty segment sends nothing");

    const lost = await scripted(["drop", { status: 202, body: REPLAYED }]);
    assert.ok((await rejection(client(lost, 2).agents.replayNotification("a", "t", "c"))) instanceof ConnectionError);
    assert.equal(lost.received().length, 1, "a replay that may have landed is not sent again");
    const conflict = await scripted([{ status: 409, body: { detail: { code: "conflict", message: "no event yet" } } }, { status: 202, body: REPLAYED }]);
    assert.ok((await rejection(client(conflict, 2).agents.replayNotification("a", "t", "c"))) instanceof ConflictError);
    assert.equal(conflict.received().length, 1, "a conflict is not tried again");
  });
});

/** A server that never answers (it only records), for abort tests. */
async function startHangingServer(): Promise<ScriptedServer> {
  const received: { method: string; url: string }[] = [];
  const server = createServer((request) => received.push({ method: request.method ?? "", url: request.url ?? "" }));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address() as { port: number };
  const handle: ScriptedServer = {
    url: `http://127.0.0.1:${address.port}`,
    received: () => received.map((request) => ({ ...request, headers: {}, body: null })),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(handle);
  return handle;
}
