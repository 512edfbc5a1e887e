"""The SDK without a gateway: errors, retries, request shapes and `Task`/`TaskReply`, over a
mock transport that plays the gateway's documented answers."""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

import forgebench
from forgebench import (
    APIConnectionError,
    Artifact,
    AsyncForgebench,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Forgebench,
    ForgebenchError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    Task,
    TaskReply,
    UnprocessableEntityError,
    UnprocessableError,
)
from forgebench._http import DEFAULT_MAX_RETRIES
from forgebench._task import reply_from_result

KEY = "fb_agt_" + "1" * 64
BASE = "http://gateway.test"

Responder = Callable[[httpx.Request], httpx.Response]


def task_body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "t-1",
        "context_id": "c-1",
        "caller_agent_id": "a-caller",
        "callee_agent_id": "a-callee",
        "status": {"state": "submitted", "message": None, "timestamp": "now"},
        "input": {"message": {"role": "user", "parts": [{"text": "hi"}]}},
        "artifacts": [],
        "error": None,
        "history": [],
        "call_id": "call-1",
        "parent_call_id": None,
        "root_call_id": "call-1",
        "delivery": "pull",
        "created_at": "now",
        "updated_at": "now",
    }
    body.update(fields)
    return body


class Recorder:
    """A mock gateway answering from a list of responders, one per request, recording each."""

    def __init__(self, *responders: Responder) -> None:
        self._responders = list(responders)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        responder = self._responders.pop(0) if len(self._responders) > 1 else self._responders[0]
        return responder(request)

    def client(self, **options: Any) -> Forgebench:
        http = httpx.Client(transport=httpx.MockTransport(self))
        return Forgebench(api_key=KEY, base_url=BASE, http_client=http, **options)

    def bodies(self) -> list[Any]:
        return [
            json.loads(request.content) if request.content else None for request in self.requests
        ]


def answer(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Responder:
    def respond(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(status, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return respond


def broken(error: type[httpx.TransportError]) -> Responder:
    def respond(request: httpx.Request) -> httpx.Response:
        raise error("the connection broke", request=request)

    return respond


DOCUMENTED_ERRORS = [
    (
        400,
        {"detail": {"code": "invalid_request", "message": "wait must be 0-30"}},
        BadRequestError,
        "invalid_request",
    ),
    (
        401,
        {"detail": {"code": "unauthenticated", "message": "unknown key"}},
        AuthenticationError,
        "unauthenticated",
    ),
    (
        403,
        {"detail": {"code": "not_permitted", "message": "not permitted to call that agent"}},
        PermissionDeniedError,
        "not_permitted",
    ),
    (404, {"detail": "task not found"}, NotFoundError, None),
    (
        409,
        {"detail": {"code": "task_not_working", "state": "canceled"}},
        ConflictError,
        "task_not_working",
    ),
    (
        413,
        {"detail": {"code": "too_large", "message": "past 4 MiB"}},
        PayloadTooLargeError,
        "too_large",
    ),
    (
        422,
        {"detail": "a pull result must be completed, failed, or input_required"},
        UnprocessableEntityError,
        None,
    ),
    (
        429,
        {"detail": {"code": "too_many_requests", "message": "slow down"}},
        RateLimitError,
        "too_many_requests",
    ),
    (
        503,
        {"detail": {"code": "unavailable", "message": "try again"}},
        ServiceUnavailableError,
        "unavailable",
    ),
]


@pytest.mark.parametrize(("status", "body", "error_class", "code"), DOCUMENTED_ERRORS)
def test_each_documented_status_raises_its_typed_error_with_the_body(
    status: int, body: Any, error_class: type[ForgebenchError], code: str | None
) -> None:
    gateway = Recorder(answer(status, body))
    with gateway.client(max_retries=0) as client, pytest.raises(error_class) as raised:
        client.agents.task("invoice-classifier", "t-1")

    error = raised.value
    assert isinstance(error, forgebench.APIStatusError)
    assert (error.status, error.body, error.code) == (status, body, code)


def test_a_conflict_names_the_task_state_and_a_rate_limit_its_retry_after() -> None:
    conflict = Recorder(answer(409, {"detail": {"code": "task_not_working", "state": "failed"}}))
    limited = Recorder(answer(429, {"detail": {"code": "too_many_requests"}}, {"Retry-After": "1"}))
    with conflict.client() as client, pytest.raises(ConflictError) as raised_conflict:
        client.agents.reply("t-1", TaskReply.completed(text="late"))
    with limited.client(max_retries=0) as client, pytest.raises(RateLimitError) as raised_limit:
        client.agents.next_task(wait=1)

    assert raised_conflict.value.state == "failed"
    assert raised_limit.value.retry_after == 1.0


def test_a_503_is_retried_and_then_answered() -> None:
    gateway = Recorder(answer(503, {"detail": {"code": "unavailable"}}), answer(200, task_body()))
    with gateway.client() as client:
        task = client.agents.reply("t-1", TaskReply.failed("no"))

    assert task.id == "t-1"
    assert len(gateway.requests) == 2


def test_a_429_is_retried_after_its_retry_after() -> None:
    gateway = Recorder(
        answer(429, {"detail": {"code": "too_many_requests"}}, {"Retry-After": "0"}),
        answer(204),
    )
    with gateway.client() as client:
        assert client.agents.next_task(wait=3) is None
    assert len(gateway.requests) == 2
    assert [request.url.params["wait"] for request in gateway.requests] == ["3", "3"]


# -- the behaviour every SDK shares (docs/sdks.md) --------------------------------------------


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the sync transport takes before each retry, recorded instead of slept."""
    taken: list[float] = []
    monkeypatch.setattr("forgebench._http.time.sleep", taken.append)
    return taken


def test_by_default_a_request_is_retried_twice(pauses: list[float]) -> None:
    gateway = Recorder(answer(503, {"detail": {"code": "unavailable"}}))
    with gateway.client() as client, pytest.raises(ServiceUnavailableError):
        client.agents.task("invoice-classifier", "t-1")
    assert DEFAULT_MAX_RETRIES == 2
    assert len(gateway.requests) == 3
    # 0.5 s doubling, each give or take 25 %
    assert 0.375 <= pauses[0] <= 0.625 and 0.75 <= pauses[1] <= 1.25


def test_a_502_is_retried_for_a_get_but_not_for_a_post_that_is_not_safe_to_repeat(
    pauses: list[float],
) -> None:
    bad_gateway = answer(502, "<html>502 Bad Gateway</html>")
    read = Recorder(bad_gateway, answer(200, task_body()))
    result = Recorder(bad_gateway, answer(200, task_body()))
    with read.client() as client:
        assert client.agents.task("invoice-classifier", "t-1").id == "t-1"
    with result.client() as client, pytest.raises(forgebench.InternalServerError) as raised:
        client.agents.reply("t-1", TaskReply.completed(text="done"))  # no message_id
    assert len(read.requests) == 2
    assert len(result.requests) == 1
    assert raised.value.status == 502


def test_a_502_is_retried_for_a_post_made_safe_by_its_message_id(pauses: list[float]) -> None:
    gateway = Recorder(answer(504, None), answer(200, task_body()))
    with gateway.client() as client:
        client.agents.call("invoice-classifier", text="hi")
    first, second = gateway.bodies()
    assert first == second


def test_a_429_waits_its_retry_after_then_sends_again(pauses: list[float]) -> None:
    gateway = Recorder(
        answer(429, {"detail": {"code": "too_many_requests"}}, {"Retry-After": "0.25"}),
        answer(200, task_body()),
    )
    with gateway.client() as client:
        client.agents.reply("t-1", TaskReply.completed(text="done"))  # even a non-repeatable POST
    assert pauses == [0.25]
    assert len(gateway.requests) == 2


def test_a_retry_after_longer_than_30_seconds_is_not_waited_for(pauses: list[float]) -> None:
    gateway = Recorder(answer(429, {"detail": {"code": "too_many_requests"}}, {"Retry-After": "31"}))
    with gateway.client() as client, pytest.raises(RateLimitError) as raised:
        client.agents.next_task(wait=1)
    assert pauses == []
    assert raised.value.retry_after == 31.0


# -- a binding's contract: quota_exceeded (docs/api.md, "Limits and contracts on a binding") ----

QUOTA_EXCEEDED = {
    "detail": {
        "code": "quota_exceeded",
        "message": "the binding's rate of 1 tasks a minute is reached",
    }
}


def test_an_open_past_its_contract_is_a_quota_exceeded_rate_limit_error() -> None:
    gateway = Recorder(answer(429, QUOTA_EXCEEDED, {"Retry-After": "17"}))
    with gateway.client(max_retries=0) as client, pytest.raises(RateLimitError) as raised:
        client.agents.call("invoice-classifier", text="Classify INV-2")
    error = raised.value
    assert (error.status, error.code, error.retry_after) == (429, "quota_exceeded", 17.0)
    assert error.message == "the binding's rate of 1 tasks a minute is reached"
    assert error.body == QUOTA_EXCEEDED
    assert len(gateway.requests) == 1


def test_an_open_refused_by_its_quota_is_sent_again_with_the_same_message_id(
    pauses: list[float],
) -> None:
    # the refusal opened nothing, and the message_id makes the repeat safe: the 429 rule holds
    gateway = Recorder(
        answer(429, QUOTA_EXCEEDED, {"Retry-After": "1"}),
        answer(200, task_body(skill="lookup")),
    )
    with gateway.client() as client:
        task = client.agents.call("invoice-classifier", text="Classify", skill="lookup")
    assert task.skill == "lookup"
    assert pauses == [1.0]
    first, second = gateway.bodies()
    assert first == second and first["message"]["message_id"]
    assert first["skill"] == "lookup"


def test_a_quota_whose_retry_after_is_past_30_seconds_is_raised_at_once(
    pauses: list[float],
) -> None:
    daily = {"detail": {"code": "quota_exceeded", "message": "the daily quota is reached"}}
    gateway = Recorder(answer(429, daily, {"Retry-After": "40000"}), answer(200, task_body()))
    with gateway.client() as client, pytest.raises(RateLimitError) as raised:
        client.agents.call("invoice-classifier", text="Classify")
    assert (raised.value.code, raised.value.retry_after) == ("quota_exceeded", 40000.0)
    assert pauses == [] and len(gateway.requests) == 1


def test_an_open_names_its_skill_only_when_given() -> None:
    gateway = Recorder(answer(200, task_body()))
    with gateway.client() as client:
        assert client.agents.call("invoice-classifier", text="a").skill is None
        client.agents.call("invoice-classifier", text="b", skill="lookup")
        with pytest.raises(ValueError):
            client.agents.call("invoice-classifier", text="c", skill="")
    plain, named = gateway.bodies()
    assert "skill" not in plain
    assert named["skill"] == "lookup"
    assert Task(task_body(skill="classify")).skill == "classify"
    assert Task(task_body(skill=None)).skill is None


BINDING = {
    "id": "b-1",
    "caller_agent_id": "a-caller",
    "callee_agent_id": "a-callee",
    "source": "api",
    "revoked": False,
    "approved_at": "now",
    "limits": {
        "max_call_depth": 4,
        "refuse_cycles": None,
        "max_fan_out": None,
        "max_open_in_tree": None,
    },
    "contract": {
        "skills": ["lookup"],
        "rate_per_minute": None,
        "max_concurrent": None,
        "daily_quota": None,
    },
    "usage": {"minute": None, "day": None, "open": None},
}


def test_update_binding_sends_its_merge_patches_and_is_not_resent() -> None:
    gateway = Recorder(answer(200, BINDING))
    with gateway.client() as client:
        updated = client.agents.update_binding(
            "billing orchestrator",
            "b-1",
            limits={"max_call_depth": 4, "max_fan_out": None},
            contract={"skills": ["lookup"], "rate_per_minute": None},
        )
        client.agents.update_binding("invoice-classifier", "b-1", contract={"daily_quota": 10})
        client.agents.update_binding("invoice-classifier", "b-1")
        with pytest.raises(TypeError):
            client.agents.update_binding(
                "a", "b-1", contract={"skills": "lookup"}  # type: ignore[arg-type]
            )
        with pytest.raises(TypeError):
            client.agents.update_binding("a", "b-1", limits=None)  # type: ignore[arg-type]
    assert updated == BINDING
    both, contract_only, empty = gateway.requests
    assert (both.method, both.url.raw_path) == (
        "PATCH",
        b"/v1/agents/billing%20orchestrator/agents/b-1",
    )
    assert gateway.bodies() == [
        {
            "limits": {"max_call_depth": 4, "max_fan_out": None},
            "contract": {"skills": ["lookup"], "rate_per_minute": None},
        },
        {"contract": {"daily_quota": 10}},
        {},
    ]
    assert contract_only.url.path == empty.url.path == "/v1/agents/invoice-classifier/agents/b-1"

    lost = Recorder(broken(httpx.ReadError), answer(200, BINDING))
    with lost.client() as client, pytest.raises(APIConnectionError):
        client.agents.update_binding("a", "b-1", contract={"max_concurrent": 2})
    assert len(lost.requests) == 1  # a PATCH is not sent again once it may have landed


def test_the_async_update_binding_sends_the_same_patch() -> None:
    gateway = Recorder(answer(200, BINDING))

    async def run() -> Any:
        http = httpx.AsyncClient(transport=httpx.MockTransport(gateway))
        async with AsyncForgebench(api_key=KEY, base_url=BASE, http_client=http) as client:
            return await client.agents.update_binding(
                "b", "b-1", limits={"refuse_cycles": None}, contract={"skills": None}
            )

    assert asyncio.run(run()) == BINDING
    [request] = gateway.requests
    assert (request.method, request.url.path) == ("PATCH", "/v1/agents/b/agents/b-1")
    assert gateway.bodies() == [{"limits": {"refuse_cycles": None}, "contract": {"skills": None}}]


def test_an_error_carries_status_code_and_the_request_id_of_the_body_or_header() -> None:
    in_body = Recorder(
        answer(
            403,
            {"detail": {"code": "forbidden", "message": "no", "request_id": "req-body"}},
            {"X-Request-Id": "req-header"},
        )
    )
    exact = Recorder(answer(404, {"detail": "task not found"}, {"X-Request-Id": "req-header"}))
    without = Recorder(answer(400, {"detail": {"code": "invalid_request"}}))
    with in_body.client() as client, pytest.raises(PermissionDeniedError) as denied:
        client.agents.cancel("invoice-classifier", "t-1")
    with exact.client() as client, pytest.raises(NotFoundError) as missing:
        client.agents.task("invoice-classifier", "t-1")
    with without.client() as client, pytest.raises(BadRequestError) as bad:
        client.agents.me()
    assert (denied.value.status, denied.value.code, denied.value.request_id) == (
        403,
        "forbidden",
        "req-body",
    )
    assert (missing.value.status, missing.value.code, missing.value.request_id) == (
        404,
        None,
        "req-header",
    )
    assert bad.value.request_id is None


def test_a_422_is_an_unprocessable_entity_error_also_under_its_old_name() -> None:
    gateway = Recorder(answer(422, {"detail": "a pull result must be completed"}))
    with gateway.client() as client, pytest.raises(UnprocessableEntityError) as raised:
        client.agents.reply("t-1", TaskReply.completed(text="done"))
    assert type(raised.value).__name__ == "UnprocessableEntityError"
    assert UnprocessableError is UnprocessableEntityError
    assert isinstance(raised.value, UnprocessableError)
    assert forgebench.UnprocessableEntityError is UnprocessableEntityError


def test_retries_stop_at_max_retries() -> None:
    gateway = Recorder(answer(503, {"detail": {"code": "unavailable"}}))
    with gateway.client(max_retries=1) as client, pytest.raises(ServiceUnavailableError):
        client.agents.cancel("invoice-classifier", "t-1")
    assert len(gateway.requests) == 2


def test_a_call_retried_after_a_broken_connection_sends_the_same_message_id() -> None:
    gateway = Recorder(broken(httpx.RemoteProtocolError), answer(200, task_body()))
    with gateway.client() as client:
        client.agents.call("invoice-classifier", text="hi", data={"n": 1})

    first, second = gateway.bodies()
    assert first == second
    assert first["message"]["parts"] == [{"text": "hi"}, {"data": {"n": 1}}]
    assert first["message"]["role"] == "user"
    assert len(first["message"]["message_id"]) >= 16


def test_each_call_has_its_own_message_id_unless_one_is_given() -> None:
    gateway = Recorder(answer(200, task_body()))
    with gateway.client() as client:
        client.agents.call("invoice-classifier", text="a")
        client.agents.call("invoice-classifier", text="a")
        client.agents.call("invoice-classifier", text="a", message_id="mine")

    ids = [body["message"]["message_id"] for body in gateway.bodies()]
    assert ids[0] != ids[1]
    assert ids[2] == "mine"


def test_a_result_without_message_id_is_not_resent_after_the_connection_broke() -> None:
    """It may have landed; a repeat would be refused, so the error is the caller's to see."""
    gateway = Recorder(broken(httpx.ReadError), answer(200, task_body()))
    with gateway.client() as client, pytest.raises(APIConnectionError):
        client.agents.reply("t-1", TaskReply.completed(text="done"))
    assert len(gateway.requests) == 1


def test_a_question_is_resent_after_the_connection_broke_with_the_same_message_id() -> None:
    gateway = Recorder(broken(httpx.ReadError), answer(200, task_body()))
    with gateway.client() as client:
        client.agents.reply("t-1", TaskReply.input_required("which one?"))

    first, second = gateway.bodies()
    assert first == second
    assert first["message"]["message_id"]


def test_any_request_is_resent_when_the_connection_never_opened() -> None:
    gateway = Recorder(broken(httpx.ConnectError), answer(200, task_body()))
    with gateway.client() as client:
        client.agents.reply("t-1", TaskReply.completed(text="done"))
    assert len(gateway.requests) == 2


def test_requests_carry_the_key_the_routes_and_x_parent_call() -> None:
    gateway = Recorder(answer(200, task_body()))
    with gateway.client() as client:
        client.agents.call(
            "invoice classifier/x", text="hi", wait=30, context_id="c-9", parent_call_id="p-1"
        )
        client.agents.task("invoice-classifier", "t-1", wait=10)
        client.agents.cancel("invoice-classifier", "t-1")

    opened, read, canceled = gateway.requests
    assert opened.headers["authorization"] == f"Bearer {KEY}"
    assert opened.headers["x-parent-call"] == "p-1"
    assert (opened.method, opened.url.raw_path) == (
        "POST",
        b"/v1/agents/invoice%20classifier%2Fx/tasks?wait=30",
    )
    assert json.loads(opened.content)["context_id"] == "c-9"
    assert "x-parent-call" not in read.headers
    assert (read.method, read.url.raw_path) == (
        "GET",
        b"/v1/agents/invoice-classifier/tasks/t-1?wait=10",
    )
    assert (canceled.method, canceled.url.path) == (
        "POST",
        "/v1/agents/invoice-classifier/tasks/t-1/cancel",
    )


def test_the_key_is_never_in_a_repr() -> None:
    client = Forgebench(api_key=KEY, base_url=BASE)
    async_client = AsyncForgebench(api_key=KEY, base_url=BASE)
    assert KEY not in repr(client) and KEY not in repr(client._transport)
    assert KEY not in repr(async_client)
    client.close()


def test_a_missing_key_is_refused_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORGEBENCH_API_KEY", raising=False)
    with pytest.raises(ValueError):
        Forgebench(base_url=BASE)


class RecordingServer:
    """A throwaway HTTP server on 127.0.0.1 that records each request and answers `body`."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        recorded = self.requests
        payload = json.dumps(body).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorded.append((self.command, self.path, dict(self.headers.items())))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def recording_server() -> Iterator[RecordingServer]:
    server = RecordingServer({"id": "a-env", "name": "agent-of-the-env-key", "status": "active"})
    yield server
    server.close()


@pytest.fixture
def no_configuration(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """None of the SDK's variables, whatever the runner exported (it sets FORGEBENCH_URL)."""
    for name in ("FORGEBENCH_URL", "FORGEBENCH_API_KEY", "FORGEBENCH_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_client_without_arguments_sends_its_key_to_forgebench_url(
    no_configuration: pytest.MonkeyPatch, recording_server: RecordingServer
) -> None:
    no_configuration.setenv("FORGEBENCH_URL", recording_server.url + "/")
    no_configuration.setenv("FORGEBENCH_API_KEY", KEY)
    with Forgebench() as client:
        assert client.base_url == recording_server.url
        me = client.agents.me()

    assert me["name"] == "agent-of-the-env-key"  # the answer came from that server
    [(method, path, headers)] = recording_server.requests
    assert (method, path) == ("GET", "/v1/agents/me")
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Host"] == recording_server.url.removeprefix("http://")


@pytest.mark.parametrize("client_class", [Forgebench, AsyncForgebench])
def test_with_no_url_anywhere_making_a_client_fails_before_any_request(
    no_configuration: pytest.MonkeyPatch, client_class: type[Forgebench | AsyncForgebench]
) -> None:
    """No silent public default: a key must never go to a host nobody named."""
    no_configuration.setenv("FORGEBENCH_API_KEY", KEY)
    gateway = Recorder(answer(200, {"id": "a-1", "name": "anywhere"}))
    transport = httpx.MockTransport(gateway)

    with pytest.raises(ValueError, match="FORGEBENCH_URL") as raised:
        if client_class is Forgebench:
            Forgebench(http_client=httpx.Client(transport=transport)).agents.me()
        else:
            AsyncForgebench(http_client=httpx.AsyncClient(transport=transport))

    assert "base_url" in str(raised.value)
    assert KEY not in str(raised.value)
    assert gateway.requests == []


def test_an_argument_wins_over_the_environment(no_configuration: pytest.MonkeyPatch) -> None:
    no_configuration.setenv("FORGEBENCH_URL", "http://from-the-env.test")
    no_configuration.setenv("FORGEBENCH_API_KEY", "fb_agt_" + "2" * 64)
    gateway = Recorder(answer(200, {"id": "a-1", "name": "named"}))
    http = httpx.Client(transport=httpx.MockTransport(gateway))
    with Forgebench(api_key=KEY, base_url=BASE, http_client=http) as client:
        client.agents.me()

    [request] = gateway.requests
    assert str(request.url) == BASE + "/v1/agents/me"
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_the_deprecated_base_url_variable_still_works_with_a_warning(
    no_configuration: pytest.MonkeyPatch,
) -> None:
    no_configuration.setenv("FORGEBENCH_API_KEY", KEY)
    no_configuration.setenv("FORGEBENCH_BASE_URL", BASE + "/")
    with pytest.warns(DeprecationWarning, match="FORGEBENCH_URL") as warned:
        client = Forgebench()
    with client:
        assert client.base_url == BASE
    assert warned[0].filename == __file__  # it points at the code that made the client


def test_forgebench_url_wins_over_the_deprecated_variable_without_a_warning(
    no_configuration: pytest.MonkeyPatch,
) -> None:
    no_configuration.setenv("FORGEBENCH_API_KEY", KEY)
    no_configuration.setenv("FORGEBENCH_URL", BASE)
    no_configuration.setenv("FORGEBENCH_BASE_URL", "http://old.test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sync_client = Forgebench()
        async_client = AsyncForgebench()
    assert sync_client.base_url == async_client.base_url == BASE
    sync_client.close()
    asyncio.run(async_client.aclose())


def test_a_message_needs_a_part() -> None:
    with Forgebench(api_key=KEY, base_url=BASE) as client, pytest.raises(ValueError):
        client.agents.call("invoice-classifier")


def test_the_async_client_retries_and_raises_like_the_sync_one() -> None:
    gateway = Recorder(
        broken(httpx.RemoteProtocolError),
        answer(200, task_body()),
        answer(
            403,
            {"detail": {"code": "not_permitted", "message": "not permitted to call that agent"}},
        ),
    )

    async def run() -> Task:
        http = httpx.AsyncClient(transport=httpx.MockTransport(gateway))
        async with AsyncForgebench(api_key=KEY, base_url=BASE, http_client=http) as client:
            task = await client.agents.call("invoice-classifier", text="hi")
            with pytest.raises(PermissionDeniedError):
                await client.agents.call("invoice-classifier", text="again")
            await http.aclose()
            return task

    assert asyncio.run(run()).id == "t-1"
    first, second, third = gateway.bodies()
    assert first == second
    assert third["message"]["message_id"] != first["message"]["message_id"]


# -- task search pages -----------------------------------------------------------------------


def search_pages(*sizes: int) -> Recorder:
    """Pages of a search as the gateway may answer them: each full page carries a next_cursor,
    the last one too (the gateway cannot tell it is the last), which leads to an empty page."""
    pages = []
    for number, size in enumerate(sizes):
        items = [task_body(id=f"t-{number}-{n}") for n in range(size)]
        cursor = None if number == len(sizes) - 1 else f"cursor-{number}"
        pages.append(answer(200, {"items": items, "next_cursor": cursor}))
    return Recorder(*pages)


def test_iter_task_pages_yields_no_empty_page_after_a_full_last_one() -> None:
    gateway = search_pages(5, 5, 5, 0)
    with gateway.client() as client:
        pages = list(client.agents.iter_task_pages(limit=5))
    assert [len(page.tasks) for page in pages] == [5, 5, 5]
    assert len(gateway.requests) == 4  # the empty page was read, to know the search had ended
    assert [request.url.params.get("cursor") for request in gateway.requests] == [
        None,
        "cursor-0",
        "cursor-1",
        "cursor-2",
    ]


def test_iter_task_pages_passes_over_an_empty_page_between_full_ones() -> None:
    # A page cut short by the search's read budget may hold no task while next_cursor leads on.
    with search_pages(5, 0, 2).client() as client:
        pages = list(client.agents.iter_task_pages(limit=5))
    with search_pages(5, 0, 2).client() as client:
        tasks = list(client.agents.iter_tasks(limit=5))
    assert [len(page.tasks) for page in pages] == [5, 2]
    assert len(tasks) == 7


def test_iter_task_pages_yields_nothing_for_a_search_that_finds_nothing() -> None:
    with search_pages(0).client() as client:
        assert list(client.agents.iter_task_pages(q="albatross")) == []


def test_the_async_iter_task_pages_yields_no_empty_page() -> None:
    gateway = search_pages(5, 5, 5, 0)

    async def run() -> list[int]:
        http = httpx.AsyncClient(transport=httpx.MockTransport(gateway))
        async with AsyncForgebench(api_key=KEY, base_url=BASE, http_client=http) as client:
            sizes = [len(page.tasks) async for page in client.agents.iter_task_pages(limit=5)]
            await http.aclose()
            return sizes

    assert asyncio.run(run()) == [5, 5, 5]
    assert len(gateway.requests) == 4


# -- Task and TaskReply ----------------------------------------------------------------------


def test_task_reads_its_input_question_and_artifacts() -> None:
    task = Task(
        task_body(
            status={
                "state": "input_required",
                "message": {"role": "agent", "parts": [{"text": "Which"}, {"text": "currency?"}]},
                "timestamp": "now",
            },
            input={
                "message": {
                    "role": "user",
                    "parts": [{"text": "Classify"}, {"data": [1]}, {"data": {"invoice_id": "I-1"}}],
                }
            },
            artifacts=[
                {"name": "a", "parts": [{"text": "one"}, {"data": {"x": 1}}]},
                {"name": "b", "parts": [{"text": "two"}]},
            ],
            parent_call_id="call-0",
        )
    )
    assert task.question == "Which\ncurrency?"
    assert task.data == {"invoice_id": "I-1"}
    assert task.text == "Classify"
    assert task.artifact_text() == "one\ntwo"
    assert (task.parent_call_id, task.root_call_id, task.call_id) == ("call-0", "call-1", "call-1")
    assert task.raw["delivery"] == "pull"


def test_task_without_data_question_or_artifacts() -> None:
    task = Task(task_body())
    assert (task.data, task.question, task.error, task.artifact_text()) == ({}, None, None, "")


def test_replies_built_from_a_task() -> None:
    task = Task(task_body())
    assert task.done(text="t", data={"d": 1}).to_json() == {
        "state": "completed",
        "artifacts": [{"name": "response", "parts": [{"text": "t"}, {"data": {"d": 1}}]}],
    }
    assert task.done().to_json() == {"state": "completed"}
    extra: Artifact = {"name": "extra", "parts": [{"text": "x"}]}
    assert task.done(text="t", artifacts=[extra]).to_json()["artifacts"][1] == extra
    asked = task.ask("why?").to_json()
    assert asked["state"] == "input_required"
    assert asked["message"]["parts"] == [{"text": "why?"}]
    assert asked["message"]["role"] == "agent"
    assert (
        task.ask("a").to_json()["message"]["message_id"]
        != task.ask("a").to_json()["message"]["message_id"]
    )
    assert task.fail("broken").to_json() == {"state": "failed", "error": "broken"}


ARTIFACT = {"name": "r", "parts": [{"text": "x"}]}


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (
            "text",
            {
                "state": "completed",
                "artifacts": [{"name": "response", "parts": [{"text": "text"}]}],
            },
        ),
        (None, {"state": "completed"}),
        (
            {"k": 1},
            {
                "state": "completed",
                "artifacts": [{"name": "response", "parts": [{"data": {"k": 1}}]}],
            },
        ),
        ([ARTIFACT], {"state": "completed", "artifacts": [ARTIFACT]}),
        (
            [1, 2],
            {
                "state": "completed",
                "artifacts": [{"name": "response", "parts": [{"data": [1, 2]}]}],
            },
        ),
        (3, {"state": "completed", "artifacts": [{"name": "response", "parts": [{"data": 3}]}]}),
        ({"artifacts": [ARTIFACT]}, {"state": "completed", "artifacts": [ARTIFACT]}),
        ({"state": "failed", "error": "e"}, {"state": "failed", "error": "e"}),
        (TaskReply.failed("f"), {"state": "failed", "error": "f"}),
    ],
)
def test_what_a_handler_returns_becomes_a_reply(result: Any, expected: dict[str, Any]) -> None:
    assert reply_from_result(result).to_json() == expected


def test_a_handler_result_that_is_no_json_is_refused() -> None:
    with pytest.raises(TypeError):
        reply_from_result(object())


# -- serve over the mock gateway -------------------------------------------------------------


def claimed_task(task_id: str = "t-1") -> dict[str, Any]:
    return task_body(id=task_id, status={"state": "working", "message": None, "timestamp": "now"})


def routed(claims: list[Responder], results: list[Responder]) -> Responder:
    """Claims and results answered from their own lists (the last answer repeats)."""

    def respond(request: httpx.Request) -> httpx.Response:
        queue = claims if request.url.path.endswith("/tasks/next") else results
        return (queue.pop(0) if len(queue) > 1 else queue[0])(request)

    return respond


def test_serve_and_next_task_wait_20_seconds_by_default() -> None:
    gateway = Recorder(
        routed([answer(200, claimed_task()), answer(204)], [answer(200, task_body())])
    )
    with gateway.client() as client:
        assert client.agents.serve(lambda task: "ok", max_tasks=1) == 1
        assert client.agents.next_task() is None

    claims = [r for r in gateway.requests if r.url.path.endswith("/tasks/next")]
    assert [request.url.params["wait"] for request in claims] == ["20", "20"]


def test_a_refused_key_ends_serve_with_its_error() -> None:
    refused = answer(401, {"detail": {"code": "unauthenticated", "message": "revoked"}})
    for concurrency in (1, 2):
        gateway = Recorder(refused)
        with gateway.client() as client, pytest.raises(AuthenticationError):
            client.agents.serve(lambda task: "ok", concurrency=concurrency, wait=1)


def test_serve_posts_a_reply_again_after_passing_failures() -> None:
    unavailable = answer(503, {"detail": {"code": "unavailable"}})
    gateway = Recorder(
        routed([answer(200, claimed_task())], [unavailable, unavailable, answer(200, task_body())])
    )
    with gateway.client(max_retries=0) as client:
        assert client.agents.serve(lambda task: task.done(text="ok"), max_tasks=1) == 1

    results = [json.loads(r.content) for r in gateway.requests if r.url.path.endswith("/result")]
    assert len(results) == 3
    assert results[0] == results[2]


def test_a_stop_before_serve_starts_is_not_remembered() -> None:
    gateway = Recorder(routed([answer(200, claimed_task())], [answer(200, task_body())]))
    with gateway.client() as client:
        client.agents.stop()
        assert client.agents.serve(lambda task: "ok", max_tasks=1) == 1


def test_max_tasks_zero_claims_nothing() -> None:
    gateway = Recorder(answer(200, claimed_task()))
    with gateway.client() as client:
        assert client.agents.serve(lambda task: "ok", max_tasks=0) == 0
    assert gateway.requests == []
