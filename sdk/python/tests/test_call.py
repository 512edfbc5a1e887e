"""The caller's side of the SDK (`call`, `task`, `cancel`) and the typed errors, on the gateway.

The callee is plain httpx.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from gateway import CALLEE_NAME, Background, Pair
from proxy import Behaviour, TcpProxy

from forgebench import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Forgebench,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)


def caller_client(pair: Pair, **options: Any) -> Forgebench:
    return Forgebench(api_key=pair.caller_key, base_url=pair.base_url, **options)


def request_body(raw_request: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(raw_request.partition(b"\r\n\r\n")[2])
    return body


def test_a_call_retried_after_a_dropped_connection_opens_one_task(pair: Pair) -> None:
    def drop_the_first_answer(number: int) -> Behaviour:
        return "drop_response" if number == 0 else "forward"

    proxy = TcpProxy(pair.base_url, drop_the_first_answer)
    with Forgebench(api_key=pair.caller_key, base_url=proxy.url) as client:
        task = client.agents.call(CALLEE_NAME, text="Classify this invoice")
    proxy.close()

    # the gateway got the open twice, with one message_id, and answered the repeat with the task
    assert len(proxy.requests) == 2
    first, second = (request_body(raw) for raw in proxy.requests)
    assert first == second
    assert first["message"]["message_id"]
    opens = pair.admin.audit(agent=pair.caller_id, action="task.open")
    assert [(entry["outcome"], entry["task_id"]) for entry in opens] == [("allowed", task.id)]
    claimed = pair.callee.claim(wait=2)
    assert claimed is not None and claimed["id"] == task.id
    assert pair.callee.claim(wait=1) is None  # no second task


def test_a_given_message_id_opens_the_task_once(pair: Pair) -> None:
    with caller_client(pair) as client:
        first = client.agents.call(CALLEE_NAME, text="hi", message_id="inv-0912-classify")
        again = client.agents.call(CALLEE_NAME, text="hi", message_id="inv-0912-classify")
        other = client.agents.call(CALLEE_NAME, text="hi")

    assert again.id == first.id
    assert other.id != first.id
    assert first.message is not None and first.message.get("message_id") == "inv-0912-classify"


def test_text_and_data_make_one_text_part_and_one_data_part(pair: Pair) -> None:
    with caller_client(pair) as client:
        task = client.agents.call(
            CALLEE_NAME, text="Classify this invoice", data={"invoice_id": "INV-2026-0912"}
        )
        with_parts = client.agents.call(
            CALLEE_NAME, parts=[{"file": {"uri": "s3://bucket/inv.pdf", "mime": "application/pdf"}}]
        )

    assert task.parts == [
        {"text": "Classify this invoice"},
        {"data": {"invoice_id": "INV-2026-0912"}},
    ]
    assert (task.text, task.data, task.state) == (
        "Classify this invoice",
        {"invoice_id": "INV-2026-0912"},
        "submitted",
    )
    assert with_parts.parts == [{"file": {"uri": "s3://bucket/inv.pdf", "mime": "application/pdf"}}]
    assert with_parts.data == {}


def test_a_callee_is_reached_by_its_name_and_by_its_id(pair: Pair) -> None:
    with caller_client(pair) as client:
        by_name = client.agents.call(CALLEE_NAME, text="by name")
        by_id = client.agents.call(pair.callee_id, text="by id")
        read_by_id = client.agents.task(pair.callee_id, by_name.id)

    assert by_name.callee_agent_id == by_id.callee_agent_id == pair.callee_id
    assert read_by_id.id == by_name.id


def test_parent_call_id_is_sent_as_x_parent_call_and_stamps_the_lineage(pair: Pair) -> None:
    with caller_client(pair) as client:
        root = client.agents.call(CALLEE_NAME, text="root")
        child = client.agents.call(CALLEE_NAME, text="child", parent_call_id=root.call_id)

    assert root.parent_call_id is None
    assert root.root_call_id == root.call_id
    assert child.parent_call_id == root.call_id
    assert child.root_call_id == root.call_id


def test_call_waits_for_the_answer_and_task_reads_it(pair: Pair) -> None:
    def callee_side() -> None:
        task = pair.callee.claim_within(20)
        pair.callee.complete_with_text(task["id"], "software")

    callee = Background(callee_side)
    with caller_client(pair) as client:
        task = client.agents.call(CALLEE_NAME, text="Classify", wait=20)
        read = client.agents.task(CALLEE_NAME, task.id, wait=1)
    callee.result(timeout=10)

    assert (task.state, task.artifact_text()) == ("completed", "software")
    assert (read.id, read.state, read.artifacts) == (task.id, "completed", task.artifacts)


def test_task_exposes_the_question_and_the_error(pair: Pair) -> None:
    with caller_client(pair) as client:
        asked = client.agents.call(CALLEE_NAME, text="one")
        failed = client.agents.call(CALLEE_NAME, text="two")
        for _ in range(2):
            claimed = pair.callee.claim_within(10)
            if claimed["id"] == asked.id:
                pair.callee.ask(claimed["id"], "Which currency?")
            else:
                pair.callee.fail(claimed["id"], "the invoice is unreadable")
        asked = client.agents.task(CALLEE_NAME, asked.id)
        failed = client.agents.task(CALLEE_NAME, failed.id)

    assert (asked.state, asked.question, asked.error) == ("input_required", "Which currency?", None)
    assert (failed.state, failed.question, failed.error) == (
        "failed",
        None,
        "the invoice is unreadable",
    )


def test_canceling_an_open_task_cancels_it_and_a_finished_one_is_left_alone(pair: Pair) -> None:
    with caller_client(pair) as client:
        open_task = client.agents.call(CALLEE_NAME, text="cancel me")
        canceled = client.agents.cancel(CALLEE_NAME, open_task.id)
        again = client.agents.cancel(CALLEE_NAME, open_task.id)

        done = client.agents.call(CALLEE_NAME, text="finish me")
        claimed = pair.callee.claim_within(10)
        assert claimed["id"] == done.id
        pair.callee.complete_with_text(done.id, "finished")
        unchanged = client.agents.cancel(CALLEE_NAME, done.id)

    assert (canceled.state, again.state) == ("canceled", "canceled")
    assert (unchanged.state, unchanged.artifact_text()) == ("completed", "finished")


# -- typed errors with the documented bodies -------------------------------------------------


def test_no_binding_is_permission_denied_with_the_not_permitted_body(unbound_pair: Pair) -> None:
    with caller_client(unbound_pair) as client, pytest.raises(PermissionDeniedError) as raised:
        client.agents.call(CALLEE_NAME, text="hi")

    assert (raised.value.status, raised.value.code) == (403, "not_permitted")
    assert raised.value.body == {
        "detail": {"code": "not_permitted", "message": "not permitted to call that agent"}
    }


def test_an_unknown_task_is_not_found_with_the_task_not_found_body(pair: Pair) -> None:
    with caller_client(pair) as client, pytest.raises(NotFoundError) as raised:
        client.agents.task(CALLEE_NAME, str(uuid.uuid4()))

    assert raised.value.status == 404
    assert raised.value.body == {"detail": "task not found"}
    assert raised.value.message == "task not found"


def test_a_reply_to_a_canceled_task_is_a_conflict_naming_its_state(pair: Pair) -> None:
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "hi"}]})
    with Forgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
        task = client.agents.next_task(wait=5)
        assert task is not None and task.id == opened["id"]
        pair.caller.cancel(CALLEE_NAME, task.id)
        with pytest.raises(ConflictError) as raised:
            client.agents.reply(task.id, task.done(text="too late"))

    assert (raised.value.status, raised.value.code, raised.value.state) == (
        409,
        "task_not_working",
        "canceled",
    )
    assert raised.value.body == {"detail": {"code": "task_not_working", "state": "canceled"}}


def test_a_pull_reply_saying_working_is_unprocessable(pair: Pair) -> None:
    pair.caller.open(CALLEE_NAME, {"parts": [{"text": "hi"}]})
    with Forgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
        task = client.agents.next_task(wait=5)
        assert task is not None
        with pytest.raises(UnprocessableEntityError) as raised:
            client.agents.reply(task.id, {"state": "working"})

    assert raised.value.status == 422
    assert raised.value.body == {
        "detail": "a pull result must be completed, failed, or input_required"
    }


def test_an_unknown_key_is_an_authentication_error(pair: Pair) -> None:
    with Forgebench(api_key="fb_agt_" + "0" * 64, base_url=pair.base_url) as client:
        with pytest.raises(AuthenticationError) as raised:
            client.agents.call(CALLEE_NAME, text="hi")

    assert (raised.value.status, raised.value.code) == (401, "unauthenticated")


def test_a_wait_out_of_range_is_a_bad_request(pair: Pair) -> None:
    with caller_client(pair) as client, pytest.raises(BadRequestError) as raised:
        client.agents.call(CALLEE_NAME, text="hi", wait=31)

    assert (raised.value.status, raised.value.code) == (400, "invalid_request")


def test_me_is_the_agent_the_key_belongs_to(pair: Pair) -> None:
    with caller_client(pair) as client:
        me = client.agents.me()
    assert (me["id"], me["name"]) == (pair.caller_id, "billing-orchestrator")
