"""`forgebench.push_app`: the `serve` handler answering push deliveries, as an ASGI app.

The gateway tests run the app under uvicorn on a free loopback port, save that URL as the
callee's endpoint, and open tasks as the caller: every delivery is a real one, signed by the
gateway and verified with the JWKS the app reads from it. The app is wrapped in a recorder that
keeps each request and the status answered, so a genuine delivery can be replayed and forged.
The unit tests at the end sign deliveries with a key of their own and call the app in process.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from gateway import CALLEE_NAME, Pair, wait_until
from test_webhooks import AGENT_ID, URL, Signed, delivery_body

from forgebench import PushApp, ReplayCache, Task, TaskReply, push_app, task_from_delivery

DELIVERY_HEADERS = ("content-type", "webhook-id", "webhook-timestamp", "webhook-signature")


@dataclass
class Exchange:
    headers: dict[str, str]
    body: bytes
    status: int = 0


@dataclass
class Recorder:
    """An ASGI wrapper that keeps every POST the app received and the status it answered."""

    app: PushApp
    exchanges: list[Exchange] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        exchange = Exchange(
            {name.decode().lower(): value.decode() for name, value in scope["headers"]},
            b"".join(chunks),
        )
        self.exchanges.append(exchange)
        given = False

        async def replay() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": exchange.body, "more_body": False}
            result: dict[str, Any] = await receive()
            return result

        async def record(message: Any) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            await send(message)

        await self.app(scope, replay, record)

    @property
    def statuses(self) -> list[int]:
        return [exchange.status for exchange in self.exchanges]


@dataclass
class Endpoint:
    url: str
    recorder: Recorder

    def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(self.url, content=body, headers=headers, timeout=30)


@contextmanager
def pushed_to(pair: Pair, handler: Callable[[Task], Any]) -> Iterator[Endpoint]:
    """`push_app(handler)` under uvicorn on a free port, saved as the callee's endpoint."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/forgebench/push"
    # the callee's own key reads the JWKS and its agent id (GET /v1/agents/me)
    recorder = Recorder(push_app(handler, endpoint_url=url, api_key=pair.callee_key,
                                 base_url=pair.base_url))
    server = uvicorn.Server(uvicorn.Config(recorder, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 15, "uvicorn to start")
        saved = pair.admin.ok("PUT", f"/v1/agents/{CALLEE_NAME}/endpoint", json={"url": url})
        assert saved["endpoint"]["url"] == url
        yield Endpoint(url, recorder)
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def settled(pair: Pair, task_id: str, seconds: float) -> dict[str, Any]:
    """The task once it is no longer submitted or working."""
    deadline = time.monotonic() + seconds
    while True:
        task = pair.caller.get(CALLEE_NAME, task_id, wait=2)
        if task["status"]["state"] not in ("submitted", "working"):
            return task
        assert time.monotonic() < deadline, f"task still {task['status']['state']}"
        time.sleep(0.2)


def newest_user_text(task: Task) -> str:
    """The text of the newest `user` message of the task's history."""
    for message in reversed(task.history):
        if message.get("role") == "user":
            parts = message.get("parts") or []
            return "\n".join(part["text"] for part in parts if isinstance(part.get("text"), str))
    return ""


def parts_of(task: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [artifact["parts"] for artifact in task["artifacts"]]


def test_one_handler_answers_real_deliveries_done_ask_then_the_answer_and_fail(
    pair: Pair,
) -> None:
    seen: list[Task] = []

    def handle(task: Task) -> Any:
        # as under `serve`: the newest user message is the opening one, or the caller's answer
        seen.append(task)
        newest = newest_user_text(task)
        if newest == "classify":
            return task.done(text=f"pushed {task.id}", data={"category": "software"})
        if newest == "ask me":
            return task.ask("which invoice_id?")
        if newest.startswith("INV-"):
            return task.done(text=f"classified {newest}")
        if newest == "fail me":
            return task.fail("cannot classify that")
        return "unexpected"

    with pushed_to(pair, handle) as endpoint:
        done = settled(pair, pair.caller.open(CALLEE_NAME, {"parts": [{"text": "classify"}]},
                                              wait=20)["id"], 20)
        assert done["status"]["state"] == "completed", done
        assert parts_of(done) == [[{"text": f"pushed {done['id']}"},
                                   {"data": {"category": "software"}}]]
        assert done["artifacts"][0]["name"] == "response"
        # the handler got the task as the gateway reads it: what `serve` would have claimed
        first = seen[0]
        assert (first.id, first.call_id, first.callee_agent_id, first.context_id) == (
            done["id"], done["call_id"], pair.callee_id, done["context_id"])
        assert first.text == "classify"

        asked = settled(pair, pair.caller.open(CALLEE_NAME, {"parts": [{"text": "ask me"}]},
                                               wait=20)["id"], 20)
        assert asked["status"]["state"] == "input_required", asked
        assert asked["status"]["message"]["parts"] == [{"text": "which invoice_id?"}]
        pair.caller.ok("POST", f"/v1/agents/{CALLEE_NAME}/tasks/{asked['id']}/messages",
                       json={"message": {"role": "user", "parts": [{"text": "INV-2026-0912"}]}})
        answered = settled(pair, asked["id"], 20)
        assert answered["status"]["state"] == "completed", answered
        assert parts_of(answered) == [[{"text": "classified INV-2026-0912"}]]
        # the second delivery carried the caller's answer, under a new webhook-id
        assert [task.id for task in seen[1:3]] == [asked["id"], asked["id"]]
        assert newest_user_text(seen[2]) == "INV-2026-0912"
        assert seen[2].text == "ask me", "the opening message stays the task's"
        ask_ids = [exchange.headers["webhook-id"] for exchange in endpoint.recorder.exchanges[1:3]]
        assert ask_ids[0] != ask_ids[1]

        failed = settled(pair, pair.caller.open(CALLEE_NAME, {"parts": [{"text": "fail me"}]},
                                                wait=20)["id"], 20)
        assert failed["status"]["state"] == "failed", failed
        assert failed["error"] == "cannot classify that"

        assert endpoint.recorder.statuses == [200, 200, 200, 200]
        assert len(seen) == 4


def test_a_handler_that_raises_answers_500_and_the_gateways_retry_is_handled(pair: Pair) -> None:
    calls: list[str] = []

    async def handle(task: Task) -> Any:
        calls.append(task.id)
        if len(calls) == 1:
            raise RuntimeError("the classifier is down")
        await asyncio.sleep(0)
        return {"category": "software"}  # any other JSON: one data part

    with pushed_to(pair, handle) as endpoint:
        opened = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "classify"}]})
        task = settled(pair, opened["id"], 40)  # the retry comes 5 s (±20 %) later
        assert task["status"]["state"] == "completed", task
        assert parts_of(task) == [[{"data": {"category": "software"}}]]
        assert calls == [opened["id"], opened["id"]]
        assert endpoint.recorder.statuses == [500, 200]
        first, retry = endpoint.recorder.exchanges
        assert first.headers["webhook-id"] == retry.headers["webhook-id"]
    attempts = pair.admin.ok("GET", f"/v1/agents/{CALLEE_NAME}/tasks/{opened['id']}/attempts")
    assert [attempt["status"] for attempt in attempts["items"]] == [500, 200]


def test_forged_unsigned_tampered_and_replayed_deliveries_get_401_and_never_run_the_handler(
    pair: Pair,
) -> None:
    calls: list[Task] = []

    def handle(task: Task) -> TaskReply:
        calls.append(task)
        return task.done(text="handled")

    with pushed_to(pair, handle) as endpoint:
        task = settled(pair, pair.caller.open(CALLEE_NAME, {"parts": [{"text": "classify"}]},
                                              wait=20)["id"], 20)
        assert task["status"]["state"] == "completed", task
        assert len(calls) == 1
        genuine = endpoint.recorder.exchanges[0]
        headers = {name: genuine.headers[name] for name in DELIVERY_HEADERS}

        def refused(body: bytes, headers: dict[str, str]) -> str:
            response = endpoint.post(body, headers)
            assert response.status_code == 401, response.text
            reason: str = response.json()["reason"]
            return reason

        # the genuine delivery, byte for byte, a second time
        assert refused(genuine.body, headers) == "replay"
        # unsigned
        assert refused(genuine.body, {"content-type": "application/json"}) == "timestamp"
        now = str(int(time.time()))
        assert refused(genuine.body, {"webhook-id": "msg_forged", "webhook-timestamp": now}) == (
            "signature")
        # signed, for this very endpoint and agent, by a key the gateway never published
        forged = Signed(key=Ed25519PrivateKey.generate(), webhook_id="msg_forged",
                        timestamp=int(time.time()),
                        body=genuine.body.replace(b"classify", b"delete everything"))
        assert refused(forged.body, forged.headers()) == "signature"
        # the genuine signature over a tampered body
        tampered = genuine.body.replace(b"classify", b"delete everything")
        assert refused(tampered, headers) == "signature"
        # not a POST
        assert httpx.get(endpoint.url).status_code == 405
        assert len(calls) == 1

    # the same genuine delivery, to an app whose endpoint is another URL: destination
    elsewhere = push_app(handle, endpoint_url=endpoint.url + "/other", api_key=pair.callee_key,
                         base_url=pair.base_url)
    response = asyncio.run(_post_in_process(elsewhere, genuine.body, headers))
    assert (response.status_code, response.json()["reason"]) == (401, "destination")
    assert len(calls) == 1


# -- in process, with a key of the test's own ------------------------------------------------------


async def _post_in_process(app: PushApp, body: bytes, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://push.test") as client:
        return await client.post("/a2a", content=body, headers=headers)


def local_app(handler: Callable[[Task], Any], signed: Signed, **arguments: Any) -> PushApp:
    return push_app(handler, endpoint_url=URL, agent_id=AGENT_ID, jwks=signed.jwks(),
                    api_key="", base_url="", **arguments)


def returning(value: Any) -> Callable[[Task], Any]:
    return lambda task: value


def test_task_from_delivery_builds_the_handlers_task() -> None:
    task = task_from_delivery(json.loads(delivery_body()))
    assert (task.id, task.call_id, task.callee_agent_id, task.state) == (
        "task-1", "call-1", AGENT_ID, "working")
    assert task.text == "Classify"
    assert task.history == [{"role": "user", "parts": [{"text": "Classify"}]}]
    with pytest.raises(ValueError):
        task_from_delivery({"destination": {}})


def test_the_reply_is_the_task_result_in_the_pull_path_posts() -> None:
    signed = Signed(timestamp=int(time.time()))
    replies: list[Any] = [
        None,
        "plain text",
        {"state": "working"},
        [{"name": "report", "parts": [{"text": "a"}]}],
        object(),  # not JSON: fails the task, as `serve` does
    ]
    expected: list[dict[str, Any]] = [
        {"state": "completed"},
        {"state": "completed",
         "artifacts": [{"name": "response", "parts": [{"text": "plain text"}]}]},
        {"state": "working"},
        {"state": "completed", "artifacts": [{"name": "report", "parts": [{"text": "a"}]}]},
        {"state": "failed"},
    ]
    for reply, answer in zip(replies, expected, strict=True):
        app = local_app(returning(reply), signed)
        response = asyncio.run(_post_in_process(app, signed.body, signed.headers()))
        assert response.status_code == 200, response.text
        body = response.json()
        if answer["state"] == "failed":
            assert body["state"] == "failed" and "object" in body["error"]
        else:
            assert body == answer


def test_a_raising_handler_answers_500_and_its_delivery_is_accepted_again() -> None:
    signed = Signed(timestamp=int(time.time()))
    outcomes: list[Any] = [RuntimeError("boom"), "fine"]

    async def handle(task: Task) -> Any:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    cache = ReplayCache()
    app = local_app(handle, signed, replay_cache=cache)

    async def three_posts() -> list[httpx.Response]:
        return [await _post_in_process(app, signed.body, signed.headers()) for _ in range(3)]

    failed, handled, replayed = asyncio.run(three_posts())
    assert failed.status_code == 500 and "boom" not in failed.text
    assert handled.status_code == 200 and handled.json()["artifacts"][0]["parts"] == [
        {"text": "fine"}]
    assert replayed.status_code == 401 and replayed.json()["reason"] == "replay"
    assert len(cache) == 1


def test_configuration_errors_are_raised_when_the_app_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FORGEBENCH_URL", raising=False)
    monkeypatch.delenv("FORGEBENCH_BASE_URL", raising=False)
    monkeypatch.delenv("FORGEBENCH_API_KEY", raising=False)
    with pytest.raises(ValueError, match="base_url"):
        push_app(lambda task: None, endpoint_url=URL)
    with pytest.raises(ValueError, match="api_key"):
        push_app(lambda task: None, endpoint_url=URL, base_url="http://gateway.test")
    with pytest.raises(ValueError, match="endpoint_url"):
        push_app(lambda task: None, endpoint_url="", api_key="k", base_url="http://g.test")
    # with the JWKS and the agent id given, no gateway is needed
    app = push_app(lambda task: None, endpoint_url=URL, agent_id=AGENT_ID, jwks={"keys": []},
                   api_key="fb_agt_secret", base_url="http://gateway.test")
    assert "fb_agt_secret" not in repr(app)
