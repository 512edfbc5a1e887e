"""`AsyncForgebench`, the async client: the sync client's surface, awaited."""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from . import _requests as requests
from ._auth import AsyncTokenProvider, AsyncTokenSource, StaticKey
from ._client import resolve_sign_in
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, AsyncTransport
from ._models import AuditPage, CreatedMember, CreatedTenant, EventParser, IssuedKey, TaskEvent
from ._pages import CardPage, TaskPage
from ._serve import (
    DEFAULT_SERVE_WAIT_SECONDS,
    AsyncHandler,
    AsyncServer,
    AsyncStopSignal,
    check_serve_arguments,
)
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


class AsyncAgents:
    """The async `agents` resource; every method is the sync one's, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport
        self._serving: set[AsyncStopSignal] = set()
        self._serving_lock = threading.Lock()

    async def call(
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
        """Open a task on `callee`; see `Agents.call`."""
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
        return Task(await self._transport.send(request))

    async def task(self, callee: str, task_id: str, *, wait: int = 0) -> Task:
        """Read a task; see `Agents.task`."""
        return Task(await self._transport.send(requests.get_task(callee, task_id, wait=wait)))

    async def cancel(self, callee: str, task_id: str) -> Task:
        """Cancel a task; see `Agents.cancel`."""
        return Task(await self._transport.send(requests.cancel_task(callee, task_id)))

    async def answer(
        self,
        callee: str,
        task_id: str,
        text: str | None = None,
        *,
        data: Any = None,
        parts: Sequence[Part] | None = None,
        message_id: str | None = None,
    ) -> Task:
        """Answer an `input_required` task's question; see `Agents.answer`."""
        message = requests.build_message(
            text=text, data=data, parts=parts, message_id=message_id or new_message_id()
        )
        request = requests.add_task_message(callee, task_id, message)
        return Task(await self._transport.send(request))

    async def search_tasks(
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
        """One page of a task search; see `Agents.search_tasks`."""
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
        return TaskPage.from_json(await self._transport.send(request))

    async def iter_task_pages(
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
    ) -> AsyncIterator[TaskPage]:
        """Every page of a search that holds tasks (`async for`); see `Agents.iter_task_pages`."""
        while True:
            page = await self.search_tasks(
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

    async def iter_tasks(
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
    ) -> AsyncIterator[Task]:
        """Every task of a search (`async for`); see `Agents.iter_tasks`."""
        async for page in self.iter_task_pages(
            agent=agent,
            direction=direction,
            state=state,
            context_id=context_id,
            q=q,
            since=since,
            limit=limit,
            cursor=cursor,
        ):
            for task in page.tasks:
                yield task

    async def card(self, agent: str) -> dict[str, Any]:
        """The agent's signed A2A card; see `Agents.card`."""
        body: dict[str, Any] = await self._transport.send(requests.agent_card(agent))
        return body

    async def cards(self, *, limit: int | None = None, cursor: str | None = None) -> CardPage:
        """One page of the tenant's cards; see `Agents.cards`."""
        body = await self._transport.send(requests.list_cards(limit=limit, cursor=cursor))
        return CardPage.from_json(body)

    async def iter_cards(self, *, limit: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every card of the tenant (`async for`); see `Agents.iter_cards`."""
        cursor: str | None = None
        while True:
            page = await self.cards(limit=limit, cursor=cursor)
            for card in page.cards:
                yield card
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def next_task(self, *, wait: int = DEFAULT_SERVE_WAIT_SECONDS) -> Task | None:
        """Claim the next task; see `Agents.next_task`."""
        body = await self._transport.send(requests.claim_next_task(wait=wait))
        return Task(body) if body is not None else None

    async def progress(
        self,
        task_id: str,
        text: str | None = None,
        *,
        data: Any = None,
        parts: Sequence[Part] | None = None,
        message_id: str | None = None,
    ) -> Task:
        """Report progress on a claimed task; see `Agents.progress`."""
        message = requests.build_message(
            text=text,
            data=data,
            parts=parts,
            message_id=message_id or new_message_id(),
            role="agent",
        )
        return Task(await self._transport.send(requests.report_progress(task_id, message)))

    async def reply(self, task_id: str, reply: HandlerResult) -> Task:
        """Answer a claimed task; see `Agents.reply`."""
        body = reply_from_result(reply).to_json()
        return Task(await self._transport.send(requests.post_result(task_id, body)))

    async def serve(
        self,
        handler: AsyncHandler,
        max_tasks: int | None = None,
        *,
        wait: int = DEFAULT_SERVE_WAIT_SECONDS,
        concurrency: int = 1,
        stop_event: asyncio.Event | None = None,
    ) -> int:
        """Serve tasks; see `Agents.serve`.

        `handler` may be a coroutine function or a plain one (a plain one runs on the event
        loop, so it should not block). `concurrency` workers run as tasks of this loop.
        """
        check_serve_arguments(max_tasks, wait, concurrency)
        stop = AsyncStopSignal(stop_event or asyncio.Event(), asyncio.get_running_loop())
        server = AsyncServer(
            self._transport,
            handler,
            max_tasks=max_tasks,
            wait=wait,
            concurrency=concurrency,
            stop=stop,
        )
        with self._serving_lock:
            self._serving.add(stop)
        try:
            return await server.run()
        finally:
            with self._serving_lock:
                self._serving.discard(stop)

    def stop(self) -> None:
        """Ask every `serve` of this client to return; see `Agents.stop`. Not a coroutine."""
        with self._serving_lock:
            for stop in self._serving:
                stop.set()

    async def me(self) -> dict[str, Any]:
        """The agent this key belongs to."""
        body: dict[str, Any] = await self._transport.send(requests.me())
        return body

    # -- managing agents (a person's key: the agent's owner or an admin) -----------------------

    async def create(
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
        body: Agent = await self._transport.send(request)
        return body

    async def list(self) -> builtins.list[Agent]:
        """Every agent of the tenant, by name: `GET /v1/agents` (persons only)."""
        body = await self._transport.send(requests.list_agents())
        items: builtins.list[Agent] = body["items"]
        return items

    async def get(self, agent: str) -> Agent:
        """Read an agent by name or id: `GET /v1/agents/{agent}`."""
        body: Agent = await self._transport.send(requests.get_agent(agent))
        return body

    async def update(
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
        body: Agent = await self._transport.send(request)
        return body

    async def keys(self, agent: str) -> builtins.list[KeyInfo]:
        """Every key the agent ever held, live and revoked, never a secret: `GET .../keys`."""
        body = await self._transport.send(requests.list_agent_keys(agent))
        items: builtins.list[KeyInfo] = body["items"]
        return items

    async def issue_key(self, agent: str) -> IssuedKey:
        """Issue an agent key: `POST /v1/agents/{agent}/keys`; its secret is shown this once."""
        return IssuedKey.from_json(await self._transport.send(requests.create_agent_key(agent)))

    async def revoke_key(self, agent: str, key_id: str) -> RevokedKey:
        """Revoke an agent key: `DELETE /v1/agents/{agent}/keys/{key_id}` (401 from then on)."""
        body: RevokedKey = await self._transport.send(requests.revoke_agent_key(agent, key_id))
        return body

    async def grant(self, caller: str, callees: Sequence[str]) -> builtins.list[Binding]:
        """Let `caller` open tasks on each of `callees` (1-25): `POST /v1/agents/{caller}/agents`.

        One binding per callee; pending (`approved_at` None) until the callee's owner or an
        admin approves it, unless the granter speaks for the callee too.
        """
        request = requests.grant_bindings(caller, callees)
        body: builtins.list[Binding] = await self._transport.send(request)
        return body

    async def bindings(self, agent: str) -> Bindings:
        """The agent's bindings, `outbound` (as caller) and `inbound`: `GET .../agents`."""
        body: Bindings = await self._transport.send(requests.list_bindings(agent))
        return body

    async def approve(self, agent: str, binding_id: str) -> Binding:
        """Approve a pending binding; `agent` is its callee: `POST .../agents/{id}/approve`."""
        body: Binding = await self._transport.send(requests.approve_binding(agent, binding_id))
        return body

    async def revoke_binding(self, agent: str, binding_id: str) -> Binding:
        """Revoke a binding from either side (`agent` is its caller or callee); the row stays."""
        body: Binding = await self._transport.send(requests.revoke_binding(agent, binding_id))
        return body

    async def update_binding(
        self,
        agent: str,
        binding_id: str,
        *,
        limits: BindingLimitsPatch | NotGiven = NOT_GIVEN,
        contract: BindingContractPatch | NotGiven = NOT_GIVEN,
    ) -> Binding:
        """Set a binding's own limits and contract (merge patches); see `Agents.update_binding`."""
        request = requests.update_binding(agent, binding_id, limits=limits, contract=contract)
        body: Binding = await self._transport.send(request)
        return body

    async def set_endpoint(
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
        body: Agent = await self._transport.send(request)
        return body

    async def tools(self, agent: str) -> builtins.list[Tool]:
        """The agent's tool bindings (its card's skills): `GET /v1/agents/{agent}/tools`."""
        body = await self._transport.send(requests.list_tools(agent))
        items: builtins.list[Tool] = body["items"]
        return items

    async def put_tool(
        self, agent: str, tool: str, description: str, *, tags: Sequence[str] | None = None
    ) -> Tool:
        """Bind or replace a tool: `PUT /v1/agents/{agent}/tools/{tool}`; it shows as a skill."""
        body: Tool = await self._transport.send(requests.put_tool(agent, tool, description, tags))
        return body

    async def delete_tool(self, agent: str, tool: str) -> RemovedTool:
        """Remove a tool binding: `DELETE /v1/agents/{agent}/tools/{tool}` (404 when none)."""
        body: RemovedTool = await self._transport.send(requests.delete_tool(agent, tool))
        return body

    # -- operating push deliveries (docs/api.md, "Operating deliveries") ------------------------

    async def endpoint_health(self, agent: str) -> EndpointHealth:
        """The push endpoint's health: `GET /v1/agents/{agent}/endpoint/health`.

        Its `state` (`active`, `failing`: its latest attempt failed, `disabled`), the run of
        `consecutive_failures` since `failing_since`, `last_error`, and the deliveries that
        succeeded and failed since yesterday (`attempts`, `success_rate`). The agent's owner, an
        admin or a viewer; an agent without a push endpoint is a `NotFoundError`.
        """
        body: EndpointHealth = await self._transport.send(requests.get_endpoint_health(agent))
        return body

    async def enable_endpoint(self, agent: str) -> EndpointHealth:
        """Switch a disabled push endpoint on again: `POST .../endpoint/enable` (admin only).

        Clears `disabled` and the run of failures (audited as `agent.endpoint.enable`) and
        answers with the health; an endpoint that is not disabled is left as it is. Deliveries
        that failed while it was disabled stay failed. A member's or viewer's key is a
        `PermissionDeniedError`; an agent without a push endpoint a `NotFoundError`.
        """
        body: EndpointHealth = await self._transport.send(requests.enable_endpoint(agent))
        return body

    async def redrive_deliveries(self, agent: str, since: datetime | str) -> Redriven:
        """Attempt again now every delivery still waiting for a retry, of the agent's tasks
        opened at or after `since`: `POST /v1/agents/{agent}/endpoint/redrive`.

        `since` is a timezone-aware `datetime` or RFC 3339 text (a naive `datetime` is a
        `ValueError`, before anything is sent). At most 100 tasks a call, oldest first; each
        delivery keeps its `webhook-id` and gets a fresh retry budget. Call again with
        `next_since` while it is not None. The agent's owner or an admin; a `since` the
        gateway cannot read is a `BadRequestError`, a disabled endpoint a `ConflictError`. Not
        retried after a lost answer (a repeat would attempt them again).
        """
        body: Redriven = await self._transport.send(requests.redrive_deliveries(agent, since))
        return body

    async def replay_delivery(self, callee: str, task_id: str) -> Replayed:
        """Attempt a push task's waiting delivery now: `POST .../tasks/{task_id}/replay` (202).

        The delivery keeps its `webhook-id` and gets a fresh retry budget. Only a push task
        still waiting for its delivery (in a retry wait, held back, or not yet tried) is
        replayed: a finished, pull or accepted task, an attempt under way or a disabled
        endpoint is a `ConflictError`; an unknown task a `NotFoundError`. The callee's owner or
        an admin. Not retried after a lost answer.
        """
        body: Replayed = await self._transport.send(requests.replay_delivery(callee, task_id))
        return body

    async def replay_notification(
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
        body: ReplayedNotification = await self._transport.send(
            requests.replay_notification(callee, task_id, config_id)
        )
        return body

    # -- a task's events and deliveries ---------------------------------------------------------

    async def attempts(self, callee: str, task_id: str) -> builtins.list[DeliveryAttempt]:
        """The push delivery attempts of a task: `GET .../tasks/{task_id}/attempts`."""
        body = await self._transport.send(requests.list_delivery_attempts(callee, task_id))
        items: builtins.list[DeliveryAttempt] = body["items"]
        return items

    async def events(
        self, callee: str, task_id: str, *, last_event_id: str | int | None = None
    ) -> AsyncIterator[TaskEvent]:
        """A task's server-sent events, as they come (`async for`): `GET .../events`.

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
        async with self._transport.stream(request) as response:
            parser = EventParser()
            async for line in response.aiter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event


class AsyncTenants:
    """Tenants (the operator key); `Tenants`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def create(self, name: str) -> CreatedTenant:
        """Create a tenant and its first admin key: `POST /v1/tenants` (operator key).

        The admin key (`admin_key`) is shown this once. Not retried after a lost answer.
        """
        return CreatedTenant.from_json(await self._transport.send(requests.create_tenant(name)))


class AsyncMembers:
    """Members and their keys (an admin key); `Members`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(self) -> builtins.list[Member]:
        """Every member with every key it ever held, never a secret: `GET /v1/members`."""
        body = await self._transport.send(requests.list_members())
        items: builtins.list[Member] = body["items"]
        return items

    async def create(self, name: str, role: Role) -> CreatedMember:
        """Add a person (`admin`, `member` or `viewer`): `POST /v1/members`; its key shown once."""
        body = await self._transport.send(requests.create_member(name, role))
        return CreatedMember.from_json(body)

    async def issue_key(self, member_id: str) -> IssuedKey:
        """Another key for a member: `POST /v1/members/{member_id}/keys`; shown this once."""
        body = await self._transport.send(requests.create_member_key(member_id))
        return IssuedKey.from_json(body)

    async def revoke_key(self, member_id: str, key_id: str) -> RevokedKey:
        """Revoke a member's key: `DELETE /v1/members/{member_id}/keys/{key_id}`.

        The tenant's last live admin key cannot be revoked (`ConflictError`).
        """
        body: RevokedKey = await self._transport.send(requests.revoke_member_key(member_id, key_id))
        return body


class AsyncAudit:
    """The audit log (admin, viewer); `Audit`, awaited (`iter` is an async iterator)."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(
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
        return AuditPage.from_json(await self._transport.send(request))

    async def iter(
        self,
        *,
        agent: str | None = None,
        action: str | None = None,
        outcome: AuditOutcome | None = None,
        since: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> AsyncIterator[AuditEntry]:
        """Every entry of the audit log that passes the filters, page after page; see `list`."""
        while True:
            page = await self.list(
                agent=agent, action=action, outcome=outcome, since=since, limit=limit, cursor=cursor
            )
            for entry in page.entries:
                yield entry
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class AsyncCalls:
    """The call lineage (admin, viewer); `Calls`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(self, root_call_id: str) -> builtins.list[Call]:
        """Every call of one lineage tree, oldest first: `GET /v1/calls?root_call_id=`."""
        body = await self._transport.send(requests.list_calls(root_call_id))
        items: builtins.list[Call] = body["items"]
        return items


class AsyncSigningKeys:
    """The signing keys (JWKS: any key; rotate, retire: operator key); `SigningKeys`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(self) -> Jwks:
        """The JWKS of every signing key not retired: `GET /v1/billing/export/pubkey`."""
        body: Jwks = await self._transport.send(requests.get_signing_keys())
        return body

    async def rotate(self, purpose: SigningPurpose | None = None) -> SigningKey:
        """Make a new active key of `purpose` (`card-signing` when None): operator key.

        The old key stays in the JWKS until retired. Not retried after a lost answer.
        """
        body: SigningKey = await self._transport.send(requests.rotate_signing_key(purpose))
        return body

    async def retire(self, kid: str) -> RetiredSigningKey:
        """Drop a replaced key from the JWKS for good: `POST /v1/signing-keys/{kid}/retire`.

        The active key, or one replaced less than the signing-key cache lifetime ago, is a
        `ConflictError`; an unknown kid a `NotFoundError`. Operator key.
        """
        body: RetiredSigningKey = await self._transport.send(requests.retire_signing_key(kid))
        return body


class AsyncSettings:
    """The tenant's settings (read: admin, viewer; change: admin); `Settings`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def get(self) -> TenantSettings:
        """The caller's tenant's settings: `GET /v1/tenant/settings`."""
        body: TenantSettings = await self._transport.send(requests.get_tenant_settings())
        return body

    async def update(
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
        body: TenantSettings = await self._transport.send(request)
        return body


class AsyncPolicies:
    """The tenant's policies (read, check: admin, viewer; change: admin); `Policies`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def get(self) -> TenantPolicies:
        """The tenant's policies by name, and the set's version: `GET /v1/tenant/policies`."""
        body: TenantPolicies = await self._transport.send(requests.get_tenant_policies())
        return body

    async def update(self, policies: Mapping[str, PolicyPatch | None]) -> TenantPolicies:
        """Set, change or remove (None) policies by name: `PATCH /v1/tenant/policies`; audited.
        See `Policies.update`."""
        request = requests.update_tenant_policies(policies)
        body: TenantPolicies = await self._transport.send(request)
        return body

    async def check(
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
        See `Policies.check`."""
        request = requests.check_call(
            caller, callee, skill=skill, action=action, depth=depth, root_caller=root_caller
        )
        body: CallCheck = await self._transport.send(request)
        return body


class AsyncIssuers:
    """The trusted OpenID Connect issuers (read: admin, member, viewer; change: admin);
    `Issuers`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def list(self) -> builtins.list[TrustedIssuer]:
        """Every issuer the tenant trusts, with its subjects: `GET /v1/issuers`."""
        body = await self._transport.send(requests.list_issuers())
        items: builtins.list[TrustedIssuer] = body["items"]
        return items

    async def trust(
        self,
        issuer: str,
        audience: str,
        subjects: Sequence[SubjectGrantIn] | None = None,
    ) -> TrustedIssuer:
        """Trust `issuer` for `audience`: `POST /v1/issuers`; see `Issuers.trust`."""
        request = requests.trust_issuer(issuer, audience, subjects)
        body: TrustedIssuer = await self._transport.send(request)
        return body

    async def update(self, issuer_id: str, subjects: Sequence[SubjectGrantIn]) -> TrustedIssuer:
        """Replace the subjects the issuer lists: `PATCH /v1/issuers/{issuer_id}`; audited."""
        request = requests.update_issuer(issuer_id, subjects)
        body: TrustedIssuer = await self._transport.send(request)
        return body

    async def distrust(self, issuer_id: str) -> IssuerRemoved:
        """Trust an issuer no more: `DELETE /v1/issuers/{issuer_id}`; audited."""
        body: IssuerRemoved = await self._transport.send(requests.distrust_issuer(issuer_id))
        return body


class AsyncForgebench:
    """The async client: `AsyncForgebench(api_key=..., base_url=...)`; `await client.agents.*`.

    The same namespaces as `Forgebench`, awaited. `token_provider` (instead of `api_key`) is
    as `Forgebench`'s, and may also be a coroutine function; a plain function runs on the
    event loop, so it should not block for long.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        token_provider: AsyncTokenProvider | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        key, url = resolve_sign_in(api_key, token_provider, base_url)
        credential: StaticKey | AsyncTokenSource = (
            AsyncTokenSource(token_provider) if token_provider is not None else StaticKey(key or "")
        )
        self._transport = AsyncTransport(credential, url, timeout, max_retries, http_client)
        self.agents = AsyncAgents(self._transport)
        self.tenants = AsyncTenants(self._transport)
        self.members = AsyncMembers(self._transport)
        self.audit = AsyncAudit(self._transport)
        self.calls = AsyncCalls(self._transport)
        self.signing_keys = AsyncSigningKeys(self._transport)
        self.settings = AsyncSettings(self._transport)
        self.policies = AsyncPolicies(self._transport)
        self.issuers = AsyncIssuers(self._transport)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def __repr__(self) -> str:  # never the key
        return f"AsyncForgebench(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connections (not those of an `http_client` passed in)."""
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncForgebench:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
