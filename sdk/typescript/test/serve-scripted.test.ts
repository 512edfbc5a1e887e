/**
 * serve's own decisions, seen in the exact requests it makes to a scripted local server: its
 * default wait and concurrency, its idle pace with `wait: 0`, and what it does when a reply fails.
 */

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Forgebench, ForgebenchError, DEFAULT_SERVE_WAIT_SECONDS, type Task } from "@seedlinglabs/forgebench-sdk";

import { startScriptedServer, type ScriptedAnswer, type ScriptedServer } from "./support/proxies.js";
import { delay } from "./support/util.js";

const servers: ScriptedServer[] = [];
after(() => Promise.all(servers.map((server) => server.close())));

async function scripted(script: readonly ScriptedAnswer[]): Promise<{ server: ScriptedServer; forgebench: Forgebench }> {
  const server = await startScriptedServer(script);
  servers.push(server);
  return { server, forgebench: new Forgebench({ baseUrl: server.url, apiKey: "fb_agt_" + "1".repeat(64), maxRetries: 0 }) };
}

function aTask(id: string): ScriptedAnswer {
  const task: Partial<Task> = {
    id,
    status: { state: "working", message: null, timestamp: "t" },
    input: { message: { role: "user", parts: [{ text: id }] } },
    artifacts: [],
  };
  return { status: 200, body: task };
}

function requestLines(server: ScriptedServer): string[] {
  return server.received().map((request) => `${request.method} ${request.url}`);
}

describe("serve, against a scripted gateway", () => {
  test("by default each claim waits 20 s and one handler runs at a time: claim, reply, claim, reply", async () => {
    const { server, forgebench } = await scripted([aTask("t1"), aTask("t1"), aTask("t2"), aTask("t2")]);
    let running = 0;
    let mostAtOnce = 0;
    const handled = await forgebench.agents.serve(async () => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      await delay(30);
      running -= 1;
      return "ok";
    }, { maxTasks: 2 });
    assert.equal(handled, 2);
    assert.equal(mostAtOnce, 1);
    assert.equal(DEFAULT_SERVE_WAIT_SECONDS, 20);
    assert.deepEqual(requestLines(server), [
      "GET /v1/agents/me/tasks/next?wait=20",
      "POST /v1/agents/me/tasks/t1/result",
      "GET /v1/agents/me/tasks/next?wait=20",
      "POST /v1/agents/me/tasks/t2/result",
    ]);
    assert.deepEqual(server.received()[1]?.body, {
      state: "completed",
      artifacts: [{ name: "response", parts: [{ text: "ok" }] }],
    });
  });

  test("with wait 0, an empty queue is polled at most once a second", async () => {
    const { server, forgebench } = await scripted([{ status: 204 }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 2_300);
    const handled = await forgebench.agents.serve(() => "unused", { wait: 0, signal: controller.signal });
    assert.equal(handled, 0);
    const polls = requestLines(server);
    assert.ok(polls.length >= 2 && polls.length <= 3, `${polls.length} polls in 2.3 s`);
    assert.ok(polls.every((line) => line === "GET /v1/agents/me/tasks/next?wait=0"));
  });

  test("a reply that fails is reported with its task, and the loop goes on", async () => {
    const { server, forgebench } = await scripted([
      aTask("t1"),
      { status: 500, body: { detail: { code: "internal", message: "internal error" } } },
      aTask("t2"),
      aTask("t2"),
    ]);
    const reported: { error: unknown; task: Task | undefined }[] = [];
    const handled = await forgebench.agents.serve(() => "ok", {
      maxTasks: 2,
      wait: 1,
      onError: (error, task) => reported.push({ error, task }),
    });
    assert.equal(handled, 2);
    assert.equal(reported.length, 1);
    assert.ok(reported[0]?.error instanceof ForgebenchError);
    assert.equal(reported[0]?.error.status, 500);
    assert.equal(reported[0]?.task?.id, "t1");
    assert.equal(requestLines(server).at(-1), "POST /v1/agents/me/tasks/t2/result");
  });

  test("a refusal while claiming that no retry mends ends serve with it", async () => {
    const { forgebench } = await scripted([{ status: 400, body: { detail: { code: "invalid_request", message: "wait" } } }]);
    await assert.rejects(forgebench.agents.serve(() => "unused", { wait: 31 }), (error: unknown) => {
      return error instanceof ForgebenchError && error.status === 400;
    });
  });
});
