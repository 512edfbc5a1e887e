"""`answer`, `progress`, `search_tasks`/`iter_tasks`, `card`/`cards`, sync and async, on the gateway.

The other side of each test is plain httpx (tests/gateway.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from gateway import CALLEE_NAME, CALLER_NAME, Pair
from proxy import Behaviour, TcpProxy

from forgebench import (
    AsyncForgebench,
    CardPage,
    ConflictError,
    Forgebench,
    NotFoundError,
    Task,
    TaskPage,
)
from forgebench import _requests as requests


def caller_client(pair: Pair, base_url: str | None = None) -> Forgebench:
    return Forgebench(api_key=pair.caller_key, base_url=base_url or pair.base_url)


def callee_client(pair: Pair, base_url: str | None = None) -> Forgebench:
    return Forgebench(api_key=pair.callee_key, base_url=base_url or pair.base_url)


def request_body(raw_request: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(raw_request.partition(b"\r\n\r\n")[2])
    return body


def drop_the_first_answer(number: int) -> Behaviour:
    return "drop_response" if number == 0 else "forward"


def texts(messages: list[Any]) -> list[tuple[str, str]]:
    """(role, text) of each message, its text parts joined."""
    return [
        (message.get("role", ""), " ".join(p["text"] for p in message["parts"] if "text" in p))
        for message in messages
    ]


def asked(pair: Pair, text: str = "Classify this invoice") -> str:
    """A task the callee claimed and asked a question about; its id."""
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": text}]})
    claimed = pair.callee.claim_within(20)
    assert claimed["id"] == opened["id"]
    pair.callee.ask(opened["id"], "Which cost center?")
    return str(opened["id"])


def claimed(pair: Pair, text: str = "Classify this invoice") -> str:
    """A task the callee claimed (so it is `working`); its id."""
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": text}]})
    task = pair.callee.claim_within(20)
    assert task["id"] == opened["id"]
    return str(opened["id"])


# -- the requests, without a gateway -----------------------------------------------------------


def test_a_search_sends_only_the_filters_given() -> None:
    request = requests.search_tasks(
        agent=None,
        direction="inbound",
        state="input_required",
        context_id=None,
        q="invoice",
        since=None,
        limit=5,
        cursor=None,
    )
    assert (request.method, request.path) == ("GET", "/v1/tasks")
    assert dict(request.params) == {
        "direction": "inbound",
        "state": "input_required",
        "q": "invoice",
        "limit": 5,
    }
    with pytest.raises(TypeError):
        requests.list_cards(limit=True, cursor=None)


def test_answers_and_progress_are_repeatable_because_they_carry_a_message_id() -> None:
    with Forgebench(api_key="fb_agt_x", base_url="http://127.0.0.1:9") as client:
        with pytest.raises(ValueError):
            client.agents.answer(CALLEE_NAME, "t-1")  # no text, data or parts
        with pytest.raises(ValueError):
            client.agents.card("")
    message = requests.build_message(text="hi", data=None, parts=None, message_id="m-1")
    answer = requests.add_task_message("invoice classifier", "t/1", message)
    progress = requests.report_progress("t-1", {"parts": [{"text": "no id"}]})
    assert answer.path == "/v1/agents/invoice%20classifier/tasks/t%2F1/messages"
    assert answer.json == {"message": message} and answer.repeatable
    assert not progress.repeatable


# -- answer ------------------------------------------------------------------------------------


def test_answer_takes_an_input_required_task_back_to_working(pair: Pair) -> None:
    task_id = asked(pair)
    with caller_client(pair) as client:
        answered = client.agents.answer(
            CALLEE_NAME, task_id, "Cost center 4100", data={"cost_center": 4100}
        )
        read = client.agents.task(CALLEE_NAME, task_id)
        assert read.state == "working"

    assert answered.id == task_id
    assert answered.state == "working"
    last = answered.history[-1]
    assert last.get("role") == "user"
    assert last["parts"] == [{"text": "Cost center 4100"}, {"data": {"cost_center": 4100}}]
    assert last.get("message_id")
    assert texts(answered.history) == [
        ("user", "Classify this invoice"),
        ("agent", "Which cost center?"),
        ("user", "Cost center 4100"),
    ]


def test_an_answer_repeated_with_its_message_id_is_recorded_once(pair: Pair) -> None:
    task_id = asked(pair)
    proxy = TcpProxy(pair.base_url, drop_the_first_answer)
    with caller_client(pair, proxy.url) as client:
        answered = client.agents.answer(CALLEE_NAME, task_id, "4100")
    proxy.close()
    with caller_client(pair) as client:
        again = client.agents.answer(
            CALLEE_NAME, task_id, "4100", message_id=answered.history[-1]["message_id"]
        )
        # a new answer to a task that is no longer asking is refused
        with pytest.raises(ConflictError):
            client.agents.answer(CALLEE_NAME, task_id, "4100 again")

    # the gateway got the answer twice (the first reply was dropped), with one message_id
    assert len(proxy.requests) == 2
    first, second = (request_body(raw) for raw in proxy.requests)
    assert first == second and first["message"]["message_id"]
    assert answered.state == again.state == "working"
    assert texts(again.history).count(("user", "4100")) == 1
    assert len(again.history) == 3


def test_answering_an_unknown_task_is_not_found(pair: Pair) -> None:
    with caller_client(pair) as client, pytest.raises(NotFoundError):
        client.agents.answer(CALLEE_NAME, "00000000-0000-4000-8000-000000000000", "4100")


# -- progress ----------------------------------------------------------------------------------


def test_progress_joins_the_task_history_and_the_task_stays_working(pair: Pair) -> None:
    task_id = claimed(pair)
    with callee_client(pair) as client:
        first = client.agents.progress(task_id, "Reading 3 line items", message_id="p-1")
        repeat = client.agents.progress(task_id, "Reading 3 line items", message_id="p-1")
        second = client.agents.progress(task_id, data={"step": 2, "of": 3})

    assert first.state == second.state == "working"
    assert len(repeat.history) == len(first.history)  # the repeat recorded nothing
    # the caller sees both reports on the task's history, in order
    read = Task(pair.caller.get(CALLEE_NAME, task_id))
    assert read.state == "working"
    agent_messages = [m for m in read.history if m.get("role") == "agent"]
    assert [m["parts"] for m in agent_messages] == [
        [{"text": "Reading 3 line items"}],
        [{"data": {"step": 2, "of": 3}}],
    ]
    assert agent_messages[0].get("message_id") == "p-1"
    assert agent_messages[1].get("message_id")


def test_progress_retried_after_a_dropped_connection_is_recorded_once(pair: Pair) -> None:
    task_id = claimed(pair)
    proxy = TcpProxy(pair.base_url, drop_the_first_answer)
    with callee_client(pair, proxy.url) as client:
        reported = client.agents.progress(task_id, "Halfway")
    proxy.close()

    assert len(proxy.requests) == 2
    first, second = (request_body(raw) for raw in proxy.requests)
    assert first == second and first["message"]["role"] == "agent"
    read = Task(pair.caller.get(CALLEE_NAME, task_id))
    assert texts(read.history).count(("agent", "Halfway")) == 1
    assert reported.state == "working"


# -- search --------------------------------------------------------------------------------------


def open_five(pair: Pair) -> tuple[list[str], str]:
    """Five tasks on the callee: all their ids, and the one (about pelicans) asking a question.

    The other four are completed.
    """
    question = asked(pair, "Invoice about pelicans")
    ids = [
        str(pair.caller.open(CALLEE_NAME, {"parts": [{"text": f"Invoice number {n}"}]})["id"])
        for n in range(4)
    ]
    for _ in range(4):
        task = pair.callee.claim_within(20)
        pair.callee.complete_with_text(task["id"], "done")
    return [question, *ids], question


def test_search_filters_by_state_and_q_and_pages_every_task_once(pair: Pair) -> None:
    ids, question = open_five(pair)
    with caller_client(pair) as client:
        asking = client.agents.search_tasks(state="input_required")
        completed = client.agents.search_tasks(state="completed")
        found = client.agents.search_tasks(q="pelicans")
        none_found = client.agents.search_tasks(q="albatross")
        inbound = client.agents.search_tasks(direction="inbound")
        first = client.agents.search_tasks(limit=2)
        second = client.agents.search_tasks(limit=2, cursor=first.next_cursor)
        pages = list(client.agents.iter_task_pages(limit=2))
        every = list(client.agents.iter_tasks(limit=2))
        by_name = list(client.agents.iter_tasks(agent=CALLER_NAME, direction="outbound", limit=3))

    assert isinstance(asking, TaskPage)
    assert [t.id for t in asking.tasks] == [question]
    assert asking.tasks[0].state == "input_required"
    assert sorted(t.id for t in completed.tasks) == sorted(set(ids) - {question})
    assert [t.id for t in found.tasks] == [question]
    assert none_found.tasks == [] and none_found.next_cursor is None
    assert inbound.tasks == []  # the caller holds none of them as callee

    assert len(first.tasks) == 2 and first.next_cursor is not None
    assert len(second.tasks) == 2 and not {t.id for t in first.tasks} & {t.id for t in second.tasks}
    assert len(pages) >= 3 and all(len(page.tasks) <= 2 for page in pages)
    assert pages[-1].next_cursor is None
    paged_ids = [t.id for page in pages for t in page.tasks]
    assert sorted(paged_ids) == sorted(ids)  # every task once
    assert sorted(t.id for t in every) == sorted(ids)
    assert sorted(t.id for t in by_name) == sorted(ids)


def test_iter_task_pages_over_full_pages_yields_no_empty_page(pair: Pair) -> None:
    # An admin naming no agent searches every task of the tenant, a walk of its audit log: the
    # log holds more than the 15 opens, so the full third page still carries a next_cursor, which
    # leads to an empty page.
    ids = [
        str(pair.caller.open(CALLEE_NAME, {"parts": [{"text": f"Invoice {n}"}]})["id"])
        for n in range(15)
    ]
    with Forgebench(api_key=pair.admin.key, base_url=pair.base_url) as client:
        whole = client.agents.search_tasks(limit=15)
        pages = list(client.agents.iter_task_pages(limit=5))
        every = list(client.agents.iter_tasks(limit=5))
        none = list(client.agents.iter_task_pages(q="albatross"))

    assert len(whole.tasks) == 15 and whole.next_cursor is not None  # the gateway's answer
    assert [len(page.tasks) for page in pages] == [5, 5, 5]
    assert sorted(t.id for page in pages for t in page.tasks) == sorted(ids)
    assert sorted(t.id for t in every) == sorted(ids)
    assert none == []

    async def run() -> list[int]:
        async with AsyncForgebench(api_key=pair.admin.key, base_url=pair.base_url) as client:
            return [len(page.tasks) async for page in client.agents.iter_task_pages(limit=5)]

    assert asyncio.run(run()) == [5, 5, 5]


def test_the_callee_finds_its_inbound_tasks(pair: Pair) -> None:
    task_id = claimed(pair, "Invoice about herons")
    with callee_client(pair) as client:
        inbound = client.agents.search_tasks(direction="inbound", state="working", q="herons")
        outbound = client.agents.search_tasks(direction="outbound")
    assert [(t.id, t.state) for t in inbound.tasks] == [(task_id, "working")]
    assert outbound.tasks == []


# -- cards ---------------------------------------------------------------------------------------


def test_card_is_the_agents_card_by_name_and_by_id(pair: Pair) -> None:
    with caller_client(pair) as client:
        by_name = client.agents.card(CALLEE_NAME)
        by_id = client.agents.card(pair.callee_id)
        with pytest.raises(NotFoundError):
            client.agents.card("no-such-agent")

    assert by_name["name"] == CALLEE_NAME
    assert by_id == by_name
    assert by_name["signatures"]
    assert any(pair.callee_id in i["url"] for i in by_name["supportedInterfaces"])


def test_cards_pages_over_the_tenants_agents_by_name(pair: Pair) -> None:
    extra = ["archive-reader", "dunning-agent", "payments-router"]
    for name in extra:
        pair.admin.create_agent(name)
    names = sorted([CALLER_NAME, CALLEE_NAME, *extra])

    with caller_client(pair) as client:
        first = client.agents.cards(limit=2)
        second = client.agents.cards(limit=2, cursor=first.next_cursor)
        pages: list[CardPage] = [first]
        while pages[-1].next_cursor is not None:
            pages.append(client.agents.cards(limit=2, cursor=pages[-1].next_cursor))
        every = list(client.agents.iter_cards(limit=2))
        one_page = client.agents.cards()

    assert [c["name"] for c in first.cards] == names[:2]
    assert [c["name"] for c in second.cards] == names[2:4]
    assert len(pages) == 3
    assert [c["name"] for page in pages for c in page.cards] == names
    assert [c["name"] for c in every] == names
    assert [c["name"] for c in one_page.cards] == names and one_page.next_cursor is None


# -- async ---------------------------------------------------------------------------------------


def test_async_answer_and_progress(pair: Pair) -> None:
    question = asked(pair)
    reporting = claimed(pair, "Second invoice")

    async def run() -> tuple[Task, Task, Task]:
        async with (
            AsyncForgebench(api_key=pair.caller_key, base_url=pair.base_url) as caller,
            AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as callee,
        ):
            answered = await caller.agents.answer(CALLEE_NAME, question, "4100", message_id="a-1")
            again = await caller.agents.answer(CALLEE_NAME, question, "4100", message_id="a-1")
            reported = await callee.agents.progress(reporting, "Reading", message_id="p-1")
            return answered, again, reported

    answered, again, reported = asyncio.run(run())
    assert (answered.id, answered.state) == (question, "working")
    assert answered.history[-1].get("message_id") == "a-1"
    assert len(again.history) == len(answered.history)
    assert (reported.id, reported.state) == (reporting, "working")
    assert texts(reported.history)[-1] == ("agent", "Reading")


def test_async_search_pages_every_task_once(pair: Pair) -> None:
    ids, question = open_five(pair)

    async def run() -> tuple[TaskPage, TaskPage, list[TaskPage], list[Task]]:
        async with AsyncForgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
            asking = await client.agents.search_tasks(state="input_required")
            found = await client.agents.search_tasks(q="pelicans")
            pages = [page async for page in client.agents.iter_task_pages(limit=2)]
            every = [task async for task in client.agents.iter_tasks(limit=2)]
            return asking, found, pages, every

    asking, found, pages, every = asyncio.run(run())
    assert [t.id for t in asking.tasks] == [question]
    assert [t.id for t in found.tasks] == [question]
    assert len(pages) >= 3 and pages[-1].next_cursor is None
    assert sorted(t.id for page in pages for t in page.tasks) == sorted(ids)
    assert sorted(t.id for t in every) == sorted(ids)


def test_async_card_and_cards(pair: Pair) -> None:
    pair.admin.create_agent("archive-reader")
    names = sorted([CALLER_NAME, CALLEE_NAME, "archive-reader"])

    async def run() -> tuple[dict[str, Any], CardPage, list[dict[str, Any]]]:
        async with AsyncForgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
            card = await client.agents.card(CALLER_NAME)
            first = await client.agents.cards(limit=2)
            every = [card async for card in client.agents.iter_cards(limit=1)]
            return card, first, every

    card, first, every = asyncio.run(run())
    assert card["name"] == CALLER_NAME
    assert [c["name"] for c in first.cards] == names[:2] and first.next_cursor is not None
    assert [c["name"] for c in every] == names
