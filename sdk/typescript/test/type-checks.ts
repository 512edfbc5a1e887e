/**
 * Compile-time checks of the public types: `npm run build:test` fails if a line marked
 * `@ts-expect-error` compiles, or if one of the others does not. Nothing here runs.
 */

import type {
  AgentCard,
  AuditEntry,
  AgentPatch,
  Binding,
  BindingPatch,
  EndpointHealth,
  EndpointIn,
  Forgebench,
  KeyCreated,
  MemberRole,
  PolicyPatch,
  ReplayedNotification,
  TaskEvent,
  Part,
  ServeHandler,
  Task,
  TaskResultIn,
  TaskSearch,
  TaskSummary,
} from "@seedlinglabs/forgebench-sdk";

export function partsAreExactlyOneKind(): Part[] {
  // @ts-expect-error a part is one of text, data or file, never two
  const twoKinds: Part = { text: "a", data: 1 };
  // @ts-expect-error a file needs its uri
  const fileWithoutUri: Part = { file: { name: "x.pdf" } };
  return [twoKinds, fileWithoutUri, { text: "a" }, { data: [1, "two", null] }, { file: { uri: "s3://b/k" } }];
}

export function aTaskReadsAsTheRestShape(task: Task): (string | null | undefined)[] {
  const invoiceId: unknown = task.input.message.parts.find((p) => p.data)?.data?.invoice_id;
  return [task.context_id, task.call_id, task.error, task.status.state, task.status.message?.message_id, String(invoiceId)];
}

export function aPullResultCannotSayWorking(): TaskResultIn {
  // @ts-expect-error only a push endpoint's immediate answer may say working
  return { state: "working" };
}

export function handlersMayReturnAnyAnswer(forgebench: Forgebench): Promise<number>[] {
  const handlers: ServeHandler[] = [
    (_task, reply) => reply.done({ text: "t", data: { n: 1 } }),
    async () => "plain text",
    () => [{ name: "a", parts: [{ text: "b" }] }],
    () => ({ category: "software" }),
    () => undefined,
    () => {
      throw new Error("fails the task");
    },
  ];
  return handlers.map((handler) => forgebench.agents.serve(handler, { maxTasks: 1, concurrency: 1, wait: 1 }));
}

export function aSearchItemHasNoHistory(task: TaskSummary, full: Task): unknown[] {
  const fromFull: TaskSummary = full;
  // @ts-expect-error a search lists tasks without their history
  const history: unknown = task.history;
  return [fromFull, history, task.status.state, task.context_id];
}

export function aSearchTakesOnlyKnownStatesAndDirections(): TaskSearch[] {
  // @ts-expect-error not a task state
  const badState: TaskSearch = { state: "done" };
  // @ts-expect-error not a direction
  const badDirection: TaskSearch = { direction: "sideways" };
  return [badState, badDirection, { state: "input_required", direction: "inbound", since: new Date(), limit: 5 }];
}

export async function pagesIterate(forgebench: Forgebench): Promise<string[]> {
  const ids: string[] = [];
  for await (const task of forgebench.agents.allTasks({ limit: 10 })) ids.push(task.id);
  const cards: AgentCard[] = [];
  for await (const card of forgebench.agents.allCards()) cards.push(card);
  const page = await forgebench.agents.cards({ limit: 5 });
  return [...ids, ...cards.map((card) => card.name), page.nextCursor ?? ""];
}

export function anEndpointTakesACredentialOrClearsIt(): EndpointIn[] {
  // @ts-expect-error a new credential and clear_auth: true, both, is refused
  const both: EndpointIn = { url: "https://me.example/a2a", auth: { type: "bearer", secret: "s" }, clear_auth: true };
  // @ts-expect-error a header credential names its header
  const headerWithoutName: EndpointIn = { url: "https://me.example/a2a", auth: { type: "header", secret: "s" } };
  // @ts-expect-error the url is required (null goes back to pull)
  const noUrl: EndpointIn = { clear_auth: true };
  return [both, headerWithoutName, noUrl, { url: null }, { url: "https://me.example/a2a", clear_auth: true }];
}

export function anAgentPatchTakesKnownStatusesOnly(): (AgentPatch | MemberRole)[] {
  // @ts-expect-error not an agent status
  const badStatus: AgentPatch = { status: "deleted" };
  // @ts-expect-error not a member role
  const badRole: MemberRole = "owner";
  // @ts-expect-error a name never changes
  const rename: AgentPatch = { name: "other" };
  return [badStatus, badRole, rename, { status: "paused", description: null }];
}

export function aNewKeyIsReadOnly(created: KeyCreated): string {
  // @ts-expect-error the key is read-only
  created.key = "fb_agt_other";
  return created.key;
}

export async function eventsNarrowByKind(forgebench: Forgebench, signal: AbortSignal): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of forgebench.agents.events("invoice-classifier", "t-1", { signal, lastEventId: 3 })) {
    if (event.event === "task") seen.push(event.data.context_id);
    else if (event.event === "error") seen.push(String(event.id));
    else seen.push(event.data.state, event.id);
  }
  const first: TaskEvent | undefined = undefined;
  return first === undefined ? seen : [];
}

export async function managementNamespaces(forgebench: Forgebench): Promise<unknown[]> {
  const page = await forgebench.audit.list({ outcome: "refused", since: new Date(), limit: 10 });
  const entries = [];
  for await (const entry of forgebench.audit.iter({ action: "binding." })) entries.push(entry.action);
  // @ts-expect-error not an audit outcome
  await forgebench.audit.list({ outcome: "denied" });
  // @ts-expect-error not a signing key purpose
  await forgebench.signingKeys.rotate({ purpose: "tls" });
  return [
    page.nextCursor,
    entries,
    await forgebench.calls.list("root"),
    await forgebench.settings.update({ word_search: false }),
    await forgebench.signingKeys.rotate({ purpose: "webhook-signing" }),
    await forgebench.members.create("Priya Raman", "viewer"),
  ];
}

export async function aBindingPatchRemovesAValueWithNull(forgebench: Forgebench): Promise<unknown[]> {
  const removes: BindingPatch = { limits: { max_fan_out: null }, contract: { skills: null, daily_quota: 100 } };
  // @ts-expect-error an object is patched field by field, never replaced by null
  const nullLimits: BindingPatch = { limits: null };
  // @ts-expect-error skills are a list of ids
  const oneSkill: BindingPatch = { contract: { skills: "lookup" } };
  // @ts-expect-error not a limit of a binding
  const unknown: BindingPatch = { limits: { max_depth: 3 } };
  const binding: Binding = await forgebench.agents.updateBinding("billing-orchestrator", "b-1", removes);
  const task = await forgebench.agents.call("invoice-classifier", { text: "Find INV-1", skill: "lookup" });
  return [nullLimits, oneSkill, unknown, binding.limits.max_call_depth, binding.contract.skills, binding.usage?.open, task.skill];
}

export async function policiesArePatchedByNameAndCheckedWithTheWireNames(forgebench: Forgebench): Promise<unknown[]> {
  const patch: Record<string, PolicyPatch | null> = { "no-refunds": { mode: "enforce", description: null }, "old-rule": null };
  // @ts-expect-error not a policy mode
  const badMode: PolicyPatch = { mode: "sometimes" };
  // @ts-expect-error a policy's text is a string
  const notText: PolicyPatch = { policy: null };
  const saved = await forgebench.policies.update(patch);
  // @ts-expect-error not an action a policy judges
  await forgebench.policies.check({ caller: "a", callee: "b", action: "delete" });
  // @ts-expect-error the body's names are the wire's: root_caller
  await forgebench.policies.check({ caller: "a", callee: "b", rootCaller: "a" });
  const check = await forgebench.policies.check({ caller: "a", callee: "b", skill: "refund", action: "open", depth: 2, root_caller: "a" });
  const outcome: AuditEntry["outcome"] = "would_refuse";
  return [badMode, notText, saved.version, saved.items[0]?.mode, check.allowed, check.would_refuse, outcome];
}

export async function deliveriesAreOperatedWithTypedAnswers(forgebench: Forgebench): Promise<unknown[]> {
  const health: EndpointHealth = await forgebench.agents.endpointHealth("invoice-classifier");
  // @ts-expect-error not an endpoint state
  const paused: EndpointHealth["state"] = "paused";
  const rate: number | null = health.success_rate;
  const enabled = await forgebench.agents.enableEndpoint("invoice-classifier");
  const fromDate = await forgebench.agents.redriveDeliveries("invoice-classifier", new Date());
  const fromText = await forgebench.agents.redriveDeliveries("invoice-classifier", "2026-12-07T09:00:00Z");
  // @ts-expect-error since is a Date or RFC 3339 text
  await forgebench.agents.redriveDeliveries("invoice-classifier", 1765098000);
  const replayed = await forgebench.agents.replayDelivery("invoice-classifier", "t-1");
  const agent = await forgebench.agents.get("invoice-classifier");
  return [paused, rate, health.attempts.ok, health.disable_after.failures, enabled.disabled?.reason, fromDate.task_ids, fromText.next_since, replayed.webhook_id, agent.endpoint?.disabled?.at];
}

export async function aNotificationReplayAnswersItsEventAndWebhookId(forgebench: Forgebench): Promise<unknown[]> {
  const replayed: ReplayedNotification = await forgebench.agents.replayNotification("invoice-classifier", "t-1", "hook");
  const event: number = replayed.event;
  // @ts-expect-error the config is named
  await forgebench.agents.replayNotification("invoice-classifier", "t-1");
  // @ts-expect-error the event is a number, not text
  const asText: string = replayed.event;
  return [event, asText, replayed.task_id, replayed.config_id, replayed.webhook_id];
}
