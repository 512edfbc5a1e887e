/**
 * The callee's side against the gateway: serve, nextTask and reply. Each test opens its tasks
 * as the caller with plain fetch and reads the outcome the same way.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  ConnectionError,
  Forgebench,
  artifactText,
  messageText,
  reply,
  type HandlerReturn,
  type Task,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  baseUrl,
  claimExpected,
  newWorld,
  noGateway,
  ok,
  openTask,
  readTask,
  type World,
} from "./support/gateway.js";
import { startTcpProxy } from "./support/proxies.js";
import { delay, inBatches, rejection } from "./support/util.js";

function callee(world: World, options: { baseUrl?: string; maxRetries?: number } = {}): Forgebench {
  return new Forgebench({ baseUrl: options.baseUrl ?? baseUrl(), apiKey: world.calleeKey, maxRetries: options.maxRetries });
}

function inputText(task: Task): string {
  return messageText(task.input.message);
}

describe("serve", { skip: noGateway }, () => {
  test("4 concurrent handlers over 200 tasks: each is answered exactly once, and no more are claimed", async () => {
    const world = await newWorld();
    const opened = await inBatches(
      Array.from({ length: 205 }, (_, index) => `task ${index} ${randomUUID()}`),
      8,
      (text) => openTask(world, [{ text }]),
    );
    const calls = new Map<string, number>();
    let running = 0;
    let mostAtOnce = 0;
    // The first four handlers wait for each other (15 s at most), so four must run at once.
    let fourStarted: () => void = () => undefined;
    const allFourStarted = new Promise<void>((resolve) => (fourStarted = resolve));
    const handled = await callee(world).agents.serve(
      async (task) => {
        calls.set(task.id, (calls.get(task.id) ?? 0) + 1);
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        if (running === 4) fourStarted();
        await (calls.size <= 4 ? Promise.race([allFourStarted, delay(15_000)]) : delay(5));
        running -= 1;
        return `answer to ${inputText(task)}`;
      },
      { maxTasks: 200, concurrency: 4, wait: 2 },
    );
    assert.equal(handled, 200);
    assert.equal(calls.size, 200);
    assert.deepEqual([...new Set(calls.values())], [1]);
    assert.equal(mostAtOnce, 4);

    const tasks = await inBatches(opened, 8, (task) => readTask(world, task.id));
    const completed = tasks.filter((task) => task.status.state === "completed");
    assert.equal(completed.length, 200);
    assert.deepEqual(new Set(completed.map((task) => task.id)), new Set(calls.keys()));
    for (const task of completed) {
      assert.equal(artifactText(task), `answer to ${inputText(task)}`);
      assert.deepEqual(
        task.history.map((message) => message.role),
        ["user", "agent"],
        "one answer in the task's history",
      );
    }
    assert.deepEqual(
      tasks.filter((task) => task.status.state !== "completed").map((task) => task.status.state),
      ["submitted", "submitted", "submitted", "submitted", "submitted"],
    );
  });

  test("what a handler returns, or throws, becomes the task's answer", async () => {
    const world = await newWorld();
    const secret = randomUUID();
    const handlers: Record<string, () => HandlerReturn | Promise<HandlerReturn>> = {
      text: () => `plain ${secret}`,
      object: () => ({ category: secret }),
      artifacts: () => [
        { name: "first", parts: [{ text: secret }] },
        { name: "second", parts: [{ data: [secret] }] },
      ],
      nothing: () => undefined,
      done: () => reply.done({ text: "t", data: { id: secret } }),
      ask: () => reply.ask(`which one, ${secret}?`),
      fail: () => reply.fail(`cannot ${secret}`),
      throws: () => {
        throw new Error(`thrown ${secret}`);
      },
      rejects: async () => {
        await delay(1);
        throw new RangeError(`rejected ${secret}`);
      },
      "throws a string": () => {
        throw `a string ${secret}`;
      },
      "says working": () => ({ state: "working" }),
    };
    const ids = new Map<string, string>();
    for (const kind of Object.keys(handlers)) ids.set(kind, (await openTask(world, [{ text: kind }])).id);

    const handled = await callee(world).agents.serve(
      (task) => (handlers[inputText(task)] ?? (() => assert.fail("unknown kind")))(),
      { maxTasks: ids.size, wait: 2 },
    );
    assert.equal(handled, ids.size);

    const outcome = async (kind: string): Promise<Task> => readTask(world, ids.get(kind) ?? "");
    const responseArtifact = (parts: unknown[]) => [{ name: "response", parts }];
    assert.deepEqual((await outcome("text")).artifacts, responseArtifact([{ text: `plain ${secret}` }]));
    assert.deepEqual((await outcome("object")).artifacts, responseArtifact([{ data: { category: secret } }]));
    assert.deepEqual((await outcome("artifacts")).artifacts, [
      { name: "first", parts: [{ text: secret }] },
      { name: "second", parts: [{ data: [secret] }] },
    ]);
    const nothing = await outcome("nothing");
    assert.equal(nothing.status.state, "completed");
    assert.deepEqual(nothing.artifacts, []);
    assert.deepEqual((await outcome("done")).artifacts, responseArtifact([{ text: "t" }, { data: { id: secret } }]));
    const asked = await outcome("ask");
    assert.equal(asked.status.state, "input_required");
    assert.equal(messageText(asked.status.message), `which one, ${secret}?`);
    for (const [kind, error] of [
      ["fail", `cannot ${secret}`],
      ["throws", `thrown ${secret}`],
      ["rejects", `rejected ${secret}`],
      ["throws a string", `a string ${secret}`],
    ] as const) {
      const failed = await outcome(kind);
      assert.equal(failed.status.state, "failed", kind);
      assert.equal(failed.error, error, kind);
    }
    const refused = await outcome("says working");
    assert.equal(refused.status.state, "failed");
    assert.match(refused.error ?? "", /^the handler's reply was refused: 422: a pull result must be completed/);
  });

  test("a handler that throws does not stop the loop", async () => {
    const world = await newWorld();
    const first = await openTask(world, [{ text: "explode" }]);
    const second = await openTask(world, [{ text: "answer" }]);
    const handled = await callee(world).agents.serve(
      (task) => {
        if (inputText(task) === "explode") throw new Error("the handler blew up");
        return "answered after the throw";
      },
      { maxTasks: 2, wait: 2 },
    );
    assert.equal(handled, 2);
    assert.equal((await readTask(world, first.id)).error, "the handler blew up");
    assert.equal(artifactText(await readTask(world, second.id)), "answered after the throw");
  });

  test("an abort while a claim waits lets that claim finish: the task it brings is handled", async () => {
    const world = await newWorld();
    const controller = new AbortController();
    const started = Date.now();
    const serving = callee(world).agents.serve((task) => `handled ${inputText(task)} after the stop`, {
      signal: controller.signal,
      wait: 3,
    });
    await delay(300);
    controller.abort();
    const opened = await openTask(world, [{ text: "late" }]);
    assert.equal(await serving, 1, "the task the waiting claim brought was handled, not dropped");
    assert.equal(artifactText(await readTask(world, opened.id)), "handled late after the stop");
    assert.ok(Date.now() - started < 6_000, "no claim after the stop");
  });

  test("an abort while a claim waits with nothing to bring returns when that claim does, with the count", async () => {
    const world = await newWorld();
    const controller = new AbortController();
    const started = Date.now();
    const serving = callee(world).agents.serve(() => "unused", { signal: controller.signal, wait: 2 });
    setTimeout(() => controller.abort(), 300);
    assert.equal(await serving, 0);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1_500 && elapsed < 5_000, `${elapsed} ms: the 2 s claim ran out, no other followed`);
  });

  test("an abort while a handler runs lets it reply, then claims nothing more", async () => {
    const world = await newWorld();
    const opened = [];
    for (const text of ["one", "two", "three"]) opened.push(await openTask(world, [{ text }]));
    const controller = new AbortController();
    const handled = await callee(world).agents.serve(
      async (task) => {
        controller.abort();
        await delay(200);
        return `finished ${inputText(task)} after the abort`;
      },
      { signal: controller.signal, wait: 5, concurrency: 1 },
    );
    assert.equal(handled, 1);
    const states = await Promise.all(opened.map((task) => readTask(world, task.id)));
    const answered = states.filter((task) => task.status.state === "completed");
    assert.equal(answered.length, 1);
    assert.equal(artifactText(answered[0] as Task), `finished ${inputText(answered[0] as Task)} after the abort`);
    assert.deepEqual(
      states.filter((task) => task !== answered[0]).map((task) => task.status.state),
      ["submitted", "submitted"],
    );
  });

  test("an already aborted signal handles nothing", async () => {
    const world = await newWorld();
    const task = await openTask(world, [{ text: "untouched" }]);
    const handled = await callee(world).agents.serve(() => "unused", { signal: AbortSignal.abort(), wait: 5 });
    assert.equal(handled, 0);
    assert.equal((await readTask(world, task.id)).status.state, "submitted");
  });

  test("network errors back off and the loop goes on", async () => {
    const world = await newWorld();
    const task = await openTask(world, [{ text: "through a flaky network" }]);
    const proxy = await startTcpProxy(baseUrl(), "before-forwarding", 2);
    try {
      const errors: unknown[] = [];
      const handled = await callee(world, { baseUrl: proxy.url, maxRetries: 0 }).agents.serve(
        (claimed) => `answered ${inputText(claimed)}`,
        { maxTasks: 1, wait: 5, onError: (error) => errors.push(error) },
      );
      assert.equal(handled, 1);
      assert.equal(errors.length, 2);
      assert.ok(errors.every((error) => error instanceof ConnectionError));
      assert.equal(artifactText(await readTask(world, task.id)), "answered through a flaky network");
    } finally {
      await proxy.close();
    }
  });

  test("a task the caller cancels while its handler runs is let go, and the loop goes on", async () => {
    const world = await newWorld();
    const first = await openTask(world, [{ text: "cancel me" }]);
    const second = await openTask(world, [{ text: "keep me" }]);
    const errors: unknown[] = [];
    const handled = await callee(world).agents.serve(
      async (task) => {
        if (inputText(task) === "cancel me") {
          await ok(world.callerKey, "POST", `/v1/agents/${CALLEE_NAME}/tasks/${task.id}/cancel`);
        }
        return `answer to ${inputText(task)}`;
      },
      { maxTasks: 2, wait: 2, onError: (error) => errors.push(error) },
    );
    assert.equal(handled, 2);
    assert.deepEqual(errors, []);
    assert.equal((await readTask(world, first.id)).status.state, "canceled");
    assert.equal(artifactText(await readTask(world, second.id)), "answer to keep me");
  });

  test("a key the gateway does not know ends serve with AuthenticationError", async () => {
    const forgebench = new Forgebench({ baseUrl: baseUrl(), apiKey: "fb_agt_" + "0".repeat(64) });
    const error = await rejection(forgebench.agents.serve(() => "unused", { wait: 1 }));
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.status, 401);
  });

  test("options are checked", async () => {
    const world = await newWorld();
    const agents = callee(world).agents;
    await assert.rejects(agents.serve(() => "x", { concurrency: 0 }), RangeError);
    await assert.rejects(agents.serve(() => "x", { maxTasks: 1.5 }), RangeError);
    await assert.rejects(agents.serve(() => "x", { wait: -1 }), RangeError);
    assert.equal(await agents.serve(() => "x", { maxTasks: 0 }), 0);
  });
});

describe("nextTask and reply", { skip: noGateway }, () => {
  test("nextTask claims a task; reply answers it and returns the task as the answer left it", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "Classify this invoice" }, { data: { invoice_id: "INV-7" } }]);
    const agents = callee(world).agents;
    const claimed = await agents.nextTask({ wait: 5 });
    assert.ok(claimed !== null);
    assert.equal(claimed.id, opened.id);
    assert.equal(claimed.status.state, "working");
    assert.equal(claimed.input.message.parts.find((part) => part.data)?.data?.invoice_id, "INV-7");
    const answered = await agents.reply(claimed.id, reply.done({ text: "software" }));
    assert.equal(answered.id, opened.id);
    assert.equal(answered.status.state, "completed");
    assert.equal(artifactText(answered), "software");
    assert.deepEqual(await readTask(world, opened.id), answered);
  });

  test("nextTask is null when nothing arrives within wait", async () => {
    const world = await newWorld();
    const started = Date.now();
    assert.equal(await callee(world).agents.nextTask({ wait: 1 }), null);
    assert.ok(Date.now() - started >= 900, "it waited");
  });

  test("a result without message_id whose answer was lost is not sent again: a ConnectionError, and it landed", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "answer me once" }]);
    await claimExpected(world, 5);
    const proxy = await startTcpProxy(baseUrl(), "after-forwarding", 1);
    try {
      const error = await rejection(callee(world, { baseUrl: proxy.url }).agents.reply(opened.id, reply.done({ text: "once" })));
      assert.ok(error instanceof ConnectionError, String(error));
      assert.equal(proxy.droppedRequests().length, 1);
      assert.match(proxy.droppedRequests()[0] ?? "", new RegExp(`^POST /v1/agents/me/tasks/${opened.id}/result `));
      const landed = await readTask(world, opened.id);
      assert.equal(landed.status.state, "completed");
      assert.equal(artifactText(landed), "once");
    } finally {
      await proxy.close();
    }
  });

  test("a question whose answer was lost is asked once: its message_id makes the retry land once", async () => {
    const world = await newWorld();
    const opened = await openTask(world, [{ text: "ask me" }]);
    await claimExpected(world, 5);
    const proxy = await startTcpProxy(baseUrl(), "after-forwarding", 1);
    try {
      const asked = await callee(world, { baseUrl: proxy.url }).agents.reply(opened.id, reply.ask("which currency?"));
      assert.equal(proxy.droppedRequests().length, 1);
      assert.equal(asked.status.state, "input_required");
      assert.equal(messageText(asked.status.message), "which currency?");
      const questions = (await readTask(world, opened.id)).history.filter((message) => message.role === "agent");
      assert.equal(questions.length, 1);
    } finally {
      await proxy.close();
    }
  });
});
