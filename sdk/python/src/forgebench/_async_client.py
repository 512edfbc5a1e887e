"""`AsyncForgebench`, the async client: the sync client's surface, awaited."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any

import httpx

from . import _requests as requests
from ._client import resolve_settings
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, AsyncTransport
from ._pages import CardPage, TaskPage
from ._serve import (
    DEFAULT_SERVE_WAIT_SECONDS,
    AsyncHandler,
    AsyncServer,
    AsyncStopSignal,
    check_serve_arguments,
)
from ._task import HandlerResult, Task, new_message_id, reply_from_result
from ._types import Direction, Part, TaskState


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
    ) -> Task:
        """Open a task on `callee`; see `Agents.call`."""
        message = requests.build_message(
            text=text, data=data, parts=parts, message_id=message_id or new_message_id()
        )
        request = requests.open_task(
            callee, message, wait=wait, context_id=context_id, parent_call_id=parent_call_id
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
        """Every page of a search (`async for`); see `Agents.iter_task_pages`."""
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


class AsyncForgebench:
    """The async client: `AsyncForgebench(api_key=..., base_url=...)`; `await client.agents.*`."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        key, url = resolve_settings(api_key, base_url)
        self._transport = AsyncTransport(key, url, timeout, max_retries, http_client)
        self.agents = AsyncAgents(self._transport)

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
