/**
 * The caller's side against the gateway: call, getTask, cancelTask and the gateway's refusals.
 * The callee is driven with plain fetch.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Forgebench,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
  artifactText,
  type TaskResultIn,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  claimTask,
  newWorld,
  noGateway,
  openTask,
  readTask,
  textResult,
  type World,
} from "./support/gateway.js";
import { startTcpProxy } from "./support/proxies.js";
import { delay, rejection } from "./support/util.js";

function caller(world: World, url = baseUrl()): Forgebench {
  return new Forgebench({ baseUrl: url, apiKey: world.callerKey });
}

describe("call", { skip: noGateway }, () => {
  test("by name: text and data make one text part and one data part, with a message_id", async () => {
    const world = await newWorld();
    const task = await caller(world).agents.call(CALLEE_NAME, { text: "Classify this invoice", data: { invoice_id: "INV-1" } });
    assert.equal(task.status.state, "submitted");
    assert.equal(task.callee_agent_id, world.calleeId);
    assert.equal(typeof task.call_id, "string");
    const claimed = await claimExpected(world, 5);
    assert.equal(claimed.id, task.id);
    assert.deepEqual(claimed.input.message.parts, [{ text: "Classify this invoice" }, { data: { invoice_id: "INV-1" } }]);
    assert.match(claimed.input.message.message_id ?? "", /^[0-9a-f-]{36}$/);
  });

  test("by id", async () => {
    const world = await newWorld();
    const task = await caller(world).agents.call(world.calleeId, { text: "by id" });
    assert.equal(task.callee_agent_id, world.calleeId);
    assert.equal((await claimExpected(world, 5)).id, task.id);
  });

  test("with wait, the callee's answer comes back", async () => {
    const world = await newWorld();
    const calling = caller(world).agents.call(CALLEE_NAME, { text: "wait for me", wait: 15 });
    const claimed = await claimExpected(world, 10);
    await answerTask(world, claimed.id, textResult("here you are"));
    const task = await calling;
    assert.equal(task.status.state, "completed");
    assert.equal(artifactText(task), "here you are");
  });

  test("parentCallId goes in X-Parent-Call and lands on the task's lineage", async () => {
    const world = await newWorld();
    const parent = randomUUID();
    const task = await caller(world).agents.call(CALLEE_NAME, { text: "child", parentCallId: parent });
    assert.equal(task.parent_call_id, parent);
    assert.equal(task.root_call_id, parent, "a parent the ledger does not know is the root");
    assert.notEqual(task.call_id, parent);
  });

  test("contextId continues the conversation", async () => {
    const world = await newWorld();
    const agents = caller(world).agents;
    const first = await agents.call(CALLEE_NAME, { text: "first" });
    const second = await agents.call(CALLEE_NAME, { text: "second", contextId: first.context_id });
    const unrelated = await agents.call(CALLEE_NAME, { text: "unrelated" });
    assert.notEqual(second.id, first.id);
    assert.equal(second.context_id, first.context_id);
    assert.notEqual(unrelated.context_id, first.context_id);
  });

  test("the same messageId gives back the same task", async () => {
    const world = await newWorld();
    const agents = caller(world).agents;
    const messageId = randomUUID();
    const first = await agents.call(CALLEE_NAME, { text: "once", messageId });
    const again = await agents.call(CALLEE_NAME, { text: "once", messageId });
    assert.equal(again.id, first.id);
    await claimExpected(world, 5);
    assert.equal(await claimTask(world, 0), null);
  });

  test("a call retried after its connection dropped opens one task", async () => {
    const world = await newWorld();
    const proxy = await startTcpProxy(baseUrl(), "after-forwarding", 1);
    try {
      const task = await caller(world, proxy.url).agents.call(CALLEE_NAME, { text: "exactly once" });
      assert.equal(proxy.connections(), 2, "the first connection was cut, the retry went through");
      const dropped = proxy.droppedRequests()[0] ?? "";
      assert.match(dropped, /^POST \/v1\/agents\/invoice-classifier\/tasks /);
      const messageId = task.input.message.message_id ?? "";
      assert.ok(dropped.includes(`"message_id":"${messageId}"`), "the retry sent the first attempt's message_id");
      assert.equal((await claimExpected(world, 5)).id, task.id);
      assert.equal(await claimTask(world, 0), null, "no second task");
    } finally {
      await proxy.close();
    }
  });

  test("without a binding: PermissionDeniedError with the documented body", async () => {
    const world = await newWorld({ bound: false });
    for (const callee of [CALLEE_NAME, world.calleeId, "no-such-agent"]) {
      const error = await rejection(caller(world).agents.call(callee, { text: "hi" }));
      assert.ok(error instanceof PermissionDeniedError);
      assert.equal(error.status, 403);
      assert.equal(error.code, "not_permitted");
      assert.deepEqual(error.body, { detail: { code: "not_permitted", message: "not permitted to call that agent" } });
    }
  });

  test("an unknown key: AuthenticationError", async () => {
    const forgebench = new Forgebench({ baseUrl: baseUrl(), apiKey: "fb_agt_" + "f".repeat(64) });
    const error = await rejection(forgebench.agents.call(CALLEE_NAME, { text: "hi" }));
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "unauthenticated");
  });

  test("a wait past 30 s: BadRequestError", async () => {
    const world = await newWorld();
    const error = await rejection(caller(world).agents.call(CALLEE_NAME, { text: "hi", wait: 31 }));
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.code, "invalid_request");
  });
});

describe("getTask and cancelTask", { skip: noGateway }, () => {
  test("getTask with wait returns as soon as the callee answers", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "read me" }]);
    const claimed = await claimExpected(world, 5);
    const started = Date.now();
    const reading = caller(world).agents.getTask(CALLEE_NAME, opened.id, { wait: 20 });
    await delay(300);
    await answerTask(world, claimed.id, textResult("answered while you waited"));
    const task = await reading;
    assert.equal(task.status.state, "completed");
    assert.equal(artifactText(task), "answered while you waited");
    assert.ok(Date.now() - started < 10_000);
  });

  test("getTask by id, without wait, reads the task as it stands", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "as it stands" }]);
    const task = await caller(world).agents.getTask(world.calleeId, opened.id);
    assert.equal(task.status.state, "submitted");
    assert.deepEqual(task.input, opened.input);
  });

  test("an unknown task: NotFoundError with the documented body", async () => {
    const world = await newWorld();
    const error = await rejection(caller(world).agents.getTask(CALLEE_NAME, randomUUID()));
    assert.ok(error instanceof NotFoundError);
    assert.deepEqual(error.body, { detail: "task not found" });
  });

  test("cancelTask cancels a task still working", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "cancel me" }]);
    await claimExpected(world, 5);
    const canceled = await caller(world).agents.cancelTask(CALLEE_NAME, opened.id);
    assert.equal(canceled.status.state, "canceled");
    assert.equal((await readTask(world, opened.id)).status.state, "canceled");
  });

  test("cancelTask on a finished task does not throw and changes nothing", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "finish me" }]);
    const claimed = await claimExpected(world, 5);
    const finished = await answerTask(world, claimed.id, textResult("done"));
    const after = await caller(world).agents.cancelTask(world.calleeId, opened.id);
    assert.equal(after.status.state, "completed");
    assert.equal(after.updated_at, finished.updated_at);
    assert.deepEqual(after.artifacts, finished.artifacts);
  });

  test("a reply to a task the caller canceled: ConflictError with the documented body", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "too late" }]);
    await claimExpected(world, 5);
    await caller(world).agents.cancelTask(CALLEE_NAME, opened.id);
    const callee = new Forgebench({ baseUrl: baseUrl(), apiKey: world.calleeKey });
    const error = await rejection(callee.agents.reply(opened.id, textResult("late answer")));
    assert.ok(error instanceof ConflictError);
    assert.equal(error.state, "canceled");
    assert.deepEqual(error.body, { detail: { code: "task_not_working", state: "canceled" } });
  });

  test("a pull reply that says working: UnprocessableEntityError with the documented body", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "not yet" }]);
    await claimExpected(world, 5);
    const callee = new Forgebench({ baseUrl: baseUrl(), apiKey: world.calleeKey });
    const working = { state: "working" } as unknown as TaskResultIn;
    const error = await rejection(callee.agents.reply(opened.id, working));
    assert.ok(error instanceof UnprocessableEntityError);
    assert.deepEqual(error.body, { detail: "a pull result must be completed, failed, or input_required" });
  });
});
