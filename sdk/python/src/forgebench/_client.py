"""`Forgebench`, the sync client, and its `agents` resource."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

import httpx

from . import _requests as requests
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, HOSTED_URL, SyncTransport
from ._pages import CardPage, TaskPage
from ._serve import DEFAULT_SERVE_WAIT_SECONDS, Handler, SyncServer, check_serve_arguments
from ._task import HandlerResult, Task, new_message_id, reply_from_result
from ._types import Direction, Part, TaskState


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
    if not url:
        raise ValueError(
            f"a base_url is required (or set {URL_VARIABLE}): the gateway to send the key to, "
            f'e.g. base_url="{HOSTED_URL}" for the hosted service'
        )
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
    """What an agent key does: open and read tasks as a caller, claim and answer them as callee."""

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
    ) -> Task:
        """Open a task on `callee` (its name or id) and wait up to `wait` seconds for an answer.

        The message is a text part for `text`, a data part for `data`, then `parts`. It carries
        `message_id` (a new one when not given), the same on every retry of this call, so a
        retry after a dropped connection answers with the task the first attempt opened.
        `parent_call_id` is sent as `X-Parent-Call`. Raises `PermissionDeniedError` when the
        caller has no live binding to the callee.
        """
        message = requests.build_message(
            text=text, data=data, parts=parts, message_id=message_id or new_message_id()
        )
        request = requests.open_task(
            callee, message, wait=wait, context_id=context_id, parent_call_id=parent_call_id
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
        `direction` (`inbound`, `outbound`, `both`), `state`, `context_id`, `q` (1-8 words,
        all of which must be in the task), `since` (RFC 3339), `limit` (1-100, default 50) and
        `cursor` (the `next_cursor` of the previous page of the same search).
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
        """Every page of a search, following `next_cursor`; see `search_tasks`."""
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


class Forgebench:
    """The sync client: `Forgebench(api_key=..., base_url=...)`, then `client.agents.*`."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
    ) -> None:
        key, url = resolve_settings(api_key, base_url)
        self._transport = SyncTransport(key, url, timeout, max_retries, http_client)
        self.agents = Agents(self._transport)

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
