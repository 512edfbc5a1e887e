/**
 * The gateway's REST shapes, as the wire carries them (snake_case). A `Task` here is exactly the
 * JSON every task route answers with; the helpers in `text.ts` read it.
 */

/** Where a task stands. `submitted` and `working` are pending; the other four are answers. */
export type TaskState =
  | "submitted"
  | "working"
  | "input_required"
  | "completed"
  | "failed"
  | "canceled";

/** A file a part points at; the gateway stores the reference, never the file. */
export interface FileRef {
  uri: string;
  name?: string;
  mime?: string;
}

/**
 * Structured JSON a data part carries: any JSON value. It is typed `any` so that a handler can
 * read into it (`part.data?.invoice_id`) without a cast; check what you read before you use it.
 */
export type PartData = any;

/** A text part: `{"text": "..."}`. */
export interface TextPart {
  text: string;
  data?: never;
  file?: never;
}

/** A data part: `{"data": <any JSON>}`. */
export interface DataPart {
  data: PartData;
  text?: never;
  file?: never;
}

/** A file part: `{"file": {"uri", "name"?, "mime"?}}`. */
export interface FilePart {
  file: FileRef;
  text?: never;
  data?: never;
}

/** A message part is exactly one of text, data or file, never more than one. */
export type Part = TextPart | DataPart | FilePart;

/** Who wrote a message: the caller (`user`) or the callee (`agent`). */
export type Role = "user" | "agent";

export interface Message {
  role?: Role;
  parts: Part[];
  /** Makes the write that carries the message safe to repeat (see the gateway's API decisions). */
  message_id?: string;
}

/** A named output of a completed task. */
export interface Artifact {
  name?: string;
  parts: Part[];
}

export interface TaskStatus {
  state: TaskState;
  /** The callee's question while `input_required`; a completed result's message, if any. */
  message: Message | null;
  timestamp: string;
}

/** A task as every task route returns it. */
export interface Task {
  id: string;
  /** The conversation this task belongs to; pass it as `contextId` to continue it. */
  context_id: string;
  caller_agent_id: string;
  callee_agent_id: string;
  status: TaskStatus;
  input: { message: Message };
  artifacts: Artifact[];
  error: string | null;
  /** Every message of the exchange, oldest first. */
  history: Message[];
  /** The governed call that opened the task: the parent of the calls its handler makes. */
  call_id: string | null;
  parent_call_id: string | null;
  root_call_id: string | null;
  /** The callee's skill the open named (`call`'s `skill`); `null` when it named none. */
  skill: string | null;
  /**
   * The W3C trace context of the task's open (a span of the trace its call tree is): a pull
   * callee's work on the task joins the trace under it. Absent from gateways before it.
   */
  traceparent?: string | null;
  /** The W3C `tracestate` the open brought; `null` when none. */
  tracestate?: string | null;
  delivery: "pull" | "push";
  created_at: string;
  updated_at: string;
}

/**
 * A task as a search lists it (`GET /v1/tasks`): every field of a `Task` but its `history`
 * (read the task itself for that).
 */
export type TaskSummary = Omit<Task, "history" | "error" | "parent_call_id" | "skill"> & {
  error?: string | null;
  parent_call_id?: string | null;
  skill?: string | null;
};

/** An agent's signed A2A 1.0 card, as `GET /v1/agents/{agent}/.well-known/agent-card.json` returns it. */
export interface AgentCard {
  name: string;
  description: string;
  version: string;
  /** The REST task route: `{base}/v1/agents/{id}/tasks`. */
  url: string;
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  provider?: { organization?: string; url?: string };
  capabilities: { streaming?: boolean; pushNotifications?: boolean; extendedAgentCard?: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  securitySchemes: Record<string, unknown>;
  securityRequirements: { schemes: Record<string, unknown> }[];
  /** One per tool binding; empty for an agent without tools. */
  skills: { id: string; name: string; description: string; tags: string[] }[];
  /** Two JWS entries over the card (see the gateway's docs); verify them before trusting the card. */
  signatures: { protected: string; signature: string }[];
}

/** The states a pull callee may answer with. */
export type ResultState = "completed" | "failed" | "input_required";

/** The body of `POST /v1/agents/me/tasks/{id}/result`: a callee's answer. */
export interface TaskResultIn {
  state: ResultState;
  artifacts?: Artifact[];
  /** The question of an `input_required` result; optional on `completed`. */
  message?: Message;
  /** What went wrong, for `failed`. */
  error?: string;
}

// ---------------------------------------------------------------------------------------------
// Management shapes (infra/openapi.yaml `components.schemas`), as the wire carries them.
// Written by hand from the schemas; test/schemas.test.ts checks their fields against the document.
// ---------------------------------------------------------------------------------------------

/**
 * A secret the gateway shows once (`key`, `admin_key`). The SDK keeps it on the object but not
 * enumerable: `created.key` reads it, while `console.log(created)`, `JSON.stringify(created)`
 * and `{ ...created }` leave it out, so a logged answer never leaks it.
 */
export type Secret = string;

/** A member's role in the tenant. */
export type MemberRole = "admin" | "member" | "viewer";

/** `POST /v1/tenants` (operator key): the new tenant and its first admin key. */
export interface TenantCreated {
  tenant_id: string;
  name: string;
  /** The admin key, shown once; not enumerable (see `Secret`). */
  readonly admin_key: Secret;
}

/** A key as its owner's listing shows it (`KeyInfo`); never the secret. */
export interface KeyInfo {
  key_id: string;
  created_at: string;
  /** When the key last authenticated a request, to the hour. */
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A key just issued (`KeyCreated`): its id and the key itself, shown once. */
export interface KeyCreated {
  key_id: string;
  /** The key, shown once; not enumerable (see `Secret`). */
  readonly key: Secret;
}

/** The answer of a key revocation (`KeyRevoked`). */
export interface KeyRevoked {
  key_id: string;
  revoked: boolean;
}

/** A person of the tenant with every key it ever held (`Member`). */
export interface Member {
  member_id: string;
  name: string;
  role: MemberRole;
  created_at: string;
  keys: KeyInfo[];
}

/** `POST /v1/members`: the new member and its first key (`MemberCreated`). */
export interface MemberCreated {
  member_id: string;
  name: string;
  role: MemberRole;
  /** The key's id (the member id for a member's first key). */
  key_id?: string;
  /** The member's key, shown once; not enumerable (see `Secret`). */
  readonly key: Secret;
}

/** An agent's lifecycle: `paused` suspends its keys, `retired` is final. */
export type AgentStatus = "active" | "paused" | "retired";

/**
 * When a push endpoint that kept failing was switched off, and why: its failures in a row and
 * since when (`EndpointDisabled`). An admin enables it again (`agents.enableEndpoint`).
 */
export interface EndpointDisabled {
  at: string;
  reason: string;
}

/** A push agent's endpoint as the gateway shows it; the credential's secret never comes back. */
export interface AgentEndpoint {
  url: string;
  auth?: { type: string; name?: string; configured: boolean } | null;
  allow_private_network?: boolean;
  /** Set while the endpoint is disabled; absent or `null` otherwise. */
  disabled?: EndpointDisabled | null;
}

/** An agent (`Agent`). */
export interface Agent {
  id: string;
  name: string;
  description?: string | null;
  owner_member_id?: string | null;
  status: AgentStatus;
  /** The push endpoint; `null` for a pull agent. */
  endpoint?: AgentEndpoint | null;
  claim_timeout_seconds?: number;
  /** The media ranges of the parts the agent accepts (its card's `defaultInputModes`). */
  input_modes?: string[];
  created_at: string;
  updated_at?: string;
}

/** The fields of a new agent but its name (`AgentIn`); every one optional. */
export interface AgentFields {
  description?: string | null;
  /** The member who owns it; absent or null, the creating person. Only an admin may name another. */
  owner_member_id?: string | null;
  /** 1 to 86,400; absent or null, 900. */
  claim_timeout_seconds?: number | null;
  /** 1 to 16 media ranges (`type/subtype`, `type/*`, `*\/*`); absent or null, everything. */
  input_modes?: string[] | null;
}

/** A change of an agent (`AgentPatch`): at least one field. A name never changes. */
export interface AgentPatch {
  status?: AgentStatus;
  description?: string | null;
  claim_timeout_seconds?: number;
  /** Null goes back to everything the gateway carries. */
  input_modes?: string[] | null;
}

/**
 * A binding's own call-tree limits (`Binding.limits`), in place of the tenant's for the calls
 * made through it; every field is there, `null` meaning "the tenant's".
 */
export interface BindingLimits {
  /** 1 to 64: the most calls on one path of a call tree, its root counted as 1. */
  max_call_depth: number | null;
  /** Whether a call to an agent already on its own path to the root is refused. */
  refuse_cycles: boolean | null;
  /** 1 to 10,000: the most tasks one call may open. */
  max_fan_out: number | null;
  /** 1 to 10,000: the most tasks of one call tree open at once. */
  max_open_in_tree: number | null;
}

/**
 * What the caller may do on the callee through a binding (`Binding.contract`); every field is
 * there, `null` meaning no bound. Past `skills` an open is refused with the gate's one
 * `PermissionDeniedError` (`not_permitted`); past a rate, a concurrency or a quota with a
 * `RateLimitError` whose `code` is `quota_exceeded` (and `retryAfterSeconds`).
 */
export interface BindingContract {
  /** 1 to 64 skill ids (the callee's tool names) an open must name one of; `null`: any, or none. */
  skills: string[] | null;
  /** 1 to 10,000 tasks opened in one UTC minute. */
  rate_per_minute: number | null;
  /** 1 to 10,000 open tasks (submitted, working, input-required) at once. */
  max_concurrent: number | null;
  /** 1 to 1,000,000 tasks opened in one UTC day. */
  daily_quota: number | null;
}

/**
 * A binding's use against its contract (`Binding.usage`), counted from when the contract was
 * set: `null` is what is not counted (`minute` and `day` while the contract has a rate, a quota
 * or a concurrency; `open` while it has a concurrency).
 */
export interface BindingUsage {
  /** Tasks opened through the binding in the current UTC minute. */
  minute: number | null;
  /** Tasks opened through the binding in the current UTC day. */
  day: number | null;
  /** The binding's open tasks. */
  open: number | null;
}

/** A merge patch of a binding's limits: a field given replaces its value, `null` removes it, one left out stays. */
export type BindingLimitsPatch = Partial<BindingLimits>;

/** A merge patch of a binding's contract: a field given replaces its value, `null` removes it, one left out stays. */
export type BindingContractPatch = Partial<BindingContract>;

/**
 * `PATCH /v1/agents/{agent}/agents/{binding_id}` (`agents.updateBinding`): either object may be
 * left out (it stays as it is); an empty patch changes nothing.
 */
export interface BindingPatch {
  limits?: BindingLimitsPatch;
  contract?: BindingContractPatch;
}

/**
 * A caller → callee binding (`Binding`); `approved_at` null while pending. `limits` and
 * `contract` are in every answer; `usage` only in the list (`bindings`) and in the answer of
 * `updateBinding`.
 */
export interface Binding {
  id: string;
  caller_agent_id: string;
  callee_agent_id: string;
  source: string;
  revoked: boolean;
  approved_at: string | null;
  limits: BindingLimits;
  contract: BindingContract;
  usage?: BindingUsage;
  created_at?: string;
  updated_at?: string;
}

/** An agent's bindings (`Bindings`): those it calls through, and those that call it. */
export interface Bindings {
  outbound: Binding[];
  inbound: Binding[];
}

/** The credential each push delivery carries; sealed by the gateway, never shown again. */
export type EndpointAuth =
  | { type: "bearer"; secret: string }
  | { type: "header"; name: string; secret: string };

/**
 * `PUT /v1/agents/{agent}/endpoint` (`EndpointIn`): a URL (or `null`, back to pull), with a new
 * credential (`auth`) or `clear_auth: true`, never both.
 */
export type EndpointIn = {
  url: string | null;
  /** Admin only: let the URL resolve to private ranges. Omitted means false. */
  allow_private_network?: boolean | null;
} & (
  | { auth: EndpointAuth; clear_auth?: false | null }
  | { auth?: null; clear_auth?: boolean | null }
);

/** A tool binding of an agent: one skill of its card (`Tool`). */
export interface Tool {
  name: string;
  description: string;
  tags: string[];
}

/** `PUT /v1/agents/{agent}/tools/{tool}` (`ToolIn`). */
export interface ToolIn {
  /** 1 to 2,000 characters, not only white space. */
  description: string;
  /** Up to 20 tags of 1 to 64 characters. */
  tags?: string[] | null;
}

/** The answer of `DELETE /v1/agents/{agent}/tools/{tool}` (`ToolRemoved`). */
export interface ToolRemoved {
  name: string;
  removed: boolean;
}

/** One push delivery attempt of a task (`AttemptList` items). */
export interface DeliveryAttempt {
  attempt: number;
  at: string;
  /** The endpoint's HTTP status; null when none came. */
  status?: number | null;
  latency_ms: number;
  error?: string | null;
}

/**
 * A push endpoint's state: `failing` when its latest attempt failed, `disabled` after a run of
 * failures (until an admin enables it), `active` otherwise.
 */
export type EndpointState = "active" | "failing" | "disabled";

/**
 * The deliveries of an endpoint that succeeded and failed since `since`, the start of yesterday
 * (UTC) (`EndpointHealth.attempts`). `ok` may lag by a minute: the gateway adds successes up.
 */
export interface EndpointAttemptCounts {
  ok: number;
  failed: number;
  since: string;
}

/** The gateway disables an endpoint that failed `failures` attempts in a row spanning at least `seconds`. */
export interface EndpointDisableAfter {
  failures: number;
  seconds: number;
}

/** A push endpoint's health (`EndpointHealth`): `agents.endpointHealth`, and the answer of `agents.enableEndpoint`. */
export interface EndpointHealth {
  agent_id: string;
  url: string;
  state: EndpointState;
  /** The share of the deliveries counted in `attempts` that succeeded, 0 to 1; `null` before any. */
  success_rate: number | null;
  attempts: EndpointAttemptCounts;
  /** Failed attempts in a row since the latest success (0 while it succeeds). */
  consecutive_failures: number;
  /** The first failure of the current run; `null` while the endpoint succeeds. */
  failing_since: string | null;
  last_error: string | null;
  last_failure_at: string | null;
  last_success_at: string | null;
  disabled: EndpointDisabled | null;
  disable_after: EndpointDisableAfter;
}

/**
 * The answer of a redrive (`Redriven`): the tasks whose waiting delivery is attempted again now
 * (at most 100, oldest first), and the `since` to redrive from next when more may wait.
 */
export interface Redriven {
  redriven: number;
  task_ids: string[];
  next_since: string | null;
}

/** The answer of a replay (`Replayed`): the task, and its delivery's `webhook-id` (kept: a replay is a retry). */
export interface Replayed {
  task_id: string;
  webhook_id: string;
}

/**
 * The answer of a notification's replay (`ReplayedNotification`): the task's A2A push notification
 * config that is sent its latest event again, that event's number (its place in the task's events,
 * from 1), and its `webhook-id` (`{task_id}:{config_id}:{event}`: the one it was first sent under,
 * so a receiver that handled it drops it).
 */
export interface ReplayedNotification {
  task_id: string;
  config_id: string;
  event: number;
  webhook_id: string;
}

/**
 * Whether an audited action was let through: `would_refuse` is a call a tried (`dry_run`)
 * tenant policy would have refused; it went on.
 */
export type AuditOutcome = "allowed" | "refused" | "would_refuse";

/** One entry of the tenant's audit log (`AuditEntry`). */
export interface AuditEntry {
  id: string;
  at: string;
  /** Who acted; `name` is the member's name for an entry a person made. */
  actor: { kind?: string; id?: string; name?: string | null };
  /** `agent.create`, `binding.approve`, `task.open`, ... (docs/api.md, "Audit log"). */
  action: string;
  target: string;
  outcome: AuditOutcome;
  reason?: string | null;
  /**
   * For an entry a tenant policy decided (reason `policy`): the policies by name,
   * comma-separated; the enforced ones that refused it, or the tried ones that would have.
   */
  policy?: string | null;
  call_id?: string | null;
  /** An open's or a caller's answer's call lineage, allowed or refused: the call that caused it. */
  parent_call_id?: string | null;
  /** The first call of its chain: a refused open is found in its tree by this. */
  root_call_id?: string | null;
  task_id?: string | null;
  /** For an entry about a binding or a task: its caller. */
  caller_agent_id?: string | null;
  /** For an entry about a binding or a task: its callee. */
  callee_agent_id?: string | null;
  /** How many times this happened in the entry's minute (refusals); 1 otherwise. */
  count?: number;
}

/** One governed call of a lineage tree (`CallList` items). */
export interface Call {
  call_id: string;
  parent_call_id?: string | null;
  root_call_id: string;
  task_id: string;
  caller_agent_id: string;
  callee_agent_id: string;
  at: string;
}

/** What a signing key signs: agent cards, or push deliveries. */
export type SigningKeyPurpose = "card-signing" | "webhook-signing";

/** The answer of a rotation (`Kid`): the new active key. */
export interface SigningKeyId {
  kid: string;
  purpose: SigningKeyPurpose;
}

/** The answer of a retirement (`RetiredKey`). */
export interface RetiredSigningKey {
  kid: string;
  purpose: SigningKeyPurpose;
  retired: true;
}

/** The tenant's settings (`TenantSettings`). */
export interface TenantSettings {
  tenant_id: string;
  /** Whether task message words are indexed for `q` searches (default true). */
  word_search: boolean;
  /** The most calls on one path of a call tree, its root counted as 1: 1 to 64 (default 16). */
  max_call_depth: number;
  /** Whether a call to an agent already on its own path to the root is refused (default false). */
  refuse_cycles: boolean;
  /** The most tasks one call may open, 1 to 10,000; `null` is no limit (the default). */
  max_fan_out: number | null;
  /** The most tasks of one call tree open at once, 1 to 10,000; `null` is no limit (the default). */
  max_open_in_tree: number | null;
}

/**
 * A change of the tenant's settings (`TenantSettingsPatch`); an empty one changes nothing. A
 * field left out keeps its value; `null` clears `max_fan_out` or `max_open_in_tree` (no limit).
 * A change of the call-tree limits is audited as `tenant.call_tree`.
 */
export interface TenantSettingsPatch {
  word_search?: boolean;
  max_call_depth?: number;
  refuse_cycles?: boolean;
  max_fan_out?: number | null;
  max_open_in_tree?: number | null;
}

/**
 * Whether a tenant policy refuses what it forbids (`enforce`), or is tried (`dry_run`): it
 * refuses nothing, and the audit log records what it would have refused (`would_refuse`).
 */
export type PolicyMode = "enforce" | "dry_run";

/**
 * What a caller does to a task, as a tenant policy judges it: `open` it, `answer` its question,
 * `cancel` it, `read` it (the task, its events, its push configs).
 */
export type PolicyAction = "open" | "answer" | "cancel" | "read";

/**
 * One of the tenant's policies (`TenantPolicy`): a Cedar `forbid` over the caller agent
 * (`principal`), the action, the callee (`resource`) and the call's context (`depth`, `tenant`,
 * `now`, and `skill` and `root_caller` behind `has`).
 */
export interface TenantPolicy {
  /** 1 to 64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit. */
  name: string;
  /** One Cedar `forbid`. */
  policy: string;
  mode: PolicyMode;
  description: string | null;
  updated_at: string;
}

/** The tenant's policies by name (`TenantPolicies`). */
export interface TenantPolicies {
  /** One more with every change; 0 for a tenant that never had policies. */
  version: number;
  items: TenantPolicy[];
}

/**
 * A merge patch of one policy (`TenantPolicyPatch`): a field given replaces its value, one left
 * out keeps it; `description: null` removes the description. A new policy needs its `policy`
 * and is tried (`dry_run`) unless `mode` says `enforce`; `{ mode: "enforce" }` alone enforces a
 * tried one.
 */
export interface PolicyPatch {
  /** 1 to 8,000 characters: one Cedar `forbid`. */
  policy?: string;
  mode?: PolicyMode;
  /** At most 500 characters. */
  description?: string | null;
}

/** `PATCH /v1/tenant/policies` (`TenantPoliciesPatch`): policies by name, `null` removing one. */
export interface TenantPoliciesPatch {
  policies: Record<string, PolicyPatch | null>;
}

/**
 * `POST /v1/tenant/policies/check` (`CallCheckIn`): the call to judge. Agents by name or id;
 * `action` defaults to `open`, `depth` (1 to 64) to 1, and a root call's `root_caller` is its
 * caller.
 */
export interface CallCheckIn {
  caller: string;
  callee: string;
  /** The callee's skill the call names. */
  skill?: string | null;
  action?: PolicyAction | null;
  depth?: number | null;
  root_caller?: string | null;
}

/** Whether the gate would allow a call now, and why (`CallCheck`). */
export interface CallCheck {
  allowed: boolean;
  /** The audit log's reason for the refusal (`no_binding`, `skill_not_allowed`, `policy`, ...); `null` when allowed. */
  reason: string | null;
  /** The enforced policies that forbid it. */
  policies: string[];
  /** The tried (`dry_run`) policies that would forbid it. */
  would_refuse: string[];
}

/**
 * Who a subject of a trusted issuer signs in as (`SubjectGrant`): an agent (`agent_id`) or a
 * member (`member_id`), never both.
 */
export type SubjectGrant =
  | { subject: string; agent_id: string; member_id?: never }
  | { subject: string; member_id: string; agent_id?: never };

/**
 * A subject to list on a trusted issuer (`SubjectGrantIn`): the token's `sub`, exactly, and the
 * agent (its name or id) or the member (`member_id`) it signs in as; exactly one of the two.
 */
export type SubjectGrantIn =
  | { subject: string; agent: string; member_id?: never }
  | { subject: string; member_id: string; agent?: never };

/** An OpenID Connect issuer the tenant trusts for one audience (`TrustedIssuer`). */
export interface TrustedIssuer {
  id: string;
  /** The issuer exactly as its tokens carry it in `iss`. */
  issuer: string;
  /** The `aud` its tokens must name. */
  audience: string;
  /** Where the gateway reads the issuer's discovery document (and from it, its JWKS). */
  discovery_url: string;
  /** The subjects whose tokens sign in, and as whom. */
  subjects: SubjectGrant[];
  created_at: string;
  updated_at: string;
  /**
   * Only in the answer to `issuers.trust`: what reading the issuer's discovery document then
   * found. One that could not be read (`read: false`, and the `problem`) does not stop the trust.
   */
  discovery?: IssuerDiscovery;
}

/** What reading a trusted issuer's discovery document found (`TrustedIssuer.discovery`). */
export interface IssuerDiscovery {
  /** Whether the document was read and names the issuer. */
  read: boolean;
  /** Why it could not be used, when `read` is false. */
  problem?: string;
}

/** `POST /v1/issuers` (`TrustedIssuerIn`). */
export interface TrustedIssuerIn {
  issuer: string;
  audience: string;
  subjects?: SubjectGrantIn[];
}

/** `PATCH /v1/issuers/{issuer_id}` (`TrustedIssuerPatch`): the new list, replacing the old. */
export interface TrustedIssuerPatch {
  subjects: SubjectGrantIn[];
}

/** The answer of `DELETE /v1/issuers/{issuer_id}` (`IssuerRemoved`). */
export interface IssuerRemoved {
  id: string;
  removed: boolean;
}

/** The kinds of change a task's event stream carries after its first `task` event. */
export type TaskChangeKind = "status" | "progress" | "question" | "answer" | "artifact" | "final";

/** The `data` of a change event: the change's number, the task's state after it, what it added. */
export interface TaskChange {
  task_id: string;
  /** The change's number (also the event's `id`). */
  event: number;
  state: TaskState;
  timestamp: string;
  /** `progress`, `question`, `answer` (role `user`), and `final`'s status message if any. */
  message?: Message | null;
  /** `artifact`: the artifact and its place among the task's artifacts. */
  artifact?: Artifact;
  artifact_index?: number;
  /** `final` of a failed task. */
  error?: string | null;
}

/**
 * One server-sent event of a task's stream (`agents.events`), its `data` parsed: the task first
 * (`task`), then one change per event, in order. `error` (no `id`) says the stream could not go
 * on: reconnect with `lastEventId`.
 */
export type TaskEvent =
  | { event: "task"; id: string; data: Task }
  | { event: TaskChangeKind; id: string; data: TaskChange }
  | { event: "error"; id: null; data: { detail: unknown } };
