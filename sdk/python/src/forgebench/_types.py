"""The wire shapes, as typed dictionaries (see the gateway's `infra/openapi.yaml`)."""

from __future__ import annotations

import enum
from typing import Any, Literal, NotRequired, TypedDict

TaskState = Literal["submitted", "working", "input_required", "completed", "failed", "canceled"]
Direction = Literal["inbound", "outbound", "both"]
ReplyState = Literal["completed", "failed", "input_required"]


class FileRef(TypedDict):
    uri: str
    name: NotRequired[str]
    mime: NotRequired[str]


class Part(TypedDict, total=False):
    """Exactly one of `text`, `data` or `file`."""

    text: str
    data: Any
    file: FileRef


class Message(TypedDict):
    role: NotRequired[Literal["user", "agent"]]
    parts: list[Part]
    message_id: NotRequired[str]


class Artifact(TypedDict):
    name: NotRequired[str]
    parts: list[Part]


class TaskResultIn(TypedDict):
    """The body of `POST /v1/agents/me/tasks/{id}/result`."""

    state: ReplyState
    artifacts: NotRequired[list[Artifact]]
    message: NotRequired[Message]
    error: NotRequired[str]


# -- the management routes' shapes (infra/openapi.yaml, components/schemas) --------------------

Role = Literal["admin", "member", "viewer"]
AgentStatus = Literal["active", "paused", "retired"]
#: `would_refuse`: a tried (`dry_run`) tenant policy would have refused it; it went on.
AuditOutcome = Literal["allowed", "refused", "would_refuse"]
SigningPurpose = Literal["card-signing", "webhook-signing"]


class NotGiven(enum.Enum):
    """The type of `NOT_GIVEN`: a field left out of a request (None is sent as JSON `null`)."""

    NOT_GIVEN = "NOT_GIVEN"

    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: A field a request leaves out, where `None` would send `null` (which means something else).
NOT_GIVEN = NotGiven.NOT_GIVEN


class EndpointAuthInfo(TypedDict):
    """An endpoint's credential as the gateway shows it: never the secret."""

    type: str
    name: NotRequired[str]
    configured: bool


class EndpointDisabled(TypedDict):
    """`EndpointDisabled`: when a push endpoint that kept failing was switched off, and why (its
    failures in a row and since when). An admin enables it again (`agents.enable_endpoint`)."""

    at: str
    reason: str


class Endpoint(TypedDict):
    """A push agent's endpoint (`Agent.endpoint`). `disabled` is set (not None) while the
    endpoint is disabled."""

    url: str
    auth: NotRequired[EndpointAuthInfo | None]
    allow_private_network: NotRequired[bool]
    disabled: NotRequired[EndpointDisabled | None]


class Agent(TypedDict):
    """`Agent`: an agent of the tenant."""

    id: str
    name: str
    description: NotRequired[str | None]
    owner_member_id: NotRequired[str | None]
    status: AgentStatus
    endpoint: NotRequired[Endpoint | None]
    claim_timeout_seconds: NotRequired[int]
    input_modes: NotRequired[list[str]]
    created_at: str
    updated_at: NotRequired[str]


class KeyInfo(TypedDict):
    """`KeyInfo`: a key as a listing shows it; never the secret."""

    key_id: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None


class RevokedKey(TypedDict):
    """`KeyRevoked`: the answer to a key's revocation."""

    key_id: str
    revoked: bool


class Member(TypedDict):
    """`Member`: a person of the tenant, with every key it ever held."""

    member_id: str
    name: str
    role: Role
    created_at: str
    keys: list[KeyInfo]


class BindingLimits(TypedDict):
    """`Binding.limits`: the call-tree limits of the calls made through one binding, in place of
    the tenant's (docs/api.md, "Limits and contracts on a binding"). Every field is there; None
    is "the tenant's"."""

    max_call_depth: int | None
    refuse_cycles: bool | None
    max_fan_out: int | None
    max_open_in_tree: int | None


class BindingContract(TypedDict):
    """`Binding.contract`: what the caller may do on the callee through one binding. Every field
    is there; None is no bound (`skills` None: any skill, or none, may be named)."""

    skills: list[str] | None
    rate_per_minute: int | None
    max_concurrent: int | None
    daily_quota: int | None


class BindingUsage(TypedDict):
    """`Binding.usage`: the binding's use against its contract, counted since the contract was
    set: tasks opened through it in the current UTC minute and day, and its open tasks. None is
    what is not counted (`minute` and `day` while the contract has a rate, a quota or a
    concurrency; `open` while it has a concurrency)."""

    minute: int | None
    day: int | None
    open: int | None


class BindingLimitsPatch(TypedDict, total=False):
    """A merge patch of `Binding.limits` (`update_binding(limits=...)`): a field given replaces
    its value, None removes it (back to the tenant's), a field left out stays.

    `max_call_depth` 1 to 64; `max_fan_out` and `max_open_in_tree` 1 to 10,000.
    """

    max_call_depth: int | None
    refuse_cycles: bool | None
    max_fan_out: int | None
    max_open_in_tree: int | None


class BindingContractPatch(TypedDict, total=False):
    """A merge patch of `Binding.contract` (`update_binding(contract=...)`): a field given
    replaces its value, None removes it (no bound), a field left out stays.

    `skills` 1 to 64 skill ids (the callee's tool names); `rate_per_minute` and
    `max_concurrent` 1 to 10,000; `daily_quota` 1 to 1,000,000.
    """

    skills: list[str] | None
    rate_per_minute: int | None
    max_concurrent: int | None
    daily_quota: int | None


class Binding(TypedDict):
    """`Binding`: a caller -> callee permission; `approved_at` None while it is pending.

    `limits` and `contract` are on every binding, every field present (None: not set). `usage`
    is only in the list of bindings (`agents.bindings`) and the answer of
    `agents.update_binding`.
    """

    id: str
    caller_agent_id: str
    callee_agent_id: str
    source: str
    revoked: bool
    approved_at: str | None
    limits: BindingLimits
    contract: BindingContract
    usage: NotRequired[BindingUsage]
    created_at: NotRequired[str]
    updated_at: NotRequired[str]


class Bindings(TypedDict):
    """`Bindings`: an agent's bindings, as caller (`outbound`) and as callee (`inbound`)."""

    outbound: list[Binding]
    inbound: list[Binding]


class EndpointAuth(TypedDict):
    """The credential a push endpoint gets (`EndpointIn.auth`).

    `{"type": "bearer", "secret": ...}` sends `Authorization: Bearer <secret>`;
    `{"type": "header", "name": "X-Api-Key", "secret": ...}` sends `X-Api-Key: <secret>`.
    """

    type: Literal["bearer", "header"]
    secret: str
    name: NotRequired[str]


class Tool(TypedDict):
    """`Tool`: a tool binding, shown on the agent's card as a skill."""

    name: str
    description: str
    tags: list[str]


class RemovedTool(TypedDict):
    """`ToolRemoved`: the answer to a tool's removal."""

    name: str
    removed: bool


class DeliveryAttempt(TypedDict):
    """One push delivery attempt of a task (`AttemptList.items`)."""

    attempt: int
    at: str
    status: NotRequired[int | None]
    latency_ms: int
    error: NotRequired[str | None]


#: A push endpoint's state: `failing` when its latest attempt failed, `disabled` after a run of
#: failures (until an admin enables it), `active` otherwise.
EndpointState = Literal["active", "failing", "disabled"]


class EndpointAttemptCounts(TypedDict):
    """`EndpointHealth.attempts`: deliveries that succeeded and failed since `since` (the start
    of yesterday, UTC). `ok` may lag by a minute (the gateway adds successes up)."""

    ok: int
    failed: int
    since: str


class EndpointDisableAfter(TypedDict):
    """`EndpointHealth.disable_after`: the gateway disables an endpoint that failed `failures`
    attempts in a row spanning at least `seconds`."""

    failures: int
    seconds: int


class EndpointHealth(TypedDict):
    """`EndpointHealth`: a push endpoint's health (`agents.endpoint_health`), also the answer of
    `agents.enable_endpoint`. `success_rate` (0 to 1) is None before any attempt."""

    agent_id: str
    url: str
    state: EndpointState
    success_rate: float | None
    attempts: EndpointAttemptCounts
    consecutive_failures: int
    failing_since: str | None
    last_error: str | None
    last_failure_at: str | None
    last_success_at: str | None
    disabled: EndpointDisabled | None
    disable_after: EndpointDisableAfter


class Redriven(TypedDict):
    """`Redriven`: the tasks a redrive attempted again now (at most 100, oldest first), and the
    `since` to redrive from next when more may wait (None otherwise)."""

    redriven: int
    task_ids: list[str]
    next_since: str | None


class Replayed(TypedDict):
    """`Replayed`: the task whose waiting delivery is attempted now, and that delivery's
    `webhook-id` (kept: a replay is a retry of the same delivery)."""

    task_id: str
    webhook_id: str


class ReplayedNotification(TypedDict):
    """`ReplayedNotification`: the A2A push notification config of the task that is sent its
    latest event again, that `event`'s number (its place in the task's events, from 1), and its
    `webhook-id` (`{task_id}:{config_id}:{event}`, the one it was first sent under, so a receiver
    that handled it drops it)."""

    task_id: str
    config_id: str
    event: int
    webhook_id: str


class AuditActor(TypedDict, total=False):
    """Who did what an audit entry records: `kind` (`agent`, `member`, ...) and `id`."""

    kind: str
    id: str


class AuditEntry(TypedDict):
    """`AuditEntry`: one entry of the tenant's audit log."""

    id: str
    at: str
    actor: AuditActor
    action: str
    target: str
    outcome: AuditOutcome
    reason: NotRequired[str | None]
    #: The tenant policies that decided it (reason `policy`), by name, comma-separated: the
    #: enforced ones that refused it, or the tried ones that would have; None otherwise.
    policy: NotRequired[str | None]
    call_id: NotRequired[str | None]
    #: An open's or a caller's answer's lineage, allowed or refused: the call that caused it and
    #: the first call of its chain (a refused open is found in its tree by ``root_call_id``).
    parent_call_id: NotRequired[str | None]
    root_call_id: NotRequired[str | None]
    task_id: NotRequired[str | None]
    count: NotRequired[int]


class Call(TypedDict):
    """One call of a lineage tree (`CallList.items`)."""

    call_id: str
    parent_call_id: str | None
    root_call_id: str
    task_id: str | None
    caller_agent_id: str
    callee_agent_id: str
    at: str


class TenantSettings(TypedDict):
    """`TenantSettings`: the caller's tenant's settings.

    The call-tree limits (docs/api.md, "Governance"): `max_call_depth` (1 to 64, default 16),
    `refuse_cycles` (default False), `max_fan_out` and `max_open_in_tree` (1 to 10,000, or
    None for no limit, the default).
    """

    tenant_id: str
    word_search: bool
    max_call_depth: int
    refuse_cycles: bool
    max_fan_out: int | None
    max_open_in_tree: int | None


#: Whether a tenant policy refuses what it forbids (`enforce`), or is tried (`dry_run`): it
#: refuses nothing and the audit log says what it would have refused (`would_refuse`).
PolicyMode = Literal["enforce", "dry_run"]
#: What a caller does to a task, as a tenant policy judges it: `open` it, `answer` its
#: question, `cancel` it, `read` it (the task, its events, its push configs).
PolicyAction = Literal["open", "answer", "cancel", "read"]


class TenantPolicy(TypedDict):
    """`TenantPolicy`: one of the tenant's policies (docs/api.md, "Tenant policies"), a Cedar
    `forbid` over the caller agent (`principal`), the action, the callee (`resource`) and the
    call's context (`depth`, `tenant`, `now`, and `skill` and `root_caller` behind `has`)."""

    name: str
    policy: str
    mode: PolicyMode
    description: str | None
    updated_at: str


class TenantPolicies(TypedDict):
    """`TenantPolicies`: the tenant's policies by name, and the version of the set (one more
    with every change; 0 for a tenant that never had any)."""

    version: int
    items: list[TenantPolicy]


class PolicyPatch(TypedDict, total=False):
    """A merge patch of one policy (`policies.update({name: patch})`): a field given replaces
    its value, a field left out keeps it; `description` None removes the description.

    A new policy needs its `policy` (1 to 8,000 characters, one Cedar `forbid`) and is tried
    (`dry_run`) unless `mode` says `enforce`; `{"mode": "enforce"}` alone enforces a tried one.
    `description` is at most 500 characters.
    """

    policy: str
    mode: PolicyMode
    description: str | None


class CallCheck(TypedDict):
    """`CallCheck`: whether the gate would allow a call now, and why (`policies.check`).

    `reason` is the audit log's reason for the refusal (`no_binding`, `skill_not_allowed`,
    `policy`, ...), None when allowed; `policies` the enforced policies that forbid it,
    `would_refuse` the tried ones that would.
    """

    allowed: bool
    reason: str | None
    policies: list[str]
    would_refuse: list[str]


class Jwk(TypedDict):
    """One Ed25519 public key of the JWKS; `purpose` says what it signs."""

    kty: str
    crv: str
    x: str
    kid: str
    alg: str
    use: str
    purpose: NotRequired[SigningPurpose]


class Jwks(TypedDict):
    """`Jwks`: every signing key not retired, both purposes."""

    keys: list[Jwk]


class SigningKey(TypedDict):
    """`Kid`: the signing key a rotation made active."""

    kid: str
    purpose: SigningPurpose


class RetiredSigningKey(TypedDict):
    """`RetiredKey`: the answer to a signing key's retirement."""

    kid: str
    purpose: SigningPurpose
    retired: bool


class SubjectGrant(TypedDict):
    """`SubjectGrant`: a token subject a trusted issuer lists, and whom it signs in as: an agent
    (`agent_id`) or a member (`member_id`)."""

    subject: str
    agent_id: NotRequired[str]
    member_id: NotRequired[str]


class SubjectGrantIn(TypedDict):
    """`SubjectGrantIn`: a subject to list: the token's `sub` exactly, and exactly one of
    `agent` (the agent's name or id) and `member_id`."""

    subject: str
    agent: NotRequired[str]
    member_id: NotRequired[str]


class IssuerDiscovery(TypedDict):
    """What reading a trusted issuer's discovery document found (`TrustedIssuer.discovery`)."""

    read: bool
    problem: NotRequired[str]
    """Why the document could not be used, when `read` is false."""


class TrustedIssuer(TypedDict):
    """`TrustedIssuer`: an OpenID Connect issuer the tenant trusts for one audience.

    `discovery` is only in the answer to `issuers.trust`: whether the issuer's discovery
    document could be read then; one that could not does not stop the trust.
    """

    id: str
    issuer: str
    audience: str
    discovery_url: str
    subjects: list[SubjectGrant]
    created_at: str
    updated_at: str
    discovery: NotRequired[IssuerDiscovery]


class IssuerRemoved(TypedDict):
    """`IssuerRemoved`: the answer to an issuer's distrust."""

    id: str
    removed: bool
