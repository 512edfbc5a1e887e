/**
 * answer, progress, searchTasks/allTasks, card and cards/allCards against the gateway. The other
 * side of each exchange is plain fetch.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import {
  ConflictError,
  Forgebench,
  NotFoundError,
  messageText,
  type Message,
  type TaskSummary,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  CALLER_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  newWorld,
  noGateway,
  ok,
  openTask,
  questionResult,
  readTask,
  textResult,
  type World,
} from "./support/gateway.js";
import { startTcpProxy } from "./support/proxies.js";
import { rejection } from "./support/util.js";

function caller(world: World, url = baseUrl()): Forgebench {
  return new Forgebench({ baseUrl: url, apiKey: world.callerKey });
}

function callee(world: World, url = baseUrl()): Forgebench {
  return new Forgebench({ baseUrl: url, apiKey: world.calleeKey });
}

/** A task opened by the caller, claimed by the callee, which asked `question`. */
async function askedTask(world: World, question = "Which cost center?"): Promise<string> {
  const opened = await openTask(world, [{ text: "Classify this invoice" }]);
  assert.equal((await claimExpected(world, 5)).id, opened.id);
  const asked = await answerTask(world, opened.id, questionResult(question));
  assert.equal(asked.status.state, "input_required");
  return opened.id;
}

/** A task opened by the caller and claimed by the callee: `working`. */
async function claimedTask(world: World, text = "Classify this invoice"): Promise<string> {
  const opened = await openTask(world, [{ text }]);
  assert.equal((await claimExpected(world, 5)).id, opened.id);
  return opened.id;
}

function withId(history: readonly Message[], messageId: string): Message[] {
  return history.filter((message) => message.message_id === messageId);
}

describe("answer", { skip: noGateway }, () => {
  test("takes an input_required task back to working, the answer in its history with a message_id", async () => {
    const world = await newWorld();
    const taskId = await askedTask(world);
    const task = await caller(world).agents.answer(CALLEE_NAME, taskId, {
      text: "Cost center 4100",
      data: { cost_center: 4100 },
    });
    assert.equal(task.id, taskId);
    assert.equal(task.status.state, "working");
    const last = task.history.at(-1);
    assert.equal(last?.role, "user");
    assert.deepEqual(last?.parts, [{ text: "Cost center 4100" }, { data: { cost_center: 4100 } }]);
    assert.match(last?.message_id ?? "", /^[0-9a-f-]{36}$/);
    // the callee reads it back as the next message of the task it holds
    assert.equal((await readTask(world, taskId)).status.state, "working");
  });

  test("by the callee's id, and a repeat with the same messageId records the answer once", async () => {
    const world = await newWorld();
    const taskId = await askedTask(world);
    const messageId = `answer-${randomUUID()}`;
    const agents = caller(world).agents;
    const first = await agents.answer(world.calleeId, taskId, { text: "once", messageId });
    const again = await agents.answer(world.calleeId, taskId, { text: "once", messageId });
    assert.equal(again.status.state, "working");
    assert.equal(withId(first.history, messageId).length, 1);
    assert.equal(withId(again.history, messageId).length, 1, "the repeat wrote nothing");
    assert.equal(again.history.length, first.history.length);
  });

  test("retried after its connection dropped, the answer lands once", async () => {
    const world = await newWorld();
    const taskId = await askedTask(world);
    const proxy = await startTcpProxy(baseUrl(), "after-forwarding", 1);
    try {
      const task = await caller(world, proxy.url).agents.answer(CALLEE_NAME, taskId, { text: "exactly once" });
      assert.equal(proxy.connections(), 2, "the first connection was cut, the retry went through");
      assert.equal(task.status.state, "working");
      const answers = task.history.filter((message) => message.role === "user" && messageText(message) === "exactly once");
      assert.equal(answers.length, 1);
    } finally {
      await proxy.close();
    }
  });

  test("a task with no question: ConflictError; an empty answer is refused before sending", async () => {
    const world = await newWorld();
    const taskId = await claimedTask(world);
    const agents = caller(world).agents;
    assert.ok((await rejection(agents.answer(CALLEE_NAME, taskId, { text: "unasked" }))) instanceof ConflictError);
    assert.ok((await rejection(agents.answer(CALLEE_NAME, taskId, {}))) instanceof TypeError);
    assert.ok((await rejection(agents.answer(CALLEE_NAME, "", { text: "x" }))) instanceof TypeError);
  });
});

describe("progress", { skip: noGateway }, () => {
  test("shows on the task's history and status; the task stays working", async () => {
    const world = await newWorld();
    const taskId = await claimedTask(world);
    const task = await callee(world).agents.progress(taskId, { text: "Reading 3 line items" });
    assert.equal(task.status.state, "working");
    assert.equal(messageText(task.status.message), "Reading 3 line items");
    const last = task.history.at(-1);
    assert.equal(last?.role, "agent");
    assert.match(last?.message_id ?? "", /^[0-9a-f-]{36}$/);
    const read = await readTask(world, taskId);
    assert.deepEqual(
      read.history.map((message) => messageText(message)),
      ["Classify this invoice", "Reading 3 line items"],
    );
    // the callee can still finish the task
    assert.equal((await answerTask(world, taskId, textResult("done"))).status.state, "completed");
  });

  test("a repeat with the same messageId, and a retry after a dropped connection, record once", async () => {
    const world = await newWorld();
    const taskId = await claimedTask(world);
    const messageId = `progress-${randomUUID()}`;
    await callee(world).agents.progress(taskId, { text: "halfway", messageId });
    await callee(world).agents.progress(taskId, { text: "halfway", messageId });
    const proxy = await startTcpProxy(baseUrl(), "after-forwarding", 1);
    try {
      await callee(world, proxy.url).agents.progress(taskId, { data: { percent: 90 } });
      assert.equal(proxy.connections(), 2, "the first connection was cut, the retry went through");
    } finally {
      await proxy.close();
    }
    const read = await readTask(world, taskId);
    assert.equal(withId(read.history, messageId).length, 1);
    assert.deepEqual(
      read.history.filter((message) => message.role === "agent").map((message) => message.parts),
      [[{ text: "halfway" }], [{ data: { percent: 90 } }]],
    );
  });

  test("a finished task: ConflictError; an unknown one: NotFoundError", async () => {
    const world = await newWorld();
    const taskId = await claimedTask(world);
    await answerTask(world, taskId, textResult("done"));
    const agents = callee(world).agents;
    assert.ok((await rejection(agents.progress(taskId, { text: "late" }))) instanceof ConflictError);
    assert.ok((await rejection(agents.progress(randomUUID(), { text: "nowhere" }))) instanceof NotFoundError);
  });
});

describe("searchTasks and allTasks", { skip: noGateway }, () => {
  test("filters by state, and pages with a small limit, every task once", async () => {
    const world = await newWorld();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await claimedTask(world, `task ${i}`));
    const completed = [ids[1], ids[4], ids[6]] as string[];
    for (const id of completed) await answerTask(world, id, textResult("done"));
    const agents = caller(world).agents;

    const done = await agents.searchTasks({ state: "completed" });
    assert.deepEqual(done.tasks.map((task) => task.id).sort(), [...completed].sort());
    assert.ok(done.tasks.every((task) => task.status.state === "completed"));
    assert.equal(done.nextCursor, null);
    const working = await agents.searchTasks({ state: "working", direction: "outbound" });
    assert.deepEqual(
      working.tasks.map((task) => task.id).sort(),
      ids.filter((id) => !completed.includes(id)).sort(),
    );

    // by hand: page after page of 2, following nextCursor
    const seen: string[] = [];
    let pages = 0;
    let cursor: string | undefined;
    do {
      const page = await agents.searchTasks({ limit: 2, cursor });
      assert.ok(page.tasks.length <= 2);
      seen.push(...page.tasks.map((task) => task.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined && pages < 20);
    assert.equal(cursor, undefined, "the last page has no next_cursor");
    assert.ok(pages >= 4, `7 tasks, 2 a page: ${pages} pages`);
    assert.equal(new Set(seen).size, seen.length, "no task twice");
    assert.deepEqual([...seen].sort(), [...ids].sort());

    // with the iterator
    const all: TaskSummary[] = [];
    for await (const task of agents.allTasks({ limit: 3 })) all.push(task);
    assert.deepEqual(all.map((task) => task.id).sort(), [...ids].sort());
    assert.equal(new Set(all.map((task) => task.id)).size, ids.length);
    const allDone: string[] = [];
    for await (const task of agents.allTasks({ state: "completed", limit: 1 })) allDone.push(task.id);
    assert.deepEqual(allDone.sort(), [...completed].sort());
  });

  test("q, contextId, since, agent and direction reach the gateway", async () => {
    const world = await newWorld();
    const word = `zebra${randomUUID().slice(0, 8)}`;
    const marked = await claimedTask(world, `Classify ${word} please`);
    const other = await claimedTask(world, "Classify something else");
    const agents = caller(world).agents;

    assert.deepEqual((await agents.searchTasks({ q: word })).tasks.map((task) => task.id), [marked]);
    const markedTask = await readTask(world, marked);
    const inContext = await agents.searchTasks({ contextId: markedTask.context_id });
    assert.deepEqual(inContext.tasks.map((task) => task.id), [marked]);
    const future = new Date(Date.now() + 3_600_000);
    assert.deepEqual((await agents.searchTasks({ since: future })).tasks, []);
    assert.equal((await agents.searchTasks({ since: "2020-01-01T00:00:00Z" })).tasks.length, 2);

    // the caller opened them: outbound for the caller, inbound for the callee
    assert.deepEqual((await agents.searchTasks({ direction: "inbound" })).tasks, []);
    const inbound = await callee(world).agents.searchTasks({ direction: "inbound", agent: CALLEE_NAME });
    assert.deepEqual(inbound.tasks.map((task) => task.id).sort(), [marked, other].sort());
    // a search item carries no history (read the task for it)
    assert.equal("history" in (inbound.tasks[0] ?? {}), false);
  });
});

describe("card and cards", { skip: noGateway }, () => {
  test("card: an agent's signed card, by name and by id", async () => {
    const world = await newWorld();
    const agents = caller(world).agents;
    const card = await agents.card(CALLEE_NAME);
    assert.equal(card.name, CALLEE_NAME);
    assert.ok(card.url.endsWith(`/v1/agents/${world.calleeId}/tasks`), card.url);
    assert.equal(card.signatures.length, 2);
    assert.ok(Array.isArray(card.skills));
    // The gateway is shared with other suites, which may rotate the card-signing key between
    // two reads: compare a pair of reads signed with the same key.
    let [byName, byId] = [card, await agents.card(world.calleeId)];
    for (let tries = 0; byName.signatures[0]?.protected !== byId.signatures[0]?.protected && tries < 3; tries++) {
      [byName, byId] = [await agents.card(CALLEE_NAME), await agents.card(world.calleeId)];
    }
    assert.deepEqual(byId, byName);
    assert.equal((await agents.card(CALLER_NAME)).name, CALLER_NAME);
    assert.ok((await rejection(agents.card("no-such-agent"))) instanceof NotFoundError);
  });

  test("cards: the tenant's cards by name, a page at a time", async () => {
    const world = await newWorld();
    const extra = ["alpha-agent", "zulu-agent", "mike-agent"];
    for (const name of extra) await ok(world.adminKey, "POST", "/v1/agents", { name }, 201);
    const names = [CALLER_NAME, CALLEE_NAME, ...extra].sort();
    const agents = caller(world).agents;

    const everything = await agents.cards();
    assert.deepEqual(everything.cards.map((card) => card.name), names);
    assert.equal(everything.nextCursor, null);

    const first = await agents.cards({ limit: 2 });
    assert.deepEqual(first.cards.map((card) => card.name), names.slice(0, 2));
    assert.equal(typeof first.nextCursor, "string");
    const second = await agents.cards({ limit: 2, cursor: first.nextCursor ?? undefined });
    assert.deepEqual(second.cards.map((card) => card.name), names.slice(2, 4));

    const paged: string[] = [];
    for await (const card of agents.allCards({ limit: 2 })) paged.push(card.name);
    assert.deepEqual(paged, names);
  });
});
