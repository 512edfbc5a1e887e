/**
 * Operating push deliveries through the SDK against the real gateway (docs/api.md, "Operating
 * deliveries"): an endpoint's health, enabling it, redriving the deliveries waiting for a retry,
 * replaying one task's delivery, and replaying an A2A push notification config's latest event.
 * Every call under test goes through `Forgebench`; plain fetch only sets up the tenant, plays the
 * caller and the callee, and saves the notification config (over A2A's HTTP+JSON binding).
 *
 * The push endpoint is a local HTTP server the test controls: it answers 503 with a `Retry-After`
 * of ten minutes, so a task whose first attempt failed waits for its retry for the whole test
 * (nothing but a replay or a redrive attempts it again), then 200 with a result once the test
 * switches it over. A notification config's URL is another local server, which answers 200 and
 * keeps each notification's `webhook-id`. The gateway under test allows loopback endpoints
 * (`FORGEBENCH_PUSH_ALLOWED_CIDRS`, as `scripts/sdk-tests.sh` sets it).
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";

import {
  BadRequestError,
  ConflictError,
  Forgebench,
  NotFoundError,
  PermissionDeniedError,
  type DeliveryAttempt,
  type EndpointHealth,
  type Replayed,
  type ReplayedNotification,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  newWorld,
  noGateway,
  ok,
  openTask,
  raw,
  textResult,
  type World,
} from "./support/gateway.js";
import { delay, rejection } from "./support/util.js";

const PULL_AGENT = "ledger-reader";
/** What the endpoint answers once it works again: a result the gateway applies as it is. */
const COMPLETED = { state: "completed", artifacts: [{ parts: [{ text: "ok" }] }] };
/** Long enough that no retry the gateway schedules comes within a test. */
const RETRY_AFTER_SECONDS = 600;
/** How long a test waits for what the gateway does in the background (a delivery, a count). */
const DEADLINE_MS = 90_000;

/** A local push endpoint: fails every delivery while `failing`, and keeps what it was sent. */
class Receiver {
  failing = true;
  readonly deliveries: { taskId: string; webhookId: string }[] = [];
  readonly #server: Server;

  constructor() {
    this.#server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        const taskId = String((JSON.parse(body) as { task_id?: string }).task_id);
        this.deliveries.push({ taskId, webhookId: String(request.headers["webhook-id"]) });
        const headers = { "Content-Type": "application/json" };
        if (this.failing) {
          response.writeHead(503, { ...headers, "Retry-After": String(RETRY_AFTER_SECONDS) });
          response.end(JSON.stringify({ detail: "busy" }));
        } else {
          response.writeHead(200, headers);
          response.end(JSON.stringify(COMPLETED));
        }
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/a2a`;
  }

  stop(): void {
    this.#server.close();
  }

  webhookIds(taskId: string): string[] {
    return this.deliveries.filter((delivery) => delivery.taskId === taskId).map((delivery) => delivery.webhookId);
  }
}

function client(apiKey: string): Forgebench {
  return new Forgebench({ baseUrl: baseUrl(), apiKey, maxRetries: 0 });
}

/** `read()` once `holds` of it, polled until `DEADLINE_MS` pass. */
async function eventually<T>(read: () => Promise<T>, holds: (value: T) => boolean, what: string): Promise<T> {
  const until = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await read();
    if (holds(value)) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(value)}`);
    await delay(200);
  }
}

/** The task's delivery attempts once there are at least `count`. */
function attemptsAfter(admin: Forgebench, taskId: string, count: number): Promise<DeliveryAttempt[]> {
  return eventually(
    () => admin.agents.attempts(CALLEE_NAME, taskId),
    (attempts) => attempts.length >= count,
    `${count} delivery attempts of ${taskId}`,
  );
}

/** Opens a push task (plain fetch, as the caller) and waits until its first attempt failed; its id. */
async function failedDelivery(world: World, admin: Forgebench, text: string): Promise<string> {
  const task = await openTask(world, [{ text }]);
  const [attempt] = await attemptsAfter(admin, task.id, 1);
  assert.equal(attempt?.status, 503);
  return task.id;
}

/** The callee's endpoint health once it says `failing`: the gateway counts an attempt just after it records it. */
function failingHealth(admin: Forgebench): Promise<EndpointHealth> {
  return eventually(
    () => admin.agents.endpointHealth(CALLEE_NAME),
    (health) => health.state === "failing",
    "the endpoint's health to count the failure",
  );
}

/**
 * The task's delivery replayed. Just after an attempt is recorded the gateway may still hold its
 * lease (a 409 that replays nothing): tried again until `DEADLINE_MS` pass.
 */
async function replayedOnceWaiting(admin: Forgebench, taskId: string): Promise<Replayed> {
  const until = Date.now() + DEADLINE_MS;
  for (;;) {
    try {
      return await admin.agents.replayDelivery(CALLEE_NAME, taskId);
    } catch (error) {
      if (!(error instanceof ConflictError) || Date.now() > until) throw error;
      await delay(200);
    }
  }
}

/** The task's state once it left submitted/working, read by the caller. */
function finished(world: World, taskId: string): Promise<string> {
  const caller = client(world.callerKey);
  return eventually(
    async () => (await caller.agents.getTask(CALLEE_NAME, taskId, { wait: 5 })).status.state,
    (state) => state !== "submitted" && state !== "working",
    `task ${taskId} to finish`,
  );
}

/** `world` (a new tenant unless given) whose callee pushes to `url`, beside a pull agent. */
async function pushWorld(url: string, given?: World): Promise<{ world: World; admin: Forgebench }> {
  const world = given ?? (await newWorld());
  await ok(world.adminKey, "POST", "/v1/agents", { name: PULL_AGENT }, 201);
  const admin = client(world.adminKey);
  await admin.agents.setEndpoint(CALLEE_NAME, { url });
  return { world, admin };
}

/** A person of the tenant with `role`, made with plain fetch; a client of its key. */
async function person(world: World, role: "member" | "viewer"): Promise<Forgebench> {
  const created = (await ok(world.adminKey, "POST", "/v1/members", { name: `${role}-${randomUUID()}`, role }, 201)) as {
    key: string;
  };
  return client(created.key);
}

/** Runs `check` with a receiver of its own, started, and stops it after. */
async function withReceiver(check: (receiver: Receiver, url: string) => Promise<void>): Promise<void> {
  const receiver = new Receiver();
  const url = await receiver.start();
  try {
    await check(receiver, url);
  } finally {
    receiver.stop();
  }
}

/** One notification a config's URL received; `state` is the task state a `statusUpdate` carries. */
interface Notification {
  webhookId: string;
  body: string;
  state: string | undefined;
}

/** A local receiver of a task's A2A push notifications: answers 200 to each, and keeps them in order. */
class Hook {
  readonly notifications: Notification[] = [];
  readonly #server: Server;

  constructor() {
    this.#server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        const state = (JSON.parse(body) as { statusUpdate?: { status?: { state?: string } } }).statusUpdate?.status?.state;
        this.notifications.push({ webhookId: String(request.headers["webhook-id"]), body, state });
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end("{}");
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks/a2a`;
  }

  stop(): void {
    this.#server.close();
  }

  /** What it received, once it received the `statusUpdate` to `state`. */
  notifiedUntil(state: string): Promise<Notification[]> {
    return eventually(
      async () => [...this.notifications],
      (got) => got.some((notification) => notification.state === state),
      `a notification of ${state}`,
    );
  }

  /** What it received, once it received more than `count`. */
  receivedMoreThan(count: number): Promise<Notification[]> {
    return eventually(async () => [...this.notifications], (got) => got.length > count, `notification ${count + 1}`);
  }
}

/** The caller saves config `hook` on its task, over A2A's HTTP+JSON binding (no SDK helper makes one). */
async function createNotificationConfig(world: World, taskId: string, url: string): Promise<void> {
  const path = `/v1/agents/${CALLEE_NAME}/a2a/tasks/${taskId}/pushNotificationConfigs`;
  const created = await raw(world.callerKey, "POST", path, { id: "hook", url }, { "A2A-Version": "1.0" });
  assert.ok(created.status >= 200 && created.status < 300, `${created.status} ${JSON.stringify(created.body)}`);
  assert.equal((created.body as { id?: string }).id, "hook");
}

/**
 * Config `hook`'s latest event replayed. Just after a notification is sent the gateway may still
 * hold the config's lease (a 409 that replays nothing): tried again until `DEADLINE_MS` pass.
 */
async function notificationReplayed(forgebench: Forgebench, taskId: string): Promise<ReplayedNotification> {
  const until = Date.now() + DEADLINE_MS;
  for (;;) {
    try {
      return await forgebench.agents.replayNotification(CALLEE_NAME, taskId, "hook");
    } catch (error) {
      if (!(error instanceof ConflictError) || Date.now() > until) throw error;
      await delay(200);
    }
  }
}

describe("operating push deliveries", { skip: noGateway }, () => {
  test("a failing endpoint's health shows it; its waiting deliveries are replayed, then redriven to completion", () =>
    withReceiver(async (receiver, url) => {
      const { world, admin } = await pushWorld(url);
      const fresh = await admin.agents.endpointHealth(CALLEE_NAME);
      assert.deepEqual([fresh.agent_id, fresh.url, fresh.state, fresh.consecutive_failures], [world.calleeId, url, "active", 0]);
      assert.equal(fresh.success_rate, null, "no attempt yet");
      assert.equal(fresh.disabled, null);
      assert.ok(fresh.disable_after.failures >= 1 && fresh.disable_after.seconds >= 0);

      const beforeTheOpens = new Date(Date.now() - 60_000);
      const first = await failedDelivery(world, admin, "Classify INV-1");
      const failing = await failingHealth(admin);
      assert.ok(failing.consecutive_failures >= 1, JSON.stringify(failing));
      assert.match(failing.last_error ?? "", /503/);
      assert.notEqual(failing.failing_since, null);
      assert.notEqual(failing.last_failure_at, null);
      assert.ok(failing.attempts.failed >= 1);
      assert.equal(failing.success_rate, 0);
      const viewer = await person(world, "viewer");
      assert.equal((await viewer.agents.endpointHealth(CALLEE_NAME)).state, "failing", "a viewer reads it");

      // a replay attempts the waiting delivery now (its retry was ten minutes away), with the same id
      const replayed = await replayedOnceWaiting(admin, first);
      assert.equal(replayed.task_id, first);
      assert.ok(replayed.webhook_id.length > 0);
      await attemptsAfter(admin, first, 2);
      assert.deepEqual(receiver.webhookIds(first), [replayed.webhook_id, replayed.webhook_id]);

      const second = await failedDelivery(world, admin, "Classify INV-2");
      const canceled = await failedDelivery(world, admin, "Classify INV-3");
      await client(world.callerKey).agents.cancelTask(CALLEE_NAME, canceled);
      assert.ok((await rejection(admin.agents.replayDelivery(CALLEE_NAME, canceled))) instanceof ConflictError, "finished");
      assert.ok((await rejection(admin.agents.replayDelivery(CALLEE_NAME, randomUUID()))) instanceof NotFoundError);

      const later = await admin.agents.redriveDeliveries(CALLEE_NAME, new Date(Date.now() + 3_600_000));
      assert.deepEqual(later, { redriven: 0, task_ids: [], next_since: null });
      assert.ok((await rejection(admin.agents.redriveDeliveries(CALLEE_NAME, "yesterday"))) instanceof BadRequestError);

      // the endpoint works again: a redrive delivers both waiting tasks, not the canceled one
      receiver.failing = false;
      const redriven = await admin.agents.redriveDeliveries(CALLEE_NAME, beforeTheOpens.toISOString());
      assert.equal(redriven.redriven, redriven.task_ids.length);
      assert.deepEqual([...redriven.task_ids].sort(), [first, second].sort());
      assert.equal(redriven.next_since, null);
      assert.equal(await finished(world, first), "completed");
      assert.equal(await finished(world, second), "completed");
      assert.equal(new Set(receiver.webhookIds(second)).size, 1, "a redrive keeps the delivery's id");
      assert.ok((await rejection(admin.agents.replayDelivery(CALLEE_NAME, first))) instanceof ConflictError, "completed");

      const healthy: EndpointHealth = await eventually(
        () => admin.agents.endpointHealth(CALLEE_NAME),
        (health) => health.state === "active" && health.attempts.ok >= 1,
        "the endpoint's health to count its success",
      );
      assert.equal(healthy.consecutive_failures, 0);
      assert.equal(healthy.failing_since, null);
      assert.notEqual(healthy.last_success_at, null);
      assert.ok(healthy.success_rate !== null && healthy.success_rate > 0 && healthy.success_rate < 1, JSON.stringify(healthy));
  }));

  test("only an admin enables an endpoint; a pull task has no delivery to replay, a pull agent no health", () =>
    withReceiver(async (_receiver, url) => {
      const world = await newWorld();
      // opened while the callee was pulled: the task keeps that delivery mode
      const pulled = await openTask(world, [{ text: "Read the ledger" }]);
      const { admin } = await pushWorld(url, world);
      await failedDelivery(world, admin, "Classify INV-4");
      assert.ok((await rejection(admin.agents.replayDelivery(CALLEE_NAME, pulled.id))) instanceof ConflictError, "a pull task");

      const enabled = await admin.agents.enableEndpoint(CALLEE_NAME);
      assert.notEqual(enabled.state, "disabled");
      assert.equal(enabled.disabled, null);
      assert.equal(enabled.url, url);
      assert.equal((await admin.agents.get(CALLEE_NAME)).endpoint?.disabled ?? null, null);
      for (const role of ["member", "viewer"] as const) {
        const refused = await rejection((await person(world, role)).agents.enableEndpoint(CALLEE_NAME));
        assert.ok(refused instanceof PermissionDeniedError, `${role}: ${String(refused)}`);
      }

      assert.ok((await rejection(admin.agents.endpointHealth(PULL_AGENT))) instanceof NotFoundError);
      assert.ok((await rejection(admin.agents.enableEndpoint(PULL_AGENT))) instanceof NotFoundError);
  }));

  test("a notification config is sent its latest event again under the same webhook-id, by the caller or an admin", async () => {
    const hook = new Hook();
    const url = await hook.start();
    try {
      const world = await newWorld();
      const caller = client(world.callerKey);
      const task = await openTask(world, [{ text: "Refund INV-7" }]); // the callee pulls it
      await createNotificationConfig(world, task.id, url);
      const early = await rejection(caller.agents.replayNotification(CALLEE_NAME, task.id, "hook"));
      assert.ok(early instanceof ConflictError, `no event yet: ${String(early)}`);
      assert.deepEqual(hook.notifications, []);

      // the callee claims the task and completes it: the config is notified of each change
      assert.equal((await claimExpected(world, 5)).id, task.id);
      await answerTask(world, task.id, textResult("refunded"));
      const sent = await hook.notifiedUntil("TASK_STATE_COMPLETED");
      const last = sent[sent.length - 1]!;
      assert.equal(last.state, "TASK_STATE_COMPLETED", "the final state is the latest event");
      assert.equal(new Set(sent.map((notification) => notification.webhookId)).size, sent.length);

      const replayed = await notificationReplayed(caller, task.id);
      assert.equal(replayed.webhook_id, last.webhookId);
      assert.deepEqual([replayed.task_id, replayed.config_id], [task.id, "hook"]);
      assert.ok(replayed.event >= sent.length, JSON.stringify(replayed));
      assert.equal(replayed.webhook_id, `${task.id}:hook:${replayed.event}`);
      const again = (await hook.receivedMoreThan(sent.length))[sent.length]!;
      assert.deepEqual([again.webhookId, again.body], [last.webhookId, last.body], "the same event, under the same id");

      const unknown = await rejection(caller.agents.replayNotification(CALLEE_NAME, task.id, "no-such-hook"));
      assert.ok(unknown instanceof NotFoundError, `a config the task does not have: ${String(unknown)}`);
      const byCallee = await rejection(client(world.calleeKey).agents.replayNotification(CALLEE_NAME, task.id, "hook"));
      assert.ok(byCallee instanceof PermissionDeniedError, `the callee reads the task, but is not its caller: ${String(byCallee)}`);
      assert.equal(hook.notifications.length, sent.length + 1, "the event once more, and nothing else");

      const byAdmin = await notificationReplayed(client(world.adminKey), task.id);
      assert.equal(byAdmin.webhook_id, last.webhookId);
      assert.equal((await hook.receivedMoreThan(sent.length + 1))[sent.length + 1]?.webhookId, last.webhookId);
    } finally {
      hook.stop();
    }
  });
});
