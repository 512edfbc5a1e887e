/**
 * The gateway side of the tests, with plain fetch (never the SDK under test): a tenant of the
 * test's own with a caller, a callee and their keys, and the callee's and caller's raw routes.
 */

import { randomUUID } from "node:crypto";

import { Forgebench, type Task, type TaskResultIn } from "@seedlinglabs/forgebench-sdk";

export const CALLER_NAME = "billing-orchestrator";
export const CALLEE_NAME = "invoice-classifier";

/** The gateway under test, from the environment; `undefined` when it is not set. */
export const gatewayUrl: string | undefined = process.env.FORGEBENCH_URL?.replace(/\/+$/, "");

/** A reason to skip gateway tests, or `false` when there is a gateway. */
export const noGateway: string | false =
  gatewayUrl === undefined || process.env.FORGEBENCH_OPERATOR_KEY === undefined
    ? "FORGEBENCH_URL and FORGEBENCH_OPERATOR_KEY are not set"
    : false;

export interface World {
  adminKey: string;
  callerId: string;
  calleeId: string;
  callerKey: string;
  calleeKey: string;
}

export interface RawResponse {
  status: number;
  body: unknown;
}

/** One request with plain fetch; the body is parsed JSON (or `null` when empty). */
export async function raw(
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const response = await fetch(baseUrl() + path, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text.length === 0 ? null : (JSON.parse(text) as unknown) };
}

/** Like `raw`, but the status must be `expected`. */
export async function ok(key: string, method: string, path: string, body?: unknown, expected = 200): Promise<unknown> {
  const response = await raw(key, method, path, body);
  if (response.status !== expected) {
    throw new Error(`${method} ${path}: ${response.status} ${detailOf(response.body)}`);
  }
  return response.body;
}

/**
 * A new tenant with `billing-orchestrator` (the caller) and `invoice-classifier` (the callee),
 * a key for each, and (unless `bound` is false) an approved binding from caller to callee.
 */
export async function newWorld({ bound = true } = {}): Promise<World> {
  const tenant = (await ok(operatorKey(), "POST", "/v1/tenants", { name: `ts-sdk-${randomUUID()}` }, 201)) as {
    admin_key: string;
  };
  const adminKey = tenant.admin_key;
  const caller = (await ok(adminKey, "POST", "/v1/agents", { name: CALLER_NAME }, 201)) as { id: string };
  const callee = (await ok(adminKey, "POST", "/v1/agents", { name: CALLEE_NAME }, 201)) as { id: string };
  if (bound) await ok(adminKey, "POST", `/v1/agents/${CALLER_NAME}/agents`, { callees: [CALLEE_NAME] });
  return {
    adminKey,
    callerId: caller.id,
    calleeId: callee.id,
    callerKey: await agentKey(adminKey, CALLER_NAME),
    calleeKey: await agentKey(adminKey, CALLEE_NAME),
  };
}

async function agentKey(adminKey: string, agent: string): Promise<string> {
  const created = (await ok(adminKey, "POST", `/v1/agents/${agent}/keys`, undefined, 201)) as { key: string };
  return created.key;
}

/** The caller opens a task on the callee with `parts` (plain fetch). */
export async function openTask(world: World, parts: unknown[], wait = 0): Promise<Task> {
  const path = `/v1/agents/${CALLEE_NAME}/tasks?wait=${wait}`;
  return (await ok(world.callerKey, "POST", path, { message: { role: "user", parts } })) as Task;
}

/** The caller reads a task (plain fetch). */
export async function readTask(world: World, taskId: string): Promise<Task> {
  return (await ok(world.callerKey, "GET", `/v1/agents/${CALLEE_NAME}/tasks/${taskId}`)) as Task;
}

/** The callee claims its next task (plain fetch); `null` on 204. */
export async function claimTask(world: World, wait: number): Promise<Task | null> {
  const response = await raw(world.calleeKey, "GET", `/v1/agents/me/tasks/next?wait=${wait}`);
  if (response.status === 204) return null;
  if (response.status !== 200) throw new Error(`claim: ${response.status} ${detailOf(response.body)}`);
  return response.body as Task;
}

/** The longest wait one claim may ask for. */
const MAX_CLAIM_WAIT_SECONDS = 20;

/** The callee claims a task that must come within `wait` seconds (claims again past 20 s). */
export async function claimExpected(world: World, wait = 20): Promise<Task> {
  const deadline = Date.now() + wait * 1000;
  for (;;) {
    const left = Math.ceil((deadline - Date.now()) / 1000);
    const task = await claimTask(world, Math.max(0, Math.min(MAX_CLAIM_WAIT_SECONDS, left)));
    if (task !== null) return task;
    if (Date.now() >= deadline) throw new Error(`no task came within ${wait} s`);
  }
}

/** The callee answers a task it claimed (plain fetch). */
export async function answerTask(world: World, taskId: string, result: TaskResultIn): Promise<Task> {
  return (await ok(world.calleeKey, "POST", `/v1/agents/me/tasks/${taskId}/result`, result)) as Task;
}

export function textResult(text: string): TaskResultIn {
  return { state: "completed", artifacts: [{ name: "response", parts: [{ text }] }] };
}

export function questionResult(question: string): TaskResultIn {
  return { state: "input_required", message: { role: "agent", parts: [{ text: question }] } };
}

/** An error body's `detail`, for a failure message; never the rest of a body, which may hold a key. */
function detailOf(body: unknown): string {
  if (typeof body === "object" && body !== null && "detail" in body) return JSON.stringify(body.detail);
  return "(body not shown)";
}

export function baseUrl(): string {
  if (gatewayUrl === undefined) throw new Error("FORGEBENCH_URL is not set");
  return gatewayUrl;
}

function operatorKey(): string {
  const key = process.env.FORGEBENCH_OPERATOR_KEY;
  if (key === undefined) throw new Error("FORGEBENCH_OPERATOR_KEY is not set");
  return key;
}

/** An SDK client of the local gateway with `apiKey`. */
export function client(apiKey: string): Forgebench {
  return new Forgebench({ baseUrl: baseUrl(), apiKey });
}

/** An SDK client with the deployment's operator key. */
export function operator(): Forgebench {
  return client(operatorKey());
}
