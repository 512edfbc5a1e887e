/**
 * The management operations through the SDK against the real gateway: tenants, members and
 * their keys, agents and their keys, bindings, endpoints and delivery attempts, tools, the
 * task event stream, audit, lineage, signing keys, settings and tenant policies. Every call under test goes
 * through `Forgebench` (its User-Agent); plain fetch only sets up the other side of a task.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Forgebench,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  type AuditOutcome,
  type Binding,
  type BindingContractPatch,
  type BindingLimitsPatch,
  type PolicyPatch,
  type TaskEvent,
} from "@seedlinglabs/forgebench-sdk";

import {
  CALLEE_NAME,
  CALLER_NAME,
  answerTask,
  baseUrl,
  claimExpected,
  client,
  newWorld,
  noGateway,
  ok,
  operator,
  textResult,
} from "./support/gateway.js";
import { delay, rejection } from "./support/util.js";

/** The call-tree limits of a tenant that never set them. */
const DEFAULT_LIMITS = { max_call_depth: 16, refuse_cycles: false, max_fan_out: null, max_open_in_tree: null } as const;

/** A new tenant made through the SDK, and a client with its admin key. */
async function newTenant(): Promise<{ tenantId: string; admin: Forgebench; adminKey: string }> {
  const tenant = await operator().tenants.create(`ts-sdk-manage-${randomUUID()}`);
  return { tenantId: tenant.tenant_id, admin: client(tenant.admin_key), adminKey: tenant.admin_key };
}

describe("tenants and members", { skip: noGateway }, () => {
  test("a tenant's admin key works and never shows in a log; members, their keys, and a revoked key refused", async () => {
    const name = `ts-sdk-manage-${randomUUID()}`;
    const tenant = await operator().tenants.create(name);
    assert.equal(tenant.name, name);
    assert.match(tenant.admin_key, /^fb_adm_[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(tenant).includes(tenant.admin_key), "the admin key stays out of JSON");
    assert.ok(!Object.keys({ ...tenant }).includes("admin_key"));
    const admin = client(tenant.admin_key);

    const dana = await admin.members.create("Dana Whitfield", "member");
    assert.equal(dana.role, "member");
    assert.match(dana.key, /^fb_mem_/);
    assert.ok(!JSON.stringify(dana).includes(dana.key));
    const members = await admin.members.list();
    const listed = members.find((member) => member.member_id === dana.member_id);
    assert.equal(listed?.name, "Dana Whitfield");
    assert.equal(listed?.keys.length, 1);
    const adminMember = members.find((member) => member.role === "admin");
    assert.ok(adminMember !== undefined, "the tenant's first admin is a member");

    // a second key for Dana works until it is revoked, then it is refused
    const extra = await admin.members.issueKey(dana.member_id);
    assert.match(extra.key, /^fb_mem_/);
    assert.deepEqual(await client(extra.key).agents.list(), []);
    const revoked = await admin.members.revokeKey(dana.member_id, extra.key_id);
    assert.deepEqual(revoked, { key_id: extra.key_id, revoked: true });
    assert.ok((await rejection(client(extra.key).agents.list())) instanceof AuthenticationError);
    assert.deepEqual(await client(dana.key).agents.list(), [], "her first key still works");
    const keys = (await admin.members.list()).find((member) => member.member_id === dana.member_id)?.keys ?? [];
    assert.equal(keys.length, 2);
    assert.notEqual(keys.find((key) => key.key_id === extra.key_id)?.revoked_at ?? null, null);

    // the tenant's last live admin key cannot be revoked; a member may not list members
    const adminKeyId = adminMember.keys.find((key) => key.revoked_at === null)?.key_id ?? "";
    assert.ok((await rejection(admin.members.revokeKey(adminMember.member_id, adminKeyId))) instanceof ConflictError);
    assert.ok((await rejection(client(dana.key).members.list())) instanceof PermissionDeniedError);
    // only the operator key creates tenants
    assert.ok((await rejection(admin.tenants.create("not allowed"))) instanceof PermissionDeniedError);
  });
});

describe("agents", { skip: noGateway }, () => {
  test("create, get, list, update and me; a paused agent's key is refused, a revoked one too", async () => {
    const { admin } = await newTenant();
    const agent = await admin.agents.create("invoice-classifier", {
      description: "Classifies supplier invoices",
      claim_timeout_seconds: 120,
    });
    assert.equal(agent.status, "active");
    assert.equal(agent.claim_timeout_seconds, 120);
    assert.equal((await admin.agents.get("invoice-classifier")).id, agent.id);
    assert.equal((await admin.agents.get(agent.id)).name, "invoice-classifier");
    await admin.agents.create("billing-orchestrator");
    assert.deepEqual(
      (await admin.agents.list()).map((each) => each.name),
      ["billing-orchestrator", "invoice-classifier"],
    );
    assert.ok((await rejection(admin.agents.create("invoice-classifier"))) instanceof ConflictError);
    assert.ok((await rejection(admin.agents.get("no-such-agent"))) instanceof NotFoundError);

    const issued = await admin.agents.issueKey(agent.id);
    assert.match(issued.key, /^fb_agt_[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(issued).includes(issued.key));
    const asAgent = client(issued.key);
    assert.equal((await asAgent.agents.me()).id, agent.id);

    const updated = await admin.agents.update("invoice-classifier", { description: "Invoices and receipts", status: "paused" });
    assert.equal(updated.description, "Invoices and receipts");
    assert.equal(updated.status, "paused");
    assert.ok((await rejection(asAgent.agents.me())) instanceof PermissionDeniedError, "a paused agent's key");
    assert.equal((await admin.agents.update(agent.id, { status: "active" })).status, "active");
    assert.equal((await asAgent.agents.me()).description, "Invoices and receipts");

    const second = await admin.agents.issueKey("invoice-classifier");
    const keys = await admin.agents.keys("invoice-classifier");
    assert.deepEqual(keys.map((key) => key.key_id).sort(), [issued.key_id, second.key_id].sort());
    assert.ok(keys.every((key) => key.revoked_at === null && !("key" in key)));
    assert.deepEqual(await admin.agents.revokeKey("invoice-classifier", issued.key_id), { key_id: issued.key_id, revoked: true });
    assert.ok((await rejection(asAgent.agents.me())) instanceof AuthenticationError, "a revoked key is refused");
    assert.equal((await client(second.key).agents.me()).id, agent.id, "the other key still works");
    const after = await admin.agents.keys(agent.id);
    assert.notEqual(after.find((key) => key.key_id === issued.key_id)?.revoked_at ?? null, null);
    assert.ok((await rejection(admin.agents.revokeKey(agent.id, issued.key_id))) instanceof NotFoundError);
  });

  test("a pending binding refuses the call until the callee's side approves it; revoked, it refuses again", async () => {
    const { admin } = await newTenant();
    const dana = await admin.members.create("Dana Whitfield", "member");
    const asDana = client(dana.key);
    const caller = await asDana.agents.create("billing-orchestrator");
    assert.equal(caller.owner_member_id, dana.member_id);
    const callee = await admin.agents.create("refund-approver");

    // Dana does not speak for the callee: her grant waits for its approval
    const [binding, ...rest] = await asDana.agents.grant("billing-orchestrator", ["refund-approver"]);
    assert.ok(binding !== undefined && rest.length === 0);
    assert.equal(binding.caller_agent_id, caller.id);
    assert.equal(binding.callee_agent_id, callee.id);
    assert.equal(binding.approved_at, null);
    const callerKey = (await asDana.agents.issueKey("billing-orchestrator")).key;
    const asCaller = client(callerKey).agents;
    assert.ok((await rejection(asCaller.call("refund-approver", { text: "Refund INV-1" }))) instanceof PermissionDeniedError);
    assert.ok((await rejection(asDana.agents.approve("refund-approver", binding.id))) instanceof PermissionDeniedError);

    const inbound = (await admin.agents.bindings("refund-approver")).inbound;
    assert.deepEqual(inbound.map((each) => [each.id, each.approved_at]), [[binding.id, null]]);
    const approved = await admin.agents.approve("refund-approver", binding.id);
    assert.notEqual(approved.approved_at, null);
    const task = await asCaller.call("refund-approver", { text: "Refund INV-1" });
    assert.equal(task.callee_agent_id, callee.id);
    assert.equal(task.status.state, "submitted");
    assert.deepEqual(
      (await asDana.agents.bindings(caller.id)).outbound.map((each) => each.id),
      [binding.id],
    );

    const revoked = await asDana.agents.revokeBinding("billing-orchestrator", binding.id);
    assert.equal(revoked.revoked, true);
    assert.ok((await rejection(asCaller.call("refund-approver", { text: "Refund INV-2" }))) instanceof PermissionDeniedError);
  });

  test("a tool put shows on the card's skills, is listed, and drops off when deleted", async () => {
    const { admin } = await newTenant();
    await admin.agents.create("invoice-classifier");
    const tool = await admin.agents.putTool("invoice-classifier", "classify.invoice", {
      description: "Classify one supplier invoice",
      tags: ["finance", "invoices"],
    });
    assert.deepEqual(tool, { name: "classify.invoice", description: "Classify one supplier invoice", tags: ["finance", "invoices"] });
    assert.deepEqual(await admin.agents.tools("invoice-classifier"), [tool]);
    const skills = (await admin.agents.card("invoice-classifier")).skills;
    assert.deepEqual(
      skills.map((skill) => [skill.id, skill.description, skill.tags]),
      [["classify.invoice", "Classify one supplier invoice", ["finance", "invoices"]]],
    );
    assert.deepEqual(await admin.agents.deleteTool("invoice-classifier", "classify.invoice"), { name: "classify.invoice", removed: true });
    assert.deepEqual(await admin.agents.tools("invoice-classifier"), []);
    // Without tools, the card's one skill is the agent itself (A2A wants at least one).
    assert.deepEqual(
      (await admin.agents.card("invoice-classifier")).skills.map((skill) => skill.id),
      ["invoice-classifier"],
    );
    assert.ok((await rejection(admin.agents.deleteTool("invoice-classifier", "classify.invoice"))) instanceof NotFoundError);
  });
});

/** A binding with no limits or contract of its own, and nothing counted. */
const NO_LIMITS = { max_call_depth: null, refuse_cycles: null, max_fan_out: null, max_open_in_tree: null } as const;
const NO_CONTRACT = { skills: null, rate_per_minute: null, max_concurrent: null, daily_quota: null } as const;
const NOTHING_COUNTED = { minute: null, day: null, open: null } as const;

/**
 * Waits out the last 10 s of a UTC minute (and so of a UTC day), so that the opens and reads of
 * a test that counts a binding's use fall in one minute.
 */
async function clearOfAMinuteEnd(): Promise<void> {
  const second = (Date.now() / 1000) % 60;
  if (second >= 50) await delay((60.5 - second) * 1000);
}

/** The caller's one outbound binding, as the list shows it (with `usage`). */
async function onlyBinding(admin: Forgebench): Promise<Binding> {
  const { outbound } = await admin.agents.bindings(CALLER_NAME);
  assert.equal(outbound.length, 1);
  return outbound[0] as Binding;
}

describe("limits and contracts on a binding", { skip: noGateway }, () => {
  test("updateBinding sets limits and a contract from either side, read back with usage; null removes a value", async () => {
    const { admin } = await newTenant();
    await admin.agents.create(CALLER_NAME);
    await admin.agents.create(CALLEE_NAME);
    const [granted] = await admin.agents.grant(CALLER_NAME, [CALLEE_NAME]);
    assert.ok(granted !== undefined);
    // every answer shows both objects, every field present; nothing is counted yet
    assert.deepEqual([granted.limits, granted.contract], [NO_LIMITS, NO_CONTRACT]);
    const listed = await onlyBinding(admin);
    assert.deepEqual([listed.limits, listed.contract, listed.usage], [NO_LIMITS, NO_CONTRACT, NOTHING_COUNTED]);
    const callerKey = (await admin.agents.issueKey(CALLER_NAME)).key;

    await clearOfAMinuteEnd();
    const updated = await admin.agents.updateBinding(CALLER_NAME, granted.id, {
      limits: { max_call_depth: 4, refuse_cycles: true },
      contract: { rate_per_minute: 100, max_concurrent: 5, daily_quota: 1_000 },
    });
    assert.equal(updated.id, granted.id);
    assert.deepEqual(updated.limits, { ...NO_LIMITS, max_call_depth: 4, refuse_cycles: true });
    assert.deepEqual(updated.contract, { ...NO_CONTRACT, rate_per_minute: 100, max_concurrent: 5, daily_quota: 1_000 });
    // counting starts when the contract is set: a rate, a quota and a concurrency count all three
    assert.deepEqual(updated.usage, { minute: 0, day: 0, open: 0 });

    const task = await client(callerKey).agents.call(CALLEE_NAME, { text: "Classify INV-1" });
    assert.equal(task.skill, null, "the open named no skill");
    // the callee's side lists the same binding, its use counting the open task
    const [inbound] = (await admin.agents.bindings(CALLEE_NAME)).inbound;
    assert.deepEqual([inbound?.limits, inbound?.contract], [updated.limits, updated.contract]);
    assert.deepEqual(inbound?.usage, { minute: 1, day: 1, open: 1 });

    // from the callee's side: null removes a value, what the patch leaves out stays
    const removed = await admin.agents.updateBinding(CALLEE_NAME, granted.id, {
      limits: { refuse_cycles: null },
      contract: { daily_quota: null },
    });
    assert.deepEqual(removed.limits, { ...NO_LIMITS, max_call_depth: 4 });
    assert.deepEqual(removed.contract, { ...NO_CONTRACT, rate_per_minute: 100, max_concurrent: 5 });
    assert.deepEqual(removed.usage, { minute: 1, day: 1, open: 1 });
    const after = await onlyBinding(admin);
    assert.deepEqual([after.limits, after.contract], [removed.limits, removed.contract]);
    // a patch that changes nothing answers the binding as it is and writes nothing
    const same = await admin.agents.updateBinding(CALLER_NAME, granted.id, { contract: { max_concurrent: 5 } });
    assert.deepEqual([same.limits, same.contract], [removed.limits, removed.contract]);
    const audited = await admin.audit.list({ action: "binding.contract" });
    assert.deepEqual(audited.entries.map((entry) => [entry.action, entry.outcome]), [
      ["binding.contract", "allowed"],
      ["binding.contract", "allowed"],
    ]);

    // out of range is a 400 and changes nothing
    const wrongLimits: BindingLimitsPatch[] = [{ max_call_depth: 0 }, { max_call_depth: 65 }, { max_fan_out: 10_001 }];
    const wrongContracts: BindingContractPatch[] = [{ rate_per_minute: 0 }, { skills: [] }, { daily_quota: 1_000_001 }];
    for (const patch of [...wrongLimits.map((limits) => ({ limits })), ...wrongContracts.map((contract) => ({ contract }))]) {
      const refused = await rejection(admin.agents.updateBinding(CALLER_NAME, granted.id, patch));
      assert.ok(refused instanceof BadRequestError, `${JSON.stringify(patch)}: ${String(refused)}`);
    }
    const unchanged = await onlyBinding(admin);
    assert.deepEqual([unchanged.limits, unchanged.contract], [removed.limits, removed.contract]);
    // a binding that is not there, or an agent that is neither side, is a 404; a member may not
    await admin.agents.create("refund-approver");
    const unknown = await rejection(admin.agents.updateBinding(CALLER_NAME, randomUUID(), { contract: { max_concurrent: 1 } }));
    assert.ok(unknown instanceof NotFoundError, String(unknown));
    const neither = await rejection(admin.agents.updateBinding("refund-approver", granted.id, { limits: { max_fan_out: 1 } }));
    assert.ok(neither instanceof NotFoundError, String(neither));
    const dana = await admin.members.create("Dana Whitfield", "member");
    const asDana = await rejection(client(dana.key).agents.updateBinding(CALLER_NAME, granted.id, { limits: { max_fan_out: 1 } }));
    assert.ok(asDana instanceof PermissionDeniedError, String(asDana));

    // the binding's limits govern its calls: at depth 1 a root call opens, its child is refused
    await admin.agents.updateBinding(CALLER_NAME, granted.id, { limits: { max_call_depth: 1 } });
    const caller = client(callerKey).agents;
    const root = await caller.call(CALLEE_NAME, { text: "Month-end billing" });
    assert.ok(root.call_id !== null);
    const child = await rejection(caller.call(CALLEE_NAME, { text: "Classify INV-2", parentCallId: root.call_id }));
    assert.ok(child instanceof PermissionDeniedError, String(child));
    const refusals = await admin.audit.list({ action: "task.open", outcome: "refused" });
    assert.deepEqual(refusals.entries.map((entry) => [entry.reason, entry.root_call_id]), [["depth_exceeded", root.call_id]]);
  });

  test("a contract's skills refuse an open naming another skill, or none; null removes them", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    await admin.agents.putTool(CALLEE_NAME, "lookup", { description: "Looks up an invoice" });
    await admin.agents.putTool(CALLEE_NAME, "classify", { description: "Classifies an invoice" });
    const bindingId = (await onlyBinding(admin)).id;
    const limited = await admin.agents.updateBinding(CALLER_NAME, bindingId, { contract: { skills: ["lookup"] } });
    assert.deepEqual(limited.contract, { ...NO_CONTRACT, skills: ["lookup"] });
    assert.deepEqual(limited.usage, NOTHING_COUNTED, "skills alone count nothing");

    const caller = client(world.callerKey).agents;
    const task = await caller.call(CALLEE_NAME, { text: "Find INV-1", skill: "lookup" });
    assert.equal(task.skill, "lookup");
    assert.equal((await caller.getTask(CALLEE_NAME, task.id)).skill, "lookup", "the task keeps it");
    const another = await rejection(caller.call(CALLEE_NAME, { text: "Classify INV-1", skill: "classify" }));
    const none = await rejection(caller.call(CALLEE_NAME, { text: "Classify INV-1" }));
    // the gate's one refusal, as for a missing binding
    assert.ok(another instanceof PermissionDeniedError && none instanceof PermissionDeniedError, `${String(another)}; ${String(none)}`);
    assert.deepEqual([another.code, none.code], ["not_permitted", "not_permitted"]);

    // null removes the list: any skill, or none, goes through
    const opened = await admin.agents.updateBinding(CALLEE_NAME, bindingId, { contract: { skills: null } });
    assert.deepEqual(opened.contract, NO_CONTRACT);
    assert.equal((await caller.call(CALLEE_NAME, { text: "Classify INV-1", skill: "classify" })).skill, "classify");
    assert.equal((await caller.call(CALLEE_NAME, { text: "Classify INV-2" })).skill, null);
    const reasons = new Set<string | null | undefined>();
    for await (const entry of admin.audit.iter({ action: "task.open", outcome: "refused" })) reasons.add(entry.reason);
    assert.deepEqual([...reasons], ["skill_not_allowed"]);
  });

  test("an open past the contract's rate is a 429 quota_exceeded RateLimitError with its Retry-After", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const bindingId = (await onlyBinding(admin)).id;
    await clearOfAMinuteEnd();
    await admin.agents.updateBinding(CALLER_NAME, bindingId, { contract: { rate_per_minute: 1 } });
    // no retries: the 429 is thrown, not waited out into the next minute
    const caller = new Forgebench({ baseUrl: baseUrl(), apiKey: world.callerKey, maxRetries: 0 }).agents;
    const first = await caller.call(CALLEE_NAME, { text: "Classify INV-1" });
    const error = await rejection(caller.call(CALLEE_NAME, { text: "Classify INV-2" }));
    if (!(error instanceof RateLimitError)) assert.fail(`the second open: ${String(error)}`);
    assert.deepEqual([error.status, error.code], [429, "quota_exceeded"]);
    // the seconds to the next UTC minute
    const wait = error.retryAfterSeconds;
    assert.ok(wait !== undefined && wait >= 1 && wait <= 60, `Retry-After ${String(wait)}`);

    // the refusal opened nothing: the one open is counted, and the log names the reason
    assert.deepEqual((await onlyBinding(admin)).usage, { minute: 1, day: 1, open: null });
    const allowed = await admin.audit.list({ action: "task.open", outcome: "allowed" });
    assert.deepEqual(allowed.entries.map((entry) => entry.task_id), [first.id]);
    const refused = await admin.audit.list({ action: "task.open", outcome: "refused" });
    assert.deepEqual(refused.entries.map((entry) => entry.reason), ["quota_exceeded"]);
  });
});

describe("push endpoint and delivery attempts", { skip: noGateway }, () => {
  test("setEndpoint sends tasks to the endpoint with its credential; attempts lists the delivery; url null goes back to pull", async () => {
    const received: IncomingHttpHeaders[] = [];
    const server = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        received.push(request.headers);
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ state: "completed", artifacts: [{ name: "response", parts: [{ text: "pushed" }] }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a`;
    try {
      const world = await newWorld();
      const admin = client(world.adminKey);
      const secret = `s3cret-${randomUUID()}`;
      const saved = await admin.agents.setEndpoint(CALLEE_NAME, { url, auth: { type: "bearer", secret } });
      assert.equal(saved.endpoint?.url, url);
      assert.equal(saved.endpoint?.auth?.configured, true);
      assert.ok(!JSON.stringify(saved).includes(secret), "the secret never comes back");

      const task = await client(world.callerKey).agents.call(CALLEE_NAME, { text: "Classify", wait: 20 });
      assert.equal(task.status.state, "completed");
      assert.equal(received.length, 1);
      assert.equal(received[0]?.authorization, `Bearer ${secret}`);
      const attempts = await admin.agents.attempts(CALLEE_NAME, task.id);
      assert.equal(attempts.length, 1);
      assert.equal(attempts[0]?.attempt, 1);
      assert.equal(attempts[0]?.status, 200);
      assert.equal(typeof attempts[0]?.latency_ms, "number");

      const cleared = await admin.agents.setEndpoint(CALLEE_NAME, { url: null });
      assert.equal(cleared.endpoint ?? null, null);
      const pulled = await client(world.callerKey).agents.call(CALLEE_NAME, { text: "Classify again" });
      assert.equal(pulled.status.state, "submitted", "a pull task waits for its claim");
      assert.deepEqual(await admin.agents.attempts(CALLEE_NAME, pulled.id), []);
      assert.equal(received.length, 1);
    } finally {
      server.close();
    }
  });
});

describe("agents.events", { skip: noGateway }, () => {
  test("yields the task, then each change through final, and ends with the stream", async () => {
    const world = await newWorld();
    const caller = client(world.callerKey).agents;
    const opened = await caller.call(CALLEE_NAME, { text: "Classify this invoice" });
    const stream = caller.events(CALLEE_NAME, opened.id)[Symbol.asyncIterator]();
    const first = await stream.next();
    assert.equal(first.done, false);
    const taskEvent = first.value as TaskEvent;
    assert.equal(taskEvent.event, "task");
    assert.equal(taskEvent.id, "0");
    if (taskEvent.event === "task") assert.equal(taskEvent.data.id, opened.id);

    // the callee claims, reports progress, and completes with one artifact
    assert.equal((await claimExpected(world, 5)).id, opened.id);
    await client(world.calleeKey).agents.progress(opened.id, { text: "Reading 3 line items" });
    await answerTask(world, opened.id, textResult("software"));

    const rest: TaskEvent[] = [];
    for (let next = await stream.next(); next.done !== true; next = await stream.next()) rest.push(next.value);
    assert.deepEqual(
      rest.map((event) => [event.event, event.id]),
      [["status", "1"], ["progress", "2"], ["artifact", "3"], ["final", "4"]],
    );
    const [status, progress, artifact, final] = rest;
    assert.ok(status?.event === "status" && status.data.state === "working" && status.data.task_id === opened.id);
    assert.ok(progress?.event === "progress" && progress.data.message?.parts[0]?.text === "Reading 3 line items");
    assert.ok(artifact?.event === "artifact" && artifact.data.artifact_index === 0);
    assert.deepEqual(artifact.data.artifact?.parts, [{ text: "software" }]);
    assert.ok(final?.event === "final" && final.data.state === "completed" && final.data.event === 4);

    // a finished task streams its task event and ends; resumed, only the later changes come
    const again: string[] = [];
    for await (const event of caller.events(world.calleeId, opened.id)) again.push(event.event);
    assert.deepEqual(again, ["task"]);
    const resumed: string[] = [];
    for await (const event of caller.events(CALLEE_NAME, opened.id, { lastEventId: 2 })) resumed.push(`${event.event}:${event.id}`);
    assert.deepEqual(resumed, ["artifact:3", "final:4"]);
  });

  test("leaving the loop closes the stream; an abort ends it; an unknown task is NotFoundError", async () => {
    const world = await newWorld();
    const caller = client(world.callerKey).agents;
    const opened = await caller.call(CALLEE_NAME, { text: "Classify this invoice" });
    // The gateway allows 10 streams per key at once: breaking out must give the slot back.
    for (let round = 0; round < 12; round++) {
      for await (const event of caller.events(CALLEE_NAME, opened.id)) {
        assert.equal(event.event, "task");
        break;
      }
    }
    const controller = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of caller.events(CALLEE_NAME, opened.id, { signal: controller.signal })) {
        seen.push(event.event);
        controller.abort();
      }
    })();
    const aborted = await rejection(reading);
    assert.equal((aborted as Error).name, "AbortError");
    assert.deepEqual(seen, ["task"]);
    const missing = caller.events(CALLEE_NAME, randomUUID())[Symbol.asyncIterator]().next();
    assert.ok((await rejection(missing)) instanceof NotFoundError);
  });
});

describe("audit, calls and settings", { skip: noGateway }, () => {
  test("an audit entry appears for each change; iter walks more than one page, each entry once", async () => {
    const { admin } = await newTenant();
    const names = ["agent-a", "agent-b", "agent-c", "agent-d", "agent-e"];
    const ids: string[] = [];
    for (const name of names) ids.push((await admin.agents.create(name)).id);
    const created = await admin.audit.list({ action: "agent.create" });
    assert.deepEqual(created.entries.map((entry) => entry.target).sort(), ids.sort(), "one entry per agent, its id the target");
    assert.ok(created.entries.every((entry) => entry.outcome === "allowed" && entry.action === "agent.create"));

    const firstPage = await admin.audit.list({ limit: 2 });
    assert.equal(firstPage.entries.length, 2);
    assert.notEqual(firstPage.nextCursor, null);
    const secondPage = await admin.audit.list({ limit: 2, cursor: firstPage.nextCursor ?? undefined });
    assert.ok(!secondPage.entries.some((entry) => firstPage.entries.some((seen) => seen.id === entry.id)));

    const all = [];
    for await (const entry of admin.audit.iter({ limit: 2 })) all.push(entry);
    assert.ok(all.length >= names.length + 1, `tenant.create and ${names.length} agent.create at least, by pages of 2`);
    assert.equal(new Set(all.map((entry) => entry.id)).size, all.length, "each entry once");
    assert.deepEqual(all.slice(0, 2).map((entry) => entry.id), firstPage.entries.map((entry) => entry.id));
    const times = all.map((entry) => entry.at);
    assert.deepEqual(times, [...times].sort().reverse(), "newest first");
    assert.ok(all.some((entry) => entry.action === "tenant.create"));
  });

  test("calls.list gives a call's lineage tree, oldest first", async () => {
    const world = await newWorld();
    const caller = client(world.callerKey).agents;
    const root = await caller.call(CALLEE_NAME, { text: "Month-end billing" });
    assert.ok(root.call_id !== null);
    const child = await caller.call(CALLEE_NAME, { text: "Classify INV-1", parentCallId: root.call_id });
    assert.equal(child.root_call_id, root.call_id);
    const calls = await client(world.adminKey).calls.list(root.call_id);
    assert.deepEqual(
      calls.map((call) => [call.call_id, call.parent_call_id ?? null, call.task_id]),
      [
        [root.call_id, null, root.id],
        [child.call_id, root.call_id, child.id],
      ],
    );
    assert.ok(calls.every((call) => call.caller_agent_id === world.callerId && call.callee_agent_id === world.calleeId));
    assert.deepEqual(await client(world.adminKey).calls.list(randomUUID()), []);
  });

  test("settings.update reads back, word search follows it, and the change is audited", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const before = await admin.settings.get();
    assert.equal(before.word_search, true);
    const off = await admin.settings.update({ word_search: false });
    assert.deepEqual(off, { ...DEFAULT_LIMITS, tenant_id: before.tenant_id, word_search: false });
    assert.equal((await admin.settings.get()).word_search, false);
    const search = client(world.callerKey).agents.searchTasks({ q: "invoice" });
    assert.ok((await rejection(search)) instanceof ConflictError, "a word search while it is off");
    assert.equal((await admin.settings.update({ word_search: true })).word_search, true);
    assert.equal((await admin.settings.get()).word_search, true);
    const audited = await admin.audit.list({ action: "tenant.word_search" });
    assert.deepEqual(audited.entries.map((entry) => entry.action), ["tenant.word_search.on", "tenant.word_search.off"]);
    assert.ok((await rejection(client(world.callerKey).settings.update({ word_search: false }))) instanceof PermissionDeniedError);
  });

  test("settings.update sets and clears the call-tree limits; each change is audited as tenant.call_tree", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const before = await admin.settings.get();
    assert.deepEqual(before, { ...DEFAULT_LIMITS, tenant_id: before.tenant_id, word_search: true });

    const limits = { max_call_depth: 8, refuse_cycles: true, max_fan_out: 20, max_open_in_tree: 100 };
    const set = await admin.settings.update(limits);
    assert.deepEqual(set, { ...limits, tenant_id: before.tenant_id, word_search: true });
    assert.deepEqual(await admin.settings.get(), set);
    // a viewer reads them, and may not change them
    const viewer = client((await admin.members.create("Vera Okafor", "viewer")).key);
    assert.deepEqual(await viewer.settings.get(), set);
    assert.ok((await rejection(viewer.settings.update({ max_fan_out: null }))) instanceof PermissionDeniedError);

    // null clears a count limit; what the patch leaves out keeps its value
    const cleared = await admin.settings.update({ max_fan_out: null });
    assert.deepEqual(cleared, { ...set, max_fan_out: null });
    assert.deepEqual(await admin.settings.get(), cleared);
    // a patch that changes nothing writes no audit entry; out of range is a 400 and changes nothing
    assert.deepEqual(await admin.settings.update({ max_call_depth: 8, max_fan_out: null }), cleared);
    for (const wrong of [{ max_call_depth: 0 }, { max_call_depth: 65 }, { max_fan_out: 0 }, { max_open_in_tree: 10_001 }]) {
      const refused = await rejection(admin.settings.update(wrong));
      assert.ok(refused instanceof BadRequestError, `${JSON.stringify(wrong)}: ${String(refused)}`);
    }
    assert.deepEqual(await admin.settings.get(), cleared);
    const audited = await admin.audit.list({ action: "tenant.call_tree" });
    assert.deepEqual(audited.entries.map((entry) => [entry.action, entry.outcome]), [
      ["tenant.call_tree", "allowed"],
      ["tenant.call_tree", "allowed"],
    ]);
    assert.deepEqual((await admin.audit.list({ action: "tenant.word_search" })).entries, [], "word_search never changed");

    // the depth limit governs: at 1, a root call opens and its child is refused, audited with the reason
    await admin.settings.update({ max_call_depth: 1 });
    const caller = client(world.callerKey).agents;
    const root = await caller.call(CALLEE_NAME, { text: "Month-end billing" });
    assert.ok(root.call_id !== null);
    const child = await rejection(caller.call(CALLEE_NAME, { text: "Classify INV-2", parentCallId: root.call_id }));
    assert.ok(child instanceof PermissionDeniedError, String(child));
    const refusals = await admin.audit.list({ action: "task.open", outcome: "refused" });
    assert.deepEqual(
      refusals.entries.map((entry) => [entry.reason, entry.parent_call_id, entry.root_call_id]),
      [["depth_exceeded", root.call_id, root.call_id]],
    );
  });
});

/** A Cedar policy that forbids the caller's opens on the callee naming the skill `refund`. */
const NO_REFUNDS = `forbid(principal, action == Action::"open", resource) when { resource.name == "${CALLEE_NAME}" && context has skill && context.skill == "refund" };`;

/** The tenant's audit entries of `outcome` a policy decided: [action, outcome, policy]. */
async function policyEntries(admin: Forgebench, outcome: AuditOutcome): Promise<[string, string, string | null | undefined][]> {
  const entries: [string, string, string | null | undefined][] = [];
  for await (const entry of admin.audit.iter({ outcome })) {
    if (entry.reason === "policy") entries.push([entry.action, entry.outcome, entry.policy]);
  }
  return entries;
}

describe("tenant policies", { skip: noGateway }, () => {
  test("a tried policy logs what it would refuse, an enforced one refuses it, null removes it; each change audited", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const caller = client(world.callerKey).agents;
    assert.deepEqual(await admin.policies.get(), { version: 0, items: [] });

    // a new policy is tried unless it says otherwise
    const saved = await admin.policies.update({ "no-refunds": { policy: NO_REFUNDS, description: "No refunds through the classifier" } });
    assert.equal(saved.version, 1);
    const [tried] = saved.items;
    assert.deepEqual(
      [tried?.name, tried?.policy, tried?.mode, tried?.description],
      ["no-refunds", NO_REFUNDS, "dry_run", "No refunds through the classifier"],
    );
    assert.ok(typeof tried?.updated_at === "string" && tried.updated_at.length > 0);
    assert.deepEqual(await admin.policies.get(), saved);
    assert.deepEqual(await admin.policies.check({ caller: CALLER_NAME, callee: CALLEE_NAME, skill: "refund" }), {
      allowed: true,
      reason: null,
      policies: [],
      would_refuse: ["no-refunds"],
    });
    const admitted = await caller.call(CALLEE_NAME, { text: "Refund INV-1", skill: "refund" });
    assert.equal(admitted.skill, "refund", "a tried policy refuses nothing");
    assert.deepEqual(await policyEntries(admin, "would_refuse"), [["task.open", "would_refuse", "no-refunds"]]);
    assert.deepEqual(await policyEntries(admin, "refused"), []);

    // enforced by its mode alone: the text and the description stay
    const enforced = await admin.policies.update({ "no-refunds": { mode: "enforce" } });
    assert.equal(enforced.version, 2);
    assert.deepEqual(
      enforced.items.map((item) => [item.mode, item.policy, item.description]),
      [["enforce", NO_REFUNDS, "No refunds through the classifier"]],
    );
    assert.deepEqual(await admin.policies.check({ caller: world.callerId, callee: CALLEE_NAME, skill: "refund" }), {
      allowed: false,
      reason: "policy",
      policies: ["no-refunds"],
      would_refuse: [],
    });
    assert.equal((await admin.policies.check({ caller: CALLER_NAME, callee: CALLEE_NAME, skill: "lookup" })).allowed, true);
    const refused = await rejection(caller.call(CALLEE_NAME, { text: "Refund INV-2", skill: "refund" }));
    if (!(refused instanceof PermissionDeniedError)) assert.fail(`the enforced policy's open: ${String(refused)}`);
    assert.equal(refused.code, "not_permitted", "the gate's one refusal");
    assert.equal((await caller.call(CALLEE_NAME, { text: "Find INV-2", skill: "lookup" })).skill, "lookup");
    assert.deepEqual(await policyEntries(admin, "refused"), [["task.open", "refused", "no-refunds"]]);

    // null removes it: the open goes through again
    assert.deepEqual(await admin.policies.update({ "no-refunds": null }), { version: 3, items: [] });
    assert.equal((await caller.call(CALLEE_NAME, { text: "Refund INV-3", skill: "refund" })).skill, "refund");
    const audited = await admin.audit.list({ action: "tenant.policy" });
    assert.deepEqual(
      audited.entries.map((entry) => [entry.action, entry.target]),
      [
        ["tenant.policy.remove", "no-refunds"],
        ["tenant.policy.set", "no-refunds"],
        ["tenant.policy.set", "no-refunds"],
      ],
    );
  });

  test("a policy is validated when saved (a BadRequestError, nothing saved); only admins change policies", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const wrong: Record<string, PolicyPatch | null>[] = [
      { "open-all": { policy: "permit(principal, action, resource);" } },
      // an optional attribute read without `has`
      { unguarded: { policy: `forbid(principal, action, resource) when { context.skill == "x" };` } },
      { garbled: { policy: "forbid everything" } },
      { "no-text": { mode: "enforce" } },
      { "Bad Name": { policy: NO_REFUNDS } },
      // the set is validated whole: a valid policy beside an invalid one is not saved either
      { "no-refunds": { policy: NO_REFUNDS }, "open-all": { policy: "permit(principal, action, resource);" } },
    ];
    for (const policies of wrong) {
      const refused = await rejection(admin.policies.update(policies));
      if (!(refused instanceof BadRequestError)) assert.fail(`${JSON.stringify(policies)}: ${String(refused)}`);
      assert.equal(refused.code, "invalid_request");
    }
    assert.deepEqual(await admin.policies.get(), { version: 0, items: [] });

    const viewer = client((await admin.members.create("Priya Raman", "viewer")).key);
    assert.equal((await viewer.policies.get()).version, 0, "a viewer reads");
    assert.equal((await viewer.policies.check({ caller: CALLER_NAME, callee: CALLEE_NAME })).allowed, true, "and checks");
    assert.ok((await rejection(viewer.policies.update({ "no-refunds": { policy: NO_REFUNDS } }))) instanceof PermissionDeniedError);
    const member = client((await admin.members.create("Dana Whitfield", "member")).key);
    for (const other of [member, client(world.callerKey)]) {
      assert.ok((await rejection(other.policies.get())) instanceof PermissionDeniedError);
      assert.ok((await rejection(other.policies.update({ "no-refunds": { policy: NO_REFUNDS } }))) instanceof PermissionDeniedError);
      assert.ok((await rejection(other.policies.check({ caller: CALLER_NAME, callee: CALLEE_NAME }))) instanceof PermissionDeniedError);
    }
    assert.deepEqual(await admin.policies.get(), { version: 0, items: [] });

    // the check: an agent that is not the tenant's is a 404; the binding answers before the policies
    const unknown = await rejection(admin.policies.check({ caller: "refund-approver", callee: CALLEE_NAME }));
    assert.ok(unknown instanceof NotFoundError, String(unknown));
    const unbound = await admin.policies.check({ caller: CALLEE_NAME, callee: CALLER_NAME });
    assert.deepEqual([unbound.allowed, unbound.reason], [false, "no_binding"]);
  });

  test("check sends the action, the depth and the root caller a policy reads", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const belowTheOrchestrator = `forbid(principal, action == Action::"open", resource) when { context.depth >= 2 && context has root_caller && context.root_caller.name == "${CALLER_NAME}" };`;
    await admin.policies.update({ shallow: { policy: belowTheOrchestrator, mode: "enforce", description: null } });
    const call = { caller: CALLER_NAME, callee: CALLEE_NAME };
    // a root call (depth 1, its own root caller) is allowed; two deep below the caller is not
    assert.equal((await admin.policies.check(call)).allowed, true);
    const deep = await admin.policies.check({ ...call, depth: 2, root_caller: world.callerId });
    assert.deepEqual([deep.allowed, deep.reason, deep.policies], [false, "policy", ["shallow"]]);
    // the policy forbids opens only; and a deep call with no known root caller passes it
    const read = await admin.policies.check({ ...call, action: "read", depth: 2, root_caller: CALLER_NAME });
    assert.deepEqual([read.allowed, read.policies], [true, []]);
    assert.equal((await admin.policies.check({ ...call, action: "open", depth: 2 })).allowed, true);
    assert.ok((await rejection(admin.policies.check({ ...call, depth: 65 }))) instanceof BadRequestError);
    const [shallow] = (await admin.policies.get()).items;
    assert.deepEqual([shallow?.mode, shallow?.description], ["enforce", null]);
  });
});

describe("raw setup helpers stay in agreement with the SDK", { skip: noGateway }, () => {
  test("a world made with plain fetch is what the SDK reads", async () => {
    const world = await newWorld();
    const admin = client(world.adminKey);
    const bindings = await admin.agents.bindings(CALLER_NAME);
    assert.deepEqual(bindings.outbound.map((each) => each.callee_agent_id), [world.calleeId]);
    assert.equal((await ok(world.callerKey, "GET", "/v1/agents/me")) !== null, true);
  });
});
