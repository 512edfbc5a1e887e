"""`AsyncForgebench`: the same surface, awaited, on the gateway; the other side is plain httpx."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from gateway import CALLEE_NAME, Background, Pair

from forgebench import AsyncForgebench, NotFoundError, PermissionDeniedError, Task, TaskReply


def artifact_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for artifact in task["artifacts"] for part in artifact["parts"]]


def test_async_call_waits_for_the_answer_then_reads_and_cancels(pair: Pair) -> None:
    def callee_side() -> None:
        task = pair.callee.claim_within(20)
        pair.callee.ask(task["id"], "Which invoice?")

    async def caller() -> tuple[Task, Task, Task]:
        async with AsyncForgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
            asked = await client.agents.call(CALLEE_NAME, text="Classify", data={"a": 1}, wait=20)
            read = await client.agents.task(pair.callee_id, asked.id, wait=1)
            canceled = await client.agents.cancel(CALLEE_NAME, asked.id)
            return asked, read, canceled

    callee = Background(callee_side)
    asked, read, canceled = asyncio.run(caller())
    callee.result(timeout=10)

    assert asked.parts == [{"text": "Classify"}, {"data": {"a": 1}}]
    assert (asked.state, asked.question) == ("input_required", "Which invoice?")
    assert (read.id, read.state) == (asked.id, "input_required")
    assert (canceled.id, canceled.state) == (asked.id, "canceled")


def test_async_errors_are_the_typed_errors(pair: Pair, unbound_pair: Pair) -> None:
    async def refused() -> None:
        async with AsyncForgebench(
            api_key=unbound_pair.caller_key, base_url=pair.base_url
        ) as client:
            await client.agents.call(CALLEE_NAME, text="hi")

    async def missing() -> None:
        async with AsyncForgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
            await client.agents.task(CALLEE_NAME, "00000000-0000-4000-8000-000000000000")

    with pytest.raises(PermissionDeniedError) as denied:
        asyncio.run(refused())
    with pytest.raises(NotFoundError) as not_found:
        asyncio.run(missing())
    assert denied.value.code == "not_permitted"
    assert not_found.value.body == {"detail": "task not found"}


def test_async_next_task_and_reply(pair: Pair) -> None:
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"data": {"invoice_id": "INV-7"}}]})

    async def callee() -> tuple[Task | None, Task | None, Task]:
        async with AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
            task = await client.agents.next_task(wait=5)
            assert task is not None
            replied = await client.agents.reply(task.id, task.done(data={"category": "rent"}))
            nothing = await client.agents.next_task(wait=1)
            return task, nothing, replied

    task, nothing, replied = asyncio.run(callee())
    assert task is not None and (task.id, task.data) == (opened["id"], {"invoice_id": "INV-7"})
    assert nothing is None
    assert replied.state == "completed"
    assert artifact_parts(replied.raw) == [{"data": {"category": "rent"}}]


def test_async_serve_runs_three_coroutine_handlers_at_once_over_30_tasks(pair: Pair) -> None:
    opened = [pair.caller.open_data(CALLEE_NAME, {"n": n})["id"] for n in range(30)]
    running = 0
    most_at_once = 0
    three_running = asyncio.Event()
    # Held until three run at once (or 10 s pass), so a slow machine's claims still overlap.
    until = time.monotonic() + 10

    async def handler(task: Task) -> TaskReply:
        nonlocal running, most_at_once
        running += 1
        most_at_once = max(most_at_once, running)
        if running == 3:
            three_running.set()
        try:
            await asyncio.wait_for(three_running.wait(), max(0.0, until - time.monotonic()))
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(0.05)
        running -= 1
        if task.data["n"] == 7:
            raise RuntimeError("seven is unlucky")
        return task.done(data={"double": task.data["n"] * 2})

    async def serve() -> int:
        async with AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
            return await client.agents.serve(handler, max_tasks=30, concurrency=3, wait=1)

    assert asyncio.run(serve()) == 30
    assert most_at_once == 3
    for n, task_id in enumerate(opened):
        final = pair.caller.get(CALLEE_NAME, task_id)
        if n == 7:
            assert (final["status"]["state"], final["error"]) == ("failed", "seven is unlucky")
        else:
            assert artifact_parts(final) == [{"data": {"double": n * 2}}]


def test_async_stop_from_another_thread_and_a_plain_handler(pair: Pair) -> None:
    client_ready = threading.Event()
    holder: dict[str, AsyncForgebench] = {}

    async def serve() -> int:
        async with AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
            holder["client"] = client
            client_ready.set()
            return await client.agents.serve(lambda task: task.text.upper(), wait=1)

    serving = Background(lambda: asyncio.run(serve()))
    assert client_ready.wait(10)
    answered = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "shout"}]}, wait=15)
    assert artifact_parts(answered) == [{"text": "SHOUT"}]

    holder["client"].agents.stop()  # from this thread, not the loop's
    assert serving.result(timeout=10) == 1


def test_async_stop_event_ends_serve(pair: Pair) -> None:
    async def serve() -> int:
        stop_event = asyncio.Event()
        async with AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
            serving = asyncio.create_task(
                client.agents.serve(lambda task: "x", wait=1, stop_event=stop_event)
            )
            await asyncio.sleep(0.5)
            stop_event.set()
            return await asyncio.wait_for(serving, 10)

    assert asyncio.run(serve()) == 0
