"""`Forgebench`, the sync client, and its resources (`agents`, `members`, `audit`, ...)."""

from __future__ import annotations

import builtins
import os
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from . import _requests as requests
from ._auth import StaticKey, SyncTokenSource, TokenProvider
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, HOSTED_URL, SyncTransport
from ._models import AuditPage, CreatedMember, CreatedTenant, EventParser, IssuedKey, TaskEvent
from ._pages import CardPage, TaskPage
from ._serve import DEFAULT_SERVE_WAIT_SECONDS, Handler, SyncServer, check_serve_arguments
from ._task import HandlerResult, Task, new_message_id, reply_from_result
from ._types import (
    NOT_GIVEN,
    Agent,
    AgentStatus,
    AuditEntry,
    AuditOutcome,
    Binding,
    CallCheck,
    BindingContractPatch,
    BindingLimitsPatch,
    Bindings,
    Call,
    DeliveryAttempt,
    Direction,
    EndpointAuth,
    EndpointHealth,
    IssuerRemoved,
    Jwks,
    KeyInfo,
    Member,
    NotGiven,
    Part,
    PolicyAction,
    PolicyPatch,
    Redriven,
    RemovedTool,
    Replayed,
    ReplayedNotification,
    RetiredSigningKey,
    RevokedKey,
    Role,
    SigningKey,
    SigningPurpose,
    SubjectGrantIn,
    TaskState,
    TenantPolicies,
    TenantSettings,
    Tool,
    TrustedIssuer,
)


URL_VARIABLE = "FORGEBENCH_URL"
API_KEY_VARIABLE = "FORGEBENCH_API_KEY"
DEPRECATED_URL_VARIABLE = "FORGEBENCH_BASE_URL"


def resolve_settings(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    """The key and base URL given, else `FORGEBENCH_API_KEY` / `FORGEBENCH_URL`.

    An argument always wins over the environment. `FORGEBENCH_BASE_URL` (deprecated) is read
    only when `FORGEBENCH_URL` is unset. There is no default gateway: with no URL anywhere this
    raises `ValueError`, before any request.
    """
    key = api_key if api_key is not None else os.environ.get(API_KEY_VARIABLE, "")
    url = base_url if base_url is not None else _url_from_environment()
    return key, _required_url(url)


def _required_url(url: str) -> str:
    if not url:
        raise ValueError(
            f"a base_url is required (or set {URL_VARIABLE}): the gateway to send the key to, "
            f'e.g. base_url="{HOSTED_URL}" for the hosted service'
        )
    return url


def resolve_sign_in(
    api_key: str | None, token_provider: object | None, base_url: str | None
) -> tuple[str | None, str]:
    """The key (None when the client signs in with `token_provider`'s tokens) and base URL.

    `api_key` and `token_provider` are exclusive. Without a provider the key is `api_key`, else
    `FORGEBENCH_API_KEY`, and one is required; with a provider `FORGEBENCH_API_KEY` is not
    read. The URL is resolved as by `resolve_settings`. Raises `ValueError` before any request.
    """
    key: str | None = None
    if token_provider is None:
        key = api_key if api_key is not None else os.environ.get(API_KEY_VARIABLE, "")
    elif api_key is not None:
        raise ValueError("give either api_key or token_provider, not both")
    elif not callable(token_provider):
        raise TypeError("token_provider must be a callable that returns an access token")
    # read here, not through resolve_settings: the deprecation warning's stacklevel counts frames
    url = _required_url(base_url if base_url is not None else _url_from_environment())
    if token_provider is None and not key:
        raise ValueError(f"an api_key or a token_provider is required (or set {API_KEY_VARIABLE})")
    return key, url


def _url_from_environment() -> str:
    url = os.environ.get(URL_VARIABLE, "")
    if url:
        return url
    deprecated = os.environ.get(DEPRECATED_URL_VARIABLE, "")
    if deprecated:
        warnings.warn(
            f"{DEPRECATED_URL_VARIABLE} is deprecated: set {URL_VARIABLE} instead",
            DeprecationWarning,
            stacklevel=4,  # the code that made the client
        )
    return deprecated


class Agents:
    """Agents: what an agent key does (open and read tasks as a caller, claim and answer them
    as callee), and managing agents with a person's key (keys, bindings, endpoint, tools)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport
        self._serving: set[threading.Event] = set()
        self._serving_lock = threading.Lock()

    # -- the caller's side -------------------------------------------------------------------

    def call(
        self,
        callee: str,
        text: str | None = None,
        *,
        data: Any = None,
        parts: Sequence[Part] | None = None,
        wait: int = 0,
        context_id: str | None = None,
        parent_call_id: str | None = None,
        message_id: str | None = None,
        skill: str | None = None,
    ) -> Task:
        """Open a task on `callee` (its name or id) and wait up to `wait` seconds for an answer.

        The message is a text part for `text`, a data part for `data`, then `parts`. It carries
        `message_id` (a new one when not given), the same on every retry of this call, so a
        retry after a dropped connection answers with the task the first attempt opened.
        `parent_call_id` is sent as `X-Parent-Call`; `skill` names the callee's skill (a skill
        id of its card) the task is opened for, kept on the task as `Task.skill`.

        Raises `PermissionDeniedError` (`not_permitted`) when the caller has no live binding to
        the callee, or the binding's contract lists skills and `skill` is none of them (or not
        given), or a call-tree limit refuses it; `RateLimitError` with `code` `quota_exceeded`
        (and `retry_after`) past the contract's rate, concurrency or daily quota. Nothing is
        opened by a refusal, so a `quota_exceeded` is retried as any 429 is (a `Retry-After` up
        to 30 s is waited for; the retry carries the same `message_id`).
        """
        message = requests.build_message(
            text=text, data=data, parts=parts, message_id=message_id or new_message_id()
        )
        request = requests.open_task(
            callee,
            message,
            wait=wait,
            context_id=context_id,
            parent_call_id=parent_call_id,
            skill=skill,
        )
        return Task(self._transport.send(request))

    def task(self, callee: str, task_id: str, *, wait: int = 0) -> Task:
        """Read a task, waiting up to `wait` seconds for it to leave `submitted`/`working`."""
        return Task(self._transport.send(requests.get_task(callee, task_id, wait=wait)))

    def cancel(self, callee: str, task_id: str) -> Task:
        """Cancel a task (caller only); a finished task is returned unchanged."""
        return Task(self._transport.send(requests.cancel_task(callee, task_id)))

    def answer(
        self,
        callee: str,
        task_id: str,
        text: str | None = None,
        *,
        data: Any = None,
        parts: Sequence[Part] | None = None,
        message_id: str | None = None,
    ) -> Task:
        """Answer the question of an `input_required` task in place; it goes back to `working`.

        `POST /v1/agents/{callee}/tasks/{task_id}/messages` (caller only). The message is built
        as in `call` and carries `message_id` (a new one when not given), the same on every
        retry, so a repeat is answered with the task and recorded once.
        """
        message = requests.build_message(
            text=text, data=data, parts=parts, message_id=message_id or new_message_id()
        )
        return Task(self._transport.send(requests.add_task_message(callee, task_id, message)))

    def search_tasks(
        self,
        *,
        agent: str | None = None,
        direction: Direction | None = None,
        state: TaskState | None = None,
        context_id: str | None = None,
        q: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> TaskPage:
        """One page of the tasks this key may search: `GET /v1/tasks`.

        Every filter is optional: `agent` (a name or id; an agent key may name only itself),
        `direction` (`inbound`, `outbound`, `both`), `state`, `context_id`, `q` (words, the
        first 8 distinct of which must all be in the task; later ones are not read), `since`
        (RFC 3339), `limit` (1-100, default 50) and `cursor` (the `next_cursor` of the previous
        page of the same search).
        """
        request = requests.search_tasks(
            agent=agent,
            direction=direction,
            state=state,
            context_id=context_id,
            q=q,
            since=since,
            limit=limit,
            cursor=cursor,
        )
        return TaskPage.from_json(self._transport.send(request))

    def iter_task_pages(
        self,
        *,
        agent: str | None = None,
        direction: Direction | None = None,
        state: TaskState | None = None,
        context_id: str | None = None,
        q: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Iterator[TaskPage]:
        """Every page of a search that holds tasks, following `next_cursor`; see `search_tasks`.

        An empty page is not yielded: the gateway gives a full last page a `next_cursor` (it
        cannot know that no task follows), which leads to an empty page, and a page cut short by
        the search's read budget may hold no task while `next_cursor` leads on. A search that
        finds nothing yields no page.
        """
        while True:
            page = self.search_tasks(
                agent=agent,
                direction=direction,
                state=state,
                context_id=context_id,
                q=q,
                since=since,
                limit=limit,
                cursor=cursor,
            )
            if page.tasks:
                yield page
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_tasks(
        self,
        *,
        agent: str | None = None,
        direction: Direction | None = None,
        state: TaskState | None = None,
        context_id: str | None = None,
        q: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Iterator[Task]:
        """Every task of a search, page after page; see `search_tasks`."""
        for page in self.iter_task_pages(
            agent=agent,
            direction=direction,
            state=state,
            context_id=context_id,
            q=q,
            since=since,
            limit=limit,
            cursor=cursor,
        ):
            yield from page.tasks

    # -- agent cards ---------------------------------------------------------------------------

    def card(self, agent: str) -> dict[str, Any]:
        """The agent's signed A2A card (`agent` is its name or id)."""
        body: dict[str, Any] = self._transport.send(requests.agent_card(agent))
        return body

    def cards(self, *, limit: int | None = None, cursor: str | None = None) -> CardPage:
        """One page of the tenant's cards, by agent name: `GET /v1/agents/cards`.

        `limit` is 1-50 (default 20); `cursor` is the `next_cursor` of the previous page.
        """
        body = self._transport.send(requests.list_cards(limit=limit, cursor=cursor))
        return CardPage.from_json(body)

    def iter_cards(self, *, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """Every card of the tenant, page after page; see `cards`."""
        cursor: str | None = None
        while True:
            page = self.cards(limit=limit, cursor=cursor)
            yield from page.cards
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- the callee's side -------------------------------------------------------------------

    def next_task(self, *, wait: int = DEFAULT_SERVE_WAIT_SECONDS) -> Task | None:
        """Claim the next task, waiting up to `wait` seconds; None when nothing arrived."""
        body = self._transport.send(requests.claim_next_task(wait=wait))
        return Task(body) if body is not None else None

    def progress(
        self,
        task_id: str,
        text: str | None = None,
        *,
        data: Any = None,
        parts: Sequence[Part] | None = None,
        message_id: str | None = None,
    ) -> Task:
        """Report progress on a claimed task; it stays `working` and the message joins its history.

        `POST /v1/agents/me/tasks/{task_id}/progress`. The agent message is built as in `call`
        and carries `message_id` (a new one when not given), so a retry is recorded once.
        """
        message = requests.build_message(
            text=text,
            data=data,
            parts=parts,
            message_id=message_id or new_message_id(),
            role="agent",
        )
        return Task(self._transport.send(requests.report_progress(task_id, message)))

    def reply(self, task_id: str, reply: HandlerResult) -> Task:
        """Answer a claimed task; returns the task as the answer left it.

        `reply` is a `TaskReply` (`task.done/ask/fail`) or anything a `serve` handler may
        return (a str, a dict, a list of artifacts, None).
        """
        body = reply_from_result(reply).to_json()
        return Task(self._transport.send(requests.post_result(task_id, body)))

    def serve(
        self,
        handler: Handler,
        max_tasks: int | None = None,
        *,
        wait: int = DEFAULT_SERVE_WAIT_SECONDS,
        concurrency: int = 1,
        stop_event: threading.Event | None = None,
    ) -> int:
        """Claim tasks, hand each to `handler`, post its reply; returns how many were handled.

        Runs until `max_tasks` tasks are handled (forever when None), or until `stop()` is
        called or `stop_event` is set. `concurrency` handlers run at once, each on its own
        thread, each claiming for itself. See the README for what a handler may return.
        """
        check_serve_arguments(max_tasks, wait, concurrency)
        event = stop_event if stop_event is not None else threading.Event()
        server = SyncServer(
            self._transport,
            handler,
            max_tasks=max_tasks,
            wait=wait,
            concurrency=concurrency,
            stop_event=event,
        )
        with self._serving_lock:
            self._serving.add(event)
        try:
            return server.run()
        finally:
            with self._serving_lock:
                self._serving.discard(event)

    def stop(self) -> None:
        """Ask every `serve` running on this client to return once the tasks it holds are answered.

        Safe to call from any thread and from inside a handler. A claim already waiting may
        still bring a task; it is handled before `serve` returns.
        """
        with self._serving_lock:
            for event in self._serving:
                event.set()

    def me(self) -> dict[str, Any]:
        """The agent this key belongs to."""
        body: dict[str, Any] = self._transport.send(requests.me())
        return body

    # -- managing agents (a person's key: the agent's owner or an admin) -----------------------

    def create(
        self,
        name: str,
        *,
        description: str | None | NotGiven = NOT_GIVEN,
        owner_member_id: str | None | NotGiven = NOT_GIVEN,
        claim_timeout_seconds: int | None | NotGiven = NOT_GIVEN,
        input_modes: Sequence[str] | None | NotGiven = NOT_GIVEN,
    ) -> Agent:
        """Create an agent: `POST /v1/agents`; the key's member owns it unless `owner_member_id`.

        `name` is unique in the tenant and never changes. Not retried after a lost answer (a
        repeat would be refused as a name already taken): read the agent to know.
        """
        request = requests.create_agent(
            name,
            description=description,
            owner_member_id=owner_member_id,
            claim_timeout_seconds=claim_timeout_seconds,
            input_modes=input_modes,
        )
        body: Agent = self._transport.send(request)
        return body

    def list(self) -> builtins.list[Agent]:
        """Every agent of the tenant, by name: `GET /v1/agents` (persons only)."""
        body = self._transport.send(requests.list_agents())
        items: builtins.list[Agent] = body["items"]
        return items

    def get(self, agent: str) -> Agent:
        """Read an agent by name or id: `GET /v1/agents/{agent}`."""
        body: Agent = self._transport.send(requests.get_agent(agent))
        return body

    def update(
        self,
        agent: str,
        *,
        status: AgentStatus | NotGiven = NOT_GIVEN,
        description: str | None | NotGiven = NOT_GIVEN,
        claim_timeout_seconds: int | NotGiven = NOT_GIVEN,
        input_modes: Sequence[str] | None | NotGiven = NOT_GIVEN,
    ) -> Agent:
        """Change an agent: `PATCH /v1/agents/{agent}`, only the fields given (at least one).

        `status` `paused` suspends the agent's keys, `retired` (final) revokes them.
        `description=None` clears it; `input_modes=None` goes back to every media type.
        """
        request = requests.update_agent(
            agent,
            status=status,
            description=description,
            claim_timeout_seconds=claim_timeout_seconds,
            input_modes=input_modes,
        )
        body: Agent = self._transport.send(request)
        return body

    def keys(self, agent: str) -> builtins.list[KeyInfo]:
        """Every key the agent ever held, live and revoked, never a secret: `GET .../keys`."""
        body = self._transport.send(requests.list_agent_keys(agent))
        items: builtins.list[KeyInfo] = body["items"]
        return items

    def issue_key(self, agent: str) -> IssuedKey:
        """Issue an agent key: `POST /v1/agents/{agent}/keys`; its secret is shown this once."""
        return IssuedKey.from_json(self._transport.send(requests.create_agent_key(agent)))

    def revoke_key(self, agent: str, key_id: str) -> RevokedKey:
        """Revoke an agent key: `DELETE /v1/agents/{agent}/keys/{key_id}` (401 from then on)."""
        body: RevokedKey = self._transport.send(requests.revoke_agent_key(agent, key_id))
        return body

    def grant(self, caller: str, callees: Sequence[str]) -> builtins.list[Binding]:
        """Let `caller` open tasks on each of `callees` (1-25): `POST /v1/agents/{caller}/agents`.

        One binding per callee; pending (`approved_at` None) until the callee's owner or an
        admin approves it, unless the granter speaks for the callee too.
        """
        request = requests.grant_bindings(caller, callees)
        body: builtins.list[Binding] = self._transport.send(request)
        return body

    def bindings(self, agent: str) -> Bindings:
        """The agent's bindings, `outbound` (as caller) and `inbound`: `GET .../agents`."""
        body: Bindings = self._transport.send(requests.list_bindings(agent))
        return body

    def approve(self, agent: str, binding_id: str) -> Binding:
        """Approve a pending binding; `agent` is its callee: `POST .../agents/{id}/approve`."""
        body: Binding = self._transport.send(requests.approve_binding(agent, binding_id))
        return body

    def revoke_binding(self, agent: str, binding_id: str) -> Binding:
        """Revoke a binding from either side (`agent` is its caller or callee); the row stays."""
        body: Binding = self._transport.send(requests.revoke_binding(agent, binding_id))
        return body

    def update_binding(
        self,
        agent: str,
        binding_id: str,
        *,
        limits: BindingLimitsPatch | NotGiven = NOT_GIVEN,
        contract: BindingContractPatch | NotGiven = NOT_GIVEN,
    ) -> Binding:
        """Set a binding's own limits and contract: `PATCH /v1/agents/{agent}/agents/{id}`.

        Admin only; `agent` is either side (its caller or callee). `limits` (`max_call_depth`,
        `refuse_cycles`, `max_fan_out`, `max_open_in_tree`) replace the tenant's call-tree
        limits for calls through the binding; `contract` (`skills`, `rate_per_minute`,
        `max_concurrent`, `daily_quota`) bounds what the caller may do on the callee. Each is a
        merge patch: a field given replaces its value, a field set to None removes it (sent as
        `null`), a field left out stays; leave `limits` or `contract` out to keep it whole.
        E.g. `update_binding(caller, binding_id, contract={"rate_per_minute": 60,
        "skills": None})`. Answers with the binding, with its `usage`; audited as
        `binding.contract`. A value out of range is a `BadRequestError`, an unknown binding (or
        an agent that is neither side) a `NotFoundError`, a member's or viewer's key a
        `PermissionDeniedError`. Not retried after a lost answer: list the bindings to know.
        """
        request = requests.update_binding(agent, binding_id, limits=limits, contract=contract)
        body: Binding = self._transport.send(request)
        return body

    def set_endpoint(
        self,
        agent: str,
        url: str | None,
        *,
        auth: EndpointAuth | None | NotGiven = NOT_GIVEN,
        clear_auth: bool | NotGiven = NOT_GIVEN,
        allow_private_network: bool | NotGiven = NOT_GIVEN,
    ) -> Agent:
        """Set the agent's push endpoint, or `url=None` to go back to pull: `PUT .../endpoint`.

        `auth` is the credential each delivery carries (sealed, never shown again); left out,
        the current one is kept; `clear_auth=True` drops it. `allow_private_network` is for
        admins only.
        """
        request = requests.set_endpoint(
            agent,
            url,
            auth=auth,
            clear_auth=clear_auth,
            allow_private_network=allow_private_network,
        )
        body: Agent = self._transport.send(request)
        return body

    def tools(self, agent: str) -> builtins.list[Tool]:
        """The agent's tool bindings (its card's skills): `GET /v1/agents/{agent}/tools`."""
        body = self._transport.send(requests.list_tools(agent))
        items: builtins.list[Tool] = body["items"]
        return items

    def put_tool(
        self, agent: str, tool: str, description: str, *, tags: Sequence[str] | None = None
    ) -> Tool:
        """Bind or replace a tool: `PUT /v1/agents/{agent}/tools/{tool}`; it shows as a skill."""
        body: Tool = self._transport.send(requests.put_tool(agent, tool, description, tags))
        return body

    def delete_tool(self, agent: str, tool: str) -> RemovedTool:
        """Remove a tool binding: `DELETE /v1/agents/{agent}/tools/{tool}` (404 when none)."""
        body: RemovedTool = self._transport.send(requests.delete_tool(agent, tool))
        return body

    # -- operating push deliveries (docs/api.md, "Operating deliveries") ------------------------

    def endpoint_health(self, agent: str) -> EndpointHealth:
        """The push endpoint's health: `GET /v1/agents/{agent}/endpoint/health`.

        Its `state` (`active`, `failing`: its latest attempt failed, `disabled`), the run of
        `consecutive_failures` since `failing_since`, `last_error`, and the deliveries that
        succeeded and failed since yesterday (`attempts`, `success_rate`). The agent's owner, an
        admin or a viewer; an agent without a push endpoint is a `NotFoundError`.
        """
        body: EndpointHealth = self._transport.send(requests.get_endpoint_health(agent))
        return body

    def enable_endpoint(self, agent: str) -> EndpointHealth:
        """Switch a disabled push endpoint on again: `POST .../endpoint/enable` (admin only).

        Clears `disabled` and the run of failures (audited as `agent.endpoint.enable`) and
        answers with the health; an endpoint that is not disabled is left as it is. Deliveries
        that failed while it was disabled stay failed. A member's or viewer's key is a
        `PermissionDeniedError`; an agent without a push endpoint a `NotFoundError`.
        """
        body: EndpointHealth = self._transport.send(requests.enable_endpoint(agent))
        return body

    def redrive_deliveries(self, agent: str, since: datetime | str) -> Redriven:
        """Attempt again now every delivery still waiting for a retry, of the agent's tasks
        opened at or after `since`: `POST /v1/agents/{agent}/endpoint/redrive`.

        `since` is a timezone-aware `datetime` or RFC 3339 text (a naive `datetime` is a
        `ValueError`, before anything is sent). At most 100 tasks a call, oldest first; each
        delivery keeps its `webhook-id` and gets a fresh retry budget. Call again with
        `next_since` while it is not None. The agent's owner or an admin; a `since` the
        gateway cannot read is a `BadRequestError`, a disabled endpoint a `ConflictError`. Not
        retried after a lost answer (a repeat would attempt them again).
        """
        body: Redriven = self._transport.send(requests.redrive_deliveries(agent, since))
        return body

    def replay_delivery(self, callee: str, task_id: str) -> Replayed:
        """Attempt a push task's waiting delivery now: `POST .../tasks/{task_id}/replay` (202).

        The delivery keeps its `webhook-id` and gets a fresh retry budget. Only a push task
        still waiting for its delivery (in a retry wait, held back, or not yet tried) is
        replayed: a finished, pull or accepted task, an attempt under way or a disabled
        endpoint is a `ConflictError`; an unknown task a `NotFoundError`. The callee's owner or
        an admin. Not retried after a lost answer.
        """
        body: Replayed = self._transport.send(requests.replay_delivery(callee, task_id))
        return body

    def replay_notification(
        self, callee: str, task_id: str, config_id: str
    ) -> ReplayedNotification:
        """Send an A2A push notification config of the task the latest event it received, again:
        `POST .../tasks/{task_id}/notifications/{config_id}/replay` (202).

        The event goes under the `webhook-id` it was first sent under
        (`{task_id}:{config_id}:{event}`), so a receiver that handled it drops it, with the
        config's current credentials and a fresh retry budget. The task's caller (the agent that
        manages its push notification configs) or an admin; anyone else who may read the task is
        a `PermissionDeniedError`. A config the task does not have is a `NotFoundError`; one that
        has received no event yet, or while an event is being sent to it, a `ConflictError`.
        Not retried after a lost answer (a repeat would send the event once more).
        """
        body: ReplayedNotification = self._transport.send(
            requests.replay_notification(callee, task_id, config_id)
        )
        return body

    # -- a task's events and deliveries ---------------------------------------------------------

    def attempts(self, callee: str, task_id: str) -> builtins.list[DeliveryAttempt]:
        """The push delivery attempts of a task: `GET .../tasks/{task_id}/attempts`."""
        body = self._transport.send(requests.list_delivery_attempts(callee, task_id))
        items: builtins.list[DeliveryAttempt] = body["items"]
        return items

    def events(
        self, callee: str, task_id: str, *, last_event_id: str | int | None = None
    ) -> Iterator[TaskEvent]:
        """A task's server-sent events, as they come: `GET .../tasks/{task_id}/events`.

        The first is `task` (the task as it stands), then one per change (`status`,
        `progress`, `question`, `answer`, `artifact`, `final`) until the task finishes; the
        iterator ends when the gateway closes the stream: after `final`, at once for a
        finished task, after `error` (a stream that cannot go on), or after the gateway's
        bound on a stream's length (14 minutes). To resume, call again with `last_event_id`,
        the `id` of the last event received: every later change comes, and no `task` event.
        Keep-alive comments are skipped. Opening the stream is retried as any read is; a
        connection that breaks mid-stream raises `APIConnectionError`.
        """
        request = requests.task_events(callee, task_id, last_event_id=last_event_id)
        with self._transport.stream(request) as response:
            parser = EventParser()
            for line in response.iter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event


class Tenants:
    """Tenants (the operator key)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def create(self, name: str) -> CreatedTenant:
        """Create a tenant and its first admin key: `POST /v1/tenants` (operator key).

        The admin key (`admin_key`) is shown this once. Not retried after a lost answer.
        """
        return CreatedTenant.from_json(self._transport.send(requests.create_tenant(name)))


class Members:
    """The people of the tenant and their keys (an admin key)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def list(self) -> builtins.list[Member]:
        """Every member with every key it ever held, never a secret: `GET /v1/members`."""
        body = self._transport.send(requests.list_members())
        items: builtins.list[Member] = body["items"]
        return items

    def create(self, name: str, role: Role) -> CreatedMember:
        """Add a person (`admin`, `member` or `viewer`): `POST /v1/members`; its key shown once."""
        return CreatedMember.from_json(self._transport.send(requests.create_member(name, role)))

    def issue_key(self, member_id: str) -> IssuedKey:
        """Another key for a member: `POST /v1/members/{member_id}/keys`; shown this once."""
        return IssuedKey.from_json(self._transport.send(requests.create_member_key(member_id)))

    def revoke_key(self, member_id: str, key_id: str) -> RevokedKey:
        """Revoke a member's key: `DELETE /v1/members/{member_id}/keys/{key_id}`.

        The tenant's last live admin key cannot be revoked (`ConflictError`).
        """
        body: RevokedKey = self._transport.send(requests.revoke_member_key(member_id, key_id))
        return body


class Audit:
    """The tenant's audit log (admin, viewer)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def list(
        self,
        *,
        agent: str | None = None,
        action: str | None = None,
        outcome: AuditOutcome | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> AuditPage:
        """One page of the audit log, newest first: `GET /v1/audit`.

        Filters: `agent` (actor or target, a name or id), `action` (a prefix, e.g.
        `agent.key`), `outcome` (`allowed`, `refused`, `would_refuse`: what a tried tenant
        policy would have refused), `since` (RFC 3339). They apply within each page read, so a
        page may be short while `next_cursor` leads on. `limit` is 1-100 (default 50); `cursor`
        is the previous page's `next_cursor`.
        """
        request = requests.list_audit(
            agent=agent, action=action, outcome=outcome, since=since, limit=limit, cursor=cursor
        )
        return AuditPage.from_json(self._transport.send(request))

    def iter(
        self,
        *,
        agent: str | None = None,
        action: str | None = None,
        outcome: AuditOutcome | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Iterator[AuditEntry]:
        """Every entry of the audit log that passes the filters, page after page; see `list`."""
        while True:
            page = self.list(
                agent=agent, action=action, outcome=outcome, since=since, limit=limit, cursor=cursor
            )
            yield from page.entries
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class Calls:
    """The call lineage (admin, viewer)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def list(self, root_call_id: str) -> builtins.list[Call]:
        """Every call of one lineage tree, oldest first: `GET /v1/calls?root_call_id=`."""
        body = self._transport.send(requests.list_calls(root_call_id))
        items: builtins.list[Call] = body["items"]
        return items


class SigningKeys:
    """The gateway's signing keys: the JWKS (any key); rotation and retirement (operator key)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def list(self) -> Jwks:
        """The JWKS of every signing key not retired: `GET /v1/billing/export/pubkey`."""
        body: Jwks = self._transport.send(requests.get_signing_keys())
        return body

    def rotate(self, purpose: SigningPurpose | None = None) -> SigningKey:
        """Make a new active key of `purpose` (`card-signing` when None): operator key.

        The old key stays in the JWKS until retired. Not retried after a lost answer.
        """
        body: SigningKey = self._transport.send(requests.rotate_signing_key(purpose))
        return body

    def retire(self, kid: str) -> RetiredSigningKey:
        """Drop a replaced key from the JWKS for good: `POST /v1/signing-keys/{kid}/retire`.

        The active key, or one replaced less than the signing-key cache lifetime ago, is a
        `ConflictError`; an unknown kid a `NotFoundError`. Operator key.
        """
        body: RetiredSigningKey = self._transport.send(requests.retire_signing_key(kid))
        return body


class Settings:
    """The tenant's settings: read (admin, viewer), change (admin)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def get(self) -> TenantSettings:
        """The caller's tenant's settings: `GET /v1/tenant/settings`."""
        body: TenantSettings = self._transport.send(requests.get_tenant_settings())
        return body

    def update(
        self,
        *,
        word_search: bool | NotGiven = NOT_GIVEN,
        max_call_depth: int | NotGiven = NOT_GIVEN,
        refuse_cycles: bool | NotGiven = NOT_GIVEN,
        max_fan_out: int | None | NotGiven = NOT_GIVEN,
        max_open_in_tree: int | None | NotGiven = NOT_GIVEN,
    ) -> TenantSettings:
        """Change the settings given: `PATCH /v1/tenant/settings`; audited.

        `word_search=False` stops indexing the tenant's message words (a search with `q` is
        then refused). The call-tree limits (docs/api.md, "Governance"): `max_call_depth` (1 to
        64), `refuse_cycles`, `max_fan_out` and `max_open_in_tree` (1 to 10,000; `None` clears
        the limit); a change of any of them is audited as `tenant.call_tree`. A value out of
        range is a `BadRequestError`; a setting left out keeps its value.
        """
        request = requests.update_tenant_settings(
            word_search=word_search,
            max_call_depth=max_call_depth,
            refuse_cycles=refuse_cycles,
            max_fan_out=max_fan_out,
            max_open_in_tree=max_open_in_tree,
        )
        body: TenantSettings = self._transport.send(request)
        return body


class Policies:
    """The tenant's policies (docs/api.md, "Tenant policies"): read and check (admin, viewer),
    change (admin).

    A policy is one Cedar `forbid` over the caller agent, the action (`open`, `answer`,
    `cancel`, `read`), the callee and the call's context; a live binding permits a call, a
    policy can only forbid it. An enforced policy refuses what it forbids (the gate's
    `PermissionDeniedError`, `not_permitted`); a tried one (`dry_run`) refuses nothing, and the
    audit log records what it would have refused (`outcome` `would_refuse`).
    """

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def get(self) -> TenantPolicies:
        """The tenant's policies by name, and the set's version: `GET /v1/tenant/policies`."""
        body: TenantPolicies = self._transport.send(requests.get_tenant_policies())
        return body

    def update(self, policies: Mapping[str, PolicyPatch | None]) -> TenantPolicies:
        """Set, change or remove policies by name: `PATCH /v1/tenant/policies`; audited.

        Each value is a merge patch of that policy (`PolicyPatch`: a field given replaces its
        value, one left out keeps it), or None to remove it. A new policy needs its `policy`
        and is tried (`dry_run`) unless `mode` says `enforce`. The whole set is validated
        before anything is saved: a policy that does not parse, is not one `forbid`, or does
        not hold to the schema (an optional attribute read without `has`, an unknown action)
        is a `BadRequestError` naming it, and nothing changes. Answers with the set as saved.
        Not retried after a lost answer: read the policies to know whether it landed.
        """
        body: TenantPolicies = self._transport.send(requests.update_tenant_policies(policies))
        return body

    def check(
        self,
        caller: str,
        callee: str,
        *,
        skill: str | None = None,
        action: PolicyAction | None = None,
        depth: int | None = None,
        root_caller: str | None = None,
    ) -> CallCheck:
        """Whether the gate would allow a call now, and why: `POST /v1/tenant/policies/check`.

        `caller`, `callee` and `root_caller` are agents by name or id; `action` defaults to
        `open`, `depth` (1 to 64) to 1, and `root_caller` to the caller (a root call). It
        judges the binding, the callee, the contract's skills (for `open`) and the policies,
        not the call-tree counts nor the contract's rate, concurrency and quota. It records
        nothing. An agent that is not the tenant's is a `NotFoundError`.
        """
        request = requests.check_call(
            caller, callee, skill=skill, action=action, depth=depth, root_caller=root_caller
        )
        body: CallCheck = self._transport.send(request)
        return body


class Issuers:
    """The OpenID Connect issuers the tenant trusts: read (admin, member, viewer), change (admin).

    A token of a trusted issuer whose `aud` is the audience and whose `sub` the issuer lists
    signs in as the agent or member that subject names, exactly as its key would.
    """

    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def list(self) -> builtins.list[TrustedIssuer]:
        """Every issuer the tenant trusts, with its subjects: `GET /v1/issuers`."""
        body = self._transport.send(requests.list_issuers())
        items: builtins.list[TrustedIssuer] = body["items"]
        return items

    def trust(
        self,
        issuer: str,
        audience: str,
        subjects: Sequence[SubjectGrantIn] | None = None,
    ) -> TrustedIssuer:
        """Trust `issuer` for `audience`: `POST /v1/issuers`; audited.

        `issuer` is an https URL exactly as tokens carry it in `iss` (plain http only on a
        loopback host). Its discovery document is read at once: the answer's `discovery` says
        whether it could be used (`{"read": True}`) or why not (`{"read": False, "problem":
        ...}`); one that cannot be read now does not stop the trust. An address the gateway's
        outbound guard refuses (a metadata or private address) is a `PermissionDeniedError`.
        `subjects` (at most 50) are `{"subject": sub, "agent": name_or_id}` or
        `{"subject": sub, "member_id": id}`. A pair already trusted (by any tenant) is a
        `ConflictError`, an unknown agent or member a `NotFoundError`. Not retried after a lost
        answer: list the issuers to know.
        """
        request = requests.trust_issuer(issuer, audience, subjects)
        body: TrustedIssuer = self._transport.send(request)
        return body

    def update(self, issuer_id: str, subjects: Sequence[SubjectGrantIn]) -> TrustedIssuer:
        """Replace the subjects the issuer lists: `PATCH /v1/issuers/{issuer_id}`; audited."""
        body: TrustedIssuer = self._transport.send(requests.update_issuer(issuer_id, subjects))
        return body

    def distrust(self, issuer_id: str) -> IssuerRemoved:
        """Trust an issuer no more: `DELETE /v1/issuers/{issuer_id}`; its tokens sign in no
        more (within the gateway's caches' lifetime). Audited."""
        body: IssuerRemoved = self._transport.send(requests.distrust_issuer(issuer_id))
        return body


class Forgebench:
    """The sync client: `Forgebench(api_key=..., base_url=...)`, then `client.agents.*`.

    The management namespaces (`tenants`, `members`, `audit`, `calls`, `signing_keys`,
    `settings`, `policies`, `issuers`) take a person's key or the operator key as `api_key`.

    Instead of `api_key`, `token_provider` signs in with OpenID Connect access tokens: a
    callable of no argument that returns a fresh token, as a `str` or a pair `(token,
    expires_in_seconds)`. A token is used until 60 s before it expires (`expires_in`, else the
    JWT's `exp`; when neither is known the provider is called for every request); a token the
    gateway refuses as invalid is replaced once and the request sent again. Give one of
    `api_key` and `token_provider`.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        token_provider: TokenProvider | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
    ) -> None:
        key, url = resolve_sign_in(api_key, token_provider, base_url)
        credential: StaticKey | SyncTokenSource = (
            SyncTokenSource(token_provider) if token_provider is not None else StaticKey(key or "")
        )
        self._transport = SyncTransport(credential, url, timeout, max_retries, http_client)
        self.agents = Agents(self._transport)
        self.tenants = Tenants(self._transport)
        self.members = Members(self._transport)
        self.audit = Audit(self._transport)
        self.calls = Calls(self._transport)
        self.signing_keys = SigningKeys(self._transport)
        self.settings = Settings(self._transport)
        self.policies = Policies(self._transport)
        self.issuers = Issuers(self._transport)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def __repr__(self) -> str:  # never the key
        return f"Forgebench(base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the connections (not those of an `http_client` passed in)."""
        self._transport.close()

    def __enter__(self) -> Forgebench:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
