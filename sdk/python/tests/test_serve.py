"""`client.agents.serve`, `next_task` and `reply` against the gateway; callers are plain httpx."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

import pytest
from gateway import CALLEE_NAME, Background, Pair
from proxy import Behaviour, TcpProxy

from forgebench import Forgebench, Task, TaskReply


def callee_client(pair: Pair, **options: Any) -> Forgebench:
    return Forgebench(api_key=pair.callee_key, base_url=pair.base_url, **options)


def final_state(pair: Pair, task_id: str) -> dict[str, Any]:
    return pair.caller.get(CALLEE_NAME, task_id)


def artifact_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for artifact in task["artifacts"] for part in artifact["parts"]]


def test_four_concurrent_handlers_answer_200_tasks_each_exactly_once(pair: Pair) -> None:
    opened = [pair.caller.open_data(CALLEE_NAME, {"n": n})["id"] for n in range(200)]
    all_four_at_once = threading.Barrier(4, timeout=20)
    handled: list[str] = []
    lock = threading.Lock()

    def handler(task: Task) -> TaskReply:
        with lock:
            handled.append(task.id)
            first_four = len(handled) <= 4
        if first_four:
            all_four_at_once.wait()  # breaks (and the test fails) unless 4 handlers run together
        return task.done(data={"double": task.data["n"] * 2})

    with callee_client(pair) as client:
        count = client.agents.serve(handler, max_tasks=200, concurrency=4, wait=2)

    assert count == 200
    assert sorted(handled) == sorted(opened)  # each task handed to a handler exactly once
    for n, task_id in enumerate(opened):
        final = final_state(pair, task_id)
        assert final["status"]["state"] == "completed", (n, final["status"], final["error"])
        assert artifact_parts(final) == [{"data": {"double": n * 2}}]


def test_stop_from_another_thread_ends_serve_and_leaves_other_clients_alone(pair: Pair) -> None:
    client = callee_client(pair)
    other = callee_client(pair)
    serving = Background(lambda: client.agents.serve(lambda task: "first", wait=1), "serve")
    first = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "one"}]}, wait=15)
    assert artifact_parts(first) == [{"text": "first"}]
    other_serving = Background(
        lambda: other.agents.serve(lambda task: "other", max_tasks=1, wait=1)
    )

    client.agents.stop()
    assert serving.result(timeout=10) == 1

    later = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "two"}]}, wait=15)
    assert artifact_parts(later) == [{"text": "other"}]  # the stopped serve took nothing more
    assert other_serving.result(timeout=10) == 1
    client.close()
    other.close()


def test_setting_the_stop_event_ends_serve(pair: Pair) -> None:
    stop_event = threading.Event()
    with callee_client(pair) as client:
        serving = Background(
            lambda: client.agents.serve(lambda task: "x", wait=1, stop_event=stop_event)
        )
        answered = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "one"}]}, wait=15)
        assert answered["status"]["state"] == "completed"
        stop_event.set()
        assert serving.result(timeout=10) == 1


def test_max_tasks_claims_no_more_than_it_handles(pair: Pair) -> None:
    opened = [pair.caller.open_data(CALLEE_NAME, {"n": n})["id"] for n in range(5)]

    with callee_client(pair) as client:
        count = client.agents.serve(lambda task: "ok", max_tasks=3, concurrency=2, wait=1)

    states = collections.Counter(
        final_state(pair, task_id)["status"]["state"] for task_id in opened
    )
    assert count == 3
    assert states == {"completed": 3, "submitted": 2}


HANDLER_RESULTS: dict[str, Any] = {
    "text": "plain text",
    "dict": {"category": "software"},
    "artifacts": [{"name": "report", "parts": [{"text": "line one"}, {"data": [1, 2]}]}],
    "none": None,
    "result-in": {
        "state": "input_required",
        "message": {"role": "agent", "parts": [{"text": "why?"}]},
    },
    "reply": TaskReply.failed("declined by policy"),
}


def test_every_kind_of_handler_result_becomes_its_reply(pair: Pair) -> None:
    opened = {
        kind: pair.caller.open_data(CALLEE_NAME, {"kind": kind})["id"] for kind in HANDLER_RESULTS
    }

    with callee_client(pair) as client:
        count = client.agents.serve(
            lambda task: HANDLER_RESULTS[task.data["kind"]], max_tasks=len(opened), wait=1
        )

    final = {kind: final_state(pair, task_id) for kind, task_id in opened.items()}
    assert count == len(HANDLER_RESULTS)
    assert artifact_parts(final["text"]) == [{"text": "plain text"}]
    assert artifact_parts(final["dict"]) == [{"data": {"category": "software"}}]
    assert final["artifacts"]["artifacts"] == HANDLER_RESULTS["artifacts"]
    assert (final["none"]["status"]["state"], final["none"]["artifacts"]) == ("completed", [])
    assert final["result-in"]["status"]["state"] == "input_required"
    assert final["result-in"]["status"]["message"]["parts"] == [{"text": "why?"}]
    assert (final["reply"]["status"]["state"], final["reply"]["error"]) == (
        "failed",
        "declined by policy",
    )


def test_a_handler_that_raises_fails_its_task_and_serve_goes_on(pair: Pair) -> None:
    crashing = pair.caller.open_data(CALLEE_NAME, {"crash": True})["id"]
    fine = pair.caller.open_data(CALLEE_NAME, {"crash": False})["id"]

    def handler(task: Task) -> str:
        if task.data["crash"]:
            raise ValueError("cannot classify a negative amount")
        return "classified"

    with callee_client(pair) as client:
        assert client.agents.serve(handler, max_tasks=2, wait=1) == 2

    crashed = final_state(pair, crashing)
    assert (crashed["status"]["state"], crashed["error"]) == (
        "failed",
        "cannot classify a negative amount",
    )
    assert artifact_parts(final_state(pair, fine)) == [{"text": "classified"}]


def test_a_reply_the_gateway_refuses_fails_the_task_with_the_reason(pair: Pair) -> None:
    task_id = pair.caller.open_data(CALLEE_NAME, {})["id"]

    with callee_client(pair) as client:
        assert client.agents.serve(lambda task: {"state": "working"}, max_tasks=1, wait=1) == 1

    final = final_state(pair, task_id)
    assert final["status"]["state"] == "failed"
    assert final["error"] == (
        "the handler's reply was refused: "
        "422 a pull result must be completed, failed, or input_required"
    )


def test_a_reply_to_a_task_canceled_meanwhile_is_dropped_and_serve_goes_on(pair: Pair) -> None:
    canceled = pair.caller.open_data(CALLEE_NAME, {"cancel": True})["id"]
    answered = pair.caller.open_data(CALLEE_NAME, {"cancel": False})["id"]

    def handler(task: Task) -> str:
        if task.data["cancel"]:
            pair.caller.cancel(CALLEE_NAME, task.id)  # the caller gives up mid-handler
        return "done"

    with callee_client(pair) as client:
        assert client.agents.serve(handler, max_tasks=2, wait=1) == 2

    assert final_state(pair, canceled)["status"]["state"] == "canceled"
    assert final_state(pair, answered)["status"]["state"] == "completed"


def test_network_errors_while_claiming_back_off_and_retry(pair: Pair) -> None:
    def first_four_reset(number: int) -> Behaviour:
        return "reset" if number < 4 else "forward"

    proxy = TcpProxy(pair.base_url, first_four_reset)
    task_id = pair.caller.open_data(CALLEE_NAME, {"invoice_id": "INV-1"})["id"]
    started = time.monotonic()

    with Forgebench(api_key=pair.callee_key, base_url=proxy.url, max_retries=1) as client:
        count = client.agents.serve(lambda task: task.done(text="through"), max_tasks=1, wait=1)

    proxy.close()
    assert count == 1
    assert proxy.connections >= 5  # four broken, then the claim and the reply went through
    assert time.monotonic() - started >= 0.5  # it paused between the broken claims
    assert artifact_parts(final_state(pair, task_id)) == [{"text": "through"}]


def test_next_task_is_none_when_nothing_arrives_and_reply_returns_the_task(pair: Pair) -> None:
    with callee_client(pair) as client:
        assert client.agents.next_task(wait=1) is None

        opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "hi"}, {"data": {"k": 1}}]})
        task = client.agents.next_task(wait=5)
        assert task is not None
        assert (task.id, task.state, task.text, task.data) == (
            opened["id"],
            "working",
            "hi",
            {"k": 1},
        )
        assert task.call_id == opened["call_id"]

        replied = client.agents.reply(task.id, task.ask("which one?"))
        assert (replied.id, replied.state, replied.question) == (
            task.id,
            "input_required",
            "which one?",
        )


def test_posting_the_same_question_twice_lands_once(pair: Pair) -> None:
    """An `ask` reply carries a message_id, so its retry is answered with the task."""
    pair.caller.open(CALLEE_NAME, {"parts": [{"text": "hi"}]})
    with callee_client(pair) as client:
        task = client.agents.next_task(wait=5)
        assert task is not None
        question = task.ask("which one?")
        client.agents.reply(task.id, question)
        again = client.agents.reply(task.id, question)

    assert again.state == "input_required"
    questions = [m for m in again.history if m.get("role") == "agent"]
    assert len(questions) == 1


@pytest.mark.parametrize("bad", [{"max_tasks": -1}, {"concurrency": 0}, {"wait": -1}])
def test_serve_refuses_meaningless_arguments(pair: Pair, bad: dict[str, Any]) -> None:
    with callee_client(pair) as client, pytest.raises(ValueError):
        client.agents.serve(lambda task: "x", **bad)
