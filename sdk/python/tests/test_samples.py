"""The docs' Python samples, run as written against the gateway, with the outcomes the docs give.

The other side of each sample (the callee answering, or the caller opening) is plain httpx.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from gateway import CALLEE_NAME, Background, Pair, wait_until

from forgebench import Forgebench, PermissionDeniedError, Task
from samples import (
    SEEDS_CANDIDATES,
    RecordingLog,
    in_ci,
    run_sample,
    sample_names,
    sample_text,
    seeds_dir,
)

CALL_SAMPLES = ["call_by_name.py", "call_by_id.py"]
CONTINUE_SAMPLES = ["continue_conversation_by_name.py", "continue_conversation_by_id.py"]
READ_CANCEL_SAMPLES = ["read_and_cancel_by_name.py", "read_and_cancel_by_id.py"]
SAMPLE_MESSAGE_PARTS = [
    {"text": "Classify this invoice"},
    {"data": {"invoice_id": "INV-2026-0912"}},
]


def parts_of(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((message or {}).get("parts", []))


def artifact_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for artifact in task["artifacts"] for part in artifact["parts"]]


def question_of(task: dict[str, Any]) -> str:
    return "\n".join(part["text"] for part in parts_of(task["status"].get("message")))


# -- the copies are the docs' text -----------------------------------------------------------


def docs_text() -> str:
    """The docs' pages, joined. Without them a developer's checkout skips the tests that compare
    the copies with the docs; a CI run (`CI` set) fails them instead."""
    seeds = seeds_dir()
    if seeds is None:
        where = ", ".join(str(candidate) for candidate in SEEDS_CANDIDATES)
        missing = f"the public docs (shared/seeds) are not beside this checkout (looked in {where})"
        if in_ci():
            pytest.fail(f"{missing}; CI is set, so the sample copies must be compared with them")
        pytest.skip(missing)
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(seeds.glob("*.txt")))


@pytest.mark.parametrize("name", sample_names())
def test_sample_copy_appears_verbatim_in_the_docs(name: str) -> None:
    lines = "\n" + sample_text(name).rstrip("\n") + "\n"
    assert lines in "\n" + docs_text() + "\n"


def test_every_line_of_the_docs_that_uses_the_python_sdk_is_in_a_sample_copy() -> None:
    docs = docs_text()
    sdk_lines = {
        line
        for line in docs.splitlines()
        if "client.agents." in line or line.startswith("from forgebench import")
    }
    copies = "\n".join(sample_text(name) for name in sample_names())
    assert sdk_lines, "the docs no longer show the Python SDK"
    assert sorted(line for line in sdk_lines if line not in copies) == []


@pytest.mark.parametrize("ci", ["", "false", "0"])
def test_without_the_docs_a_developer_checkout_skips_the_comparison(
    monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "seeds_dir", lambda: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception):
        docs_text()


@pytest.mark.parametrize("ci", ["true", "1"])
def test_without_the_docs_a_ci_run_fails_the_comparison(
    monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "seeds_dir", lambda: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        docs_text()


# -- serving ---------------------------------------------------------------------------------


def test_serve_sample_completes_asks_fails_and_survives_a_handler_that_raises(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALLEE_AGENT_KEY", pair.callee_key)
    namespace: dict[str, Any] = {}
    classified: list[tuple[str, str | None]] = []

    class ClassificationError(Exception):
        pass

    def classify(invoice_id: str, parent_call_id: str | None = None) -> str:
        classified.append((invoice_id, parent_call_id))
        if invoice_id == "INV-UNKNOWN":
            raise ClassificationError("no such invoice: INV-UNKNOWN")
        if invoice_id == "INV-CRASH":
            raise RuntimeError("the classifier crashed")
        if invoice_id == "INV-LAST":
            namespace["client"].agents.stop()  # the sample's own client: serve() returns
        return {"INV-0912": "software", "INV-LAST": "travel"}[invoice_id]

    namespace.update(classify=classify, ClassificationError=ClassificationError)
    serving = Background(
        lambda: run_sample("serve_invoice_classifier.py", pair.base_url, namespace), "serve-sample"
    )

    def open_and_wait(parts: list[dict[str, Any]]) -> dict[str, Any]:
        task = pair.caller.open(CALLEE_NAME, {"parts": parts}, wait=20)
        assert serving.is_alive(), "serve() ended early"
        return task

    completed = open_and_wait([{"text": "Classify this"}, {"data": {"invoice_id": "INV-0912"}}])
    asked = open_and_wait([{"text": "Classify this invoice"}])
    failed = open_and_wait([{"data": {"invoice_id": "INV-UNKNOWN"}}])
    crashed = open_and_wait([{"data": {"invoice_id": "INV-CRASH"}}])
    # The caller may see the last answer a moment before serve() returns: the reply is posted
    # first, then the loop sees stop(). So the last open only waits for its answer, and serve()
    # must then end on its own within a bound.
    last = pair.caller.open(CALLEE_NAME, {"parts": [{"data": {"invoice_id": "INV-LAST"}}]}, wait=20)
    serving.result(timeout=5)

    assert completed["status"]["state"] == "completed"
    assert artifact_parts(completed) == [{"data": {"category": "software"}}]
    assert asked["status"]["state"] == "input_required"
    assert question_of(asked) == "which invoice_id should I classify?"
    assert (failed["status"]["state"], failed["error"]) == (
        "failed",
        "no such invoice: INV-UNKNOWN",
    )
    assert (crashed["status"]["state"], crashed["error"]) == ("failed", "the classifier crashed")
    assert last["status"]["state"] == "completed"
    assert artifact_parts(last) == [{"data": {"category": "travel"}}]
    # the handler passed each task's own call id down the lineage
    assert classified == [
        ("INV-0912", completed["call_id"]),
        ("INV-UNKNOWN", failed["call_id"]),
        ("INV-CRASH", crashed["call_id"]),
        ("INV-LAST", last["call_id"]),
    ]


def test_finish_claimed_task_manually_sample_completes_the_task_it_claimed(pair: Pair) -> None:
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "Classify this invoice"}]})
    with Forgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
        namespace = run_sample("finish_claimed_task_manually.py", pair.base_url, {"client": client})

    assert namespace["task"].id == opened["id"]
    final = pair.caller.get(CALLEE_NAME, opened["id"])
    assert final["status"]["state"] == "completed"
    assert artifact_parts(final) == [{"text": "done"}]


# -- calling ---------------------------------------------------------------------------------


def answer_completed(pair: Pair, task_id: str) -> None:
    pair.callee.complete_with_text(task_id, "category: software")


def answer_question(pair: Pair, task_id: str) -> None:
    pair.callee.ask(task_id, "Is this a one-off or a recurring charge?")


def answer_failed(pair: Pair, task_id: str) -> None:
    pair.callee.fail(task_id, "invoice INV-2026-0912 is not readable")


CALL_OUTCOMES = {
    "completed": (answer_completed, "category: software"),
    "input_required": (answer_question, "Is this a one-off or a recurring charge?"),
    "failed": (answer_failed, "invoice INV-2026-0912 is not readable"),
}


@pytest.mark.parametrize("outcome", sorted(CALL_OUTCOMES))
@pytest.mark.parametrize("sample", CALL_SAMPLES)
def test_call_sample_prints_what_the_callee_answered(
    pair: Pair,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sample: str,
    outcome: str,
) -> None:
    monkeypatch.setenv("CALLER_AGENT_KEY", pair.caller_key)
    answer, printed = CALL_OUTCOMES[outcome]

    def callee_side() -> dict[str, Any]:
        task = pair.callee.claim_within(20)
        answer(pair, task["id"])
        return task

    callee = Background(callee_side, "callee")
    log = RecordingLog()
    namespace = run_sample(sample, pair.base_url, {"log": log}, callee_id=pair.callee_id)
    claimed = callee.result(timeout=30)

    assert parts_of(claimed["input"]["message"]) == SAMPLE_MESSAGE_PARTS
    assert claimed["callee_agent_id"] == pair.callee_id
    task = namespace["task"]
    assert (task.id, task.state) == (claimed["id"], outcome)
    assert capsys.readouterr().out == printed + "\n"
    assert log.errors == []


def test_call_samples_poll_a_task_still_working_after_their_30_second_wait(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both samples at once (the docs' wait is 30 s): the callee answers only after the open
    returned the task still `working`, so the sample's follow-up read is what gets the answer."""
    monkeypatch.setenv("CALLER_AGENT_KEY", pair.caller_key)
    namespaces: dict[str, dict[str, Any]] = {name: {"log": RecordingLog()} for name in CALL_SAMPLES}
    state_when_opened: dict[str, str] = {}

    def sample_holding(task_id: str) -> str | None:
        for name, namespace in namespaces.items():
            task = namespace.get("task")
            if isinstance(task, Task) and task.id == task_id:
                return name
        return None

    def callee_side() -> None:
        task = pair.callee.claim_within(20)
        wait_until(lambda: sample_holding(task["id"]) is not None, 45, "the open to return")
        name = sample_holding(task["id"])
        assert name is not None
        state_when_opened[name] = namespaces[name]["task"].state
        pair.callee.complete_with_text(task["id"], "answered late")

    callees = [Background(callee_side, f"callee-{n}") for n in range(len(CALL_SAMPLES))]

    def sample_run(name: str) -> Background:
        return Background(
            lambda: run_sample(name, pair.base_url, namespaces[name], pair.callee_id), name
        )

    runs = [sample_run(name) for name in CALL_SAMPLES]
    for run in runs:
        run.result(timeout=75)
    for callee in callees:
        callee.result(timeout=10)

    assert state_when_opened == {name: "working" for name in CALL_SAMPLES}
    for namespace in namespaces.values():
        assert namespace["task"].state == "completed"
        assert namespace["task"].artifact_text() == "answered late"


@pytest.mark.parametrize("sample", CALL_SAMPLES)
def test_call_sample_logs_and_reraises_permission_denied_without_a_binding(
    unbound_pair: Pair, monkeypatch: pytest.MonkeyPatch, sample: str
) -> None:
    monkeypatch.setenv("CALLER_AGENT_KEY", unbound_pair.caller_key)
    log = RecordingLog()

    with pytest.raises(PermissionDeniedError) as raised:
        run_sample(sample, unbound_pair.base_url, {"log": log}, callee_id=unbound_pair.callee_id)

    assert raised.value.status == 403
    assert raised.value.code == "not_permitted"
    assert raised.value.body == {
        "detail": {"code": "not_permitted", "message": "not permitted to call that agent"}
    }
    named = CALLEE_NAME if sample == "call_by_name.py" else unbound_pair.callee_id
    assert log.errors == [f"not permitted to call {named}"]
    refusals = unbound_pair.admin.audit(action="task.open", outcome="refused")
    assert [entry["reason"] for entry in refusals] == ["no_binding"]


# -- a conversation --------------------------------------------------------------------------


@pytest.mark.parametrize("sample", CONTINUE_SAMPLES)
def test_continue_conversation_sample_answers_the_question_in_the_same_context(
    pair: Pair, sample: str
) -> None:
    def callee_side() -> tuple[dict[str, Any], dict[str, Any]]:
        first = pair.callee.claim_within(20)
        pair.callee.ask(first["id"], "What kind of charge is it?")
        second = pair.callee.claim_within(40)
        pair.callee.complete_with_text(second["id"], "filed under software")
        return first, second

    callee = Background(callee_side, "callee")
    with Forgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
        namespace = run_sample(sample, pair.base_url, {"client": client}, pair.callee_id)
    first, second = callee.result(timeout=60)

    assert parts_of(first["input"]["message"]) == [{"text": "Classify this invoice"}]
    assert parts_of(second["input"]["message"]) == [
        {"text": "It's a recurring SaaS charge, category: software"}
    ]
    assert second["context_id"] == first["context_id"]
    assert second["id"] != first["id"]
    task = namespace["task"]
    assert (task.id, task.state, task.context_id) == (
        second["id"],
        "completed",
        first["context_id"],
    )
    assert task.artifact_text() == "filed under software"


# -- reading and canceling -------------------------------------------------------------------


def open_claimed_task(pair: Pair) -> dict[str, Any]:
    opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "Classify this invoice"}]})
    claimed = pair.callee.claim_within(20)
    assert claimed["id"] == opened["id"]
    return opened


@pytest.mark.parametrize("sample", READ_CANCEL_SAMPLES)
def test_read_and_cancel_sample_reads_a_question_and_cancels_the_task(
    pair: Pair, sample: str
) -> None:
    opened = open_claimed_task(pair)
    pair.callee.ask(opened["id"], "Which invoice?")

    with Forgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
        namespace = {"client": client, "task_id": opened["id"]}
        run_sample(sample, pair.base_url, namespace, pair.callee_id)

    task = namespace["task"]
    assert (task.id, task.state, task.question) == (
        opened["id"],
        "input_required",
        "Which invoice?",
    )
    assert pair.caller.get(CALLEE_NAME, opened["id"])["status"]["state"] == "canceled"


@pytest.mark.parametrize("sample", READ_CANCEL_SAMPLES)
def test_read_and_cancel_sample_leaves_a_finished_task_as_it_was(pair: Pair, sample: str) -> None:
    opened = open_claimed_task(pair)
    answered = pair.callee.complete_with_text(opened["id"], "category: software")

    with Forgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
        namespace = {"client": client, "task_id": opened["id"]}
        run_sample(sample, pair.base_url, namespace, pair.callee_id)  # cancel does not raise

    assert namespace["task"].state == "completed"
    final = pair.caller.get(CALLEE_NAME, opened["id"])
    assert final["status"]["state"] == "completed"
    assert final["artifacts"] == answered["artifacts"]


@pytest.mark.parametrize("name", sample_names())
def test_the_readme_shows_the_sample(name: str) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "```python\n" + sample_text(name) + "```" in readme
