"""Operating push deliveries through the SDK, on the gateway (docs/api.md, "Operating
deliveries"): an endpoint's health, enabling it, redriving the deliveries waiting for a retry,
replaying one task's delivery, and replaying an A2A push notification config's latest event;
through the sync and the async client.

The push endpoint is a local HTTP server the test controls: it answers 503 with a
`Retry-After` of ten minutes, so a task that failed its first attempt waits for its retry for
the whole test (nothing but a replay or a redrive attempts it again), then 200 with a result
once the test switches it over. A notification config's URL is another local server, which
answers 200 and keeps each notification's `webhook-id`. The gateway under test allows loopback
endpoints (`FORGEBENCH_PUSH_ALLOWED_CIDRS`, as `scripts/sdk-tests.sh` sets it).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import httpx
import pytest

from forgebench import (
    AsyncForgebench,
    BadRequestError,
    ConflictError,
    DeliveryAttempt,
    EndpointHealth,
    Forgebench,
    NotFoundError,
    PermissionDeniedError,
    Redriven,
    Replayed,
    ReplayedNotification,
)
from forgebench import _requests as requests

CALLER = "billing-orchestrator"
CALLEE = "invoice-classifier"
PULL_AGENT = "ledger-reader"
#: What the endpoint answers once it works again: a result the gateway applies as it is.
COMPLETED = {"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}
#: Long enough that no retry the gateway schedules comes within a test.
RETRY_AFTER_SECONDS = 600
#: How long a test waits for what the gateway does in the background (a delivery, a count).
DEADLINE_SECONDS = 90.0

T = TypeVar("T")


# -- the push endpoint ---------------------------------------------------------------------------


@dataclass
class Delivery:
    task_id: str
    webhook_id: str


@dataclass
class Receiver:
    """What the endpoint answers (`failing`: 503, else 200 with `COMPLETED`) and what it got."""

    failing: bool = True
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, delivery: Delivery) -> bool:
        """Keeps `delivery`; whether to fail it."""
        with self.lock:
            self.deliveries.append(delivery)
            return self.failing

    def webhook_ids(self, task_id: str) -> list[str]:
        with self.lock:
            return [d.webhook_id for d in self.deliveries if d.task_id == task_id]


class _Endpoint(BaseHTTPRequestHandler):
    receiver: Receiver

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        delivery = Delivery(str(body.get("task_id")), self.headers.get("webhook-id", ""))
        if type(self).receiver.record(delivery):
            self._answer(503, {"detail": "busy"}, {"Retry-After": str(RETRY_AFTER_SECONDS)})
        else:
            self._answer(200, COMPLETED, {})

    def _answer(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        content = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class PushEndpoint:
    url: str
    receiver: Receiver


@pytest.fixture
def endpoint() -> Iterator[PushEndpoint]:
    """A local push endpoint that fails every delivery until the test says otherwise."""
    receiver = Receiver()
    handler = type("Endpoint", (_Endpoint,), {"receiver": receiver})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield PushEndpoint(f"http://127.0.0.1:{server.server_address[1]}/a2a", receiver)
    finally:
        server.shutdown()
        server.server_close()


# -- the tenant ----------------------------------------------------------------------------------


@dataclass
class Tenant:
    """A tenant made through the SDK: its admin, the caller's client and a person per role."""

    base_url: str
    admin: Forgebench
    caller: Forgebench
    admin_key: str = field(repr=False)
    member_key: str = field(repr=False)
    viewer_key: str = field(repr=False)
    caller_key: str = field(repr=False)

    def client(self, key: str) -> Forgebench:
        return Forgebench(api_key=key, base_url=self.base_url, max_retries=0)


def new_tenant(base_url: str, operator_key: str) -> Tenant:
    """A tenant with the caller bound to the push callee, a pull agent, a member and a viewer."""
    with Forgebench(api_key=operator_key, base_url=base_url) as operator:
        created = operator.tenants.create(f"pysdk-deliveries-{uuid.uuid4().hex[:12]}")
    admin = Forgebench(api_key=created.admin_key, base_url=base_url)
    for name in (CALLER, CALLEE, PULL_AGENT):
        admin.agents.create(name)
    admin.agents.grant(CALLER, [CALLEE, PULL_AGENT])
    caller_key = admin.agents.issue_key(CALLER).key
    caller = Forgebench(api_key=caller_key, base_url=base_url)
    member = admin.members.create("Dana Whitfield", "member")
    viewer = admin.members.create("Priya Raman", "viewer")
    return Tenant(base_url, admin, caller, created.admin_key, member.key, viewer.key, caller_key)


@pytest.fixture
def tenant(gateway: tuple[str, str]) -> Iterator[Tenant]:
    made = new_tenant(*gateway)
    yield made
    made.admin.close()
    made.caller.close()


def eventually(read: Callable[[], T], holds: Callable[[T], bool], what: str) -> T:
    """`read()` once `holds` of it, polled until `DEADLINE_SECONDS` pass."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        value = read()
        if holds(value):
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}: last {value!r}"
        time.sleep(0.2)


def attempts_after(tenant: Tenant, task_id: str, count: int) -> list[DeliveryAttempt]:
    """The task's delivery attempts once there are at least `count`."""
    return eventually(
        lambda: tenant.admin.agents.attempts(CALLEE, task_id),
        lambda attempts: len(attempts) >= count,
        f"{count} delivery attempts of {task_id}",
    )


def a_failed_delivery(tenant: Tenant, text: str) -> str:
    """Opens a push task and waits until its first attempt failed (503); its id."""
    task = tenant.caller.agents.call(CALLEE, text=text)
    [attempt] = attempts_after(tenant, task.id, 1)
    assert attempt.get("status") == 503, attempt
    return task.id


def failing_health(admin: Forgebench) -> EndpointHealth:
    """The callee's endpoint health once it says `failing`: the gateway counts an attempt just
    after it records it in the task's attempts."""
    return eventually(
        lambda: admin.agents.endpoint_health(CALLEE),
        lambda health: health["state"] == "failing",
        "the endpoint's health to count the failure",
    )


def replayed_once_waiting(admin: Forgebench, task_id: str) -> Replayed:
    """The task's delivery replayed. Just after an attempt is recorded the gateway may still hold
    its lease (a 409 that replays nothing): tried again until `DEADLINE_SECONDS` pass."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        try:
            return admin.agents.replay_delivery(CALLEE, task_id)
        except ConflictError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def finished_state(tenant: Tenant, task_id: str) -> str:
    """The task's state once it left submitted/working (read as the caller)."""
    return eventually(
        lambda: tenant.caller.agents.task(CALLEE, task_id, wait=5).state,
        lambda state: state not in ("submitted", "working"),
        f"task {task_id} to finish",
    )


# -- an A2A push notification config's receiver ----------------------------------------------------


@dataclass
class Notification:
    """One notification a config's URL received: its `webhook-id`, its body, and the task state
    a `statusUpdate` carries (None for other events)."""

    webhook_id: str
    body: bytes
    state: str | None


@dataclass
class Hook:
    """What the config's URL received, in order."""

    url: str
    notifications: list[Notification] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[Notification]:
        with self.lock:
            return list(self.notifications)


class _Hook(BaseHTTPRequestHandler):
    hook: Hook

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = json.loads(body).get("statusUpdate", {}).get("status", {})
        notification = Notification(self.headers.get("webhook-id", ""), body, status.get("state"))
        with type(self).hook.lock:
            type(self).hook.notifications.append(notification)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[Hook]:
    """A local receiver for a task's A2A push notifications, answering 200 to each."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    made = Hook(f"http://127.0.0.1:{server.server_address[1]}/hooks/a2a")
    server.RequestHandlerClass = type("Hook", (_Hook,), {"hook": made})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield made
    finally:
        server.shutdown()
        server.server_close()


def create_notification_config(tenant: Tenant, task_id: str, config_id: str, url: str) -> None:
    """The caller saves an A2A push notification config on its task, over A2A's HTTP+JSON
    binding (no SDK helper makes one)."""
    answer = httpx.post(
        f"{tenant.base_url}/v1/agents/{CALLEE}/a2a/tasks/{task_id}/pushNotificationConfigs",
        json={"id": config_id, "url": url},
        headers={"Authorization": f"Bearer {tenant.caller_key}", "A2A-Version": "1.0"},
        timeout=30.0,
    )
    assert answer.is_success, f"{answer.status_code} {answer.text}"
    assert answer.json().get("id") == config_id, answer.text


def notified_until(hook: Hook, state: str) -> list[Notification]:
    """What the hook received, once it received the `statusUpdate` to `state`."""
    return eventually(
        hook.received,
        lambda got: any(notification.state == state for notification in got),
        f"a notification of {state}",
    )


def notification_replayed(client: Forgebench, task_id: str) -> ReplayedNotification:
    """The config `hook`'s latest event replayed. Just after a notification is sent the gateway
    may still hold the config's lease (a 409 that replays nothing): tried again until
    `DEADLINE_SECONDS` pass."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        try:
            return client.agents.replay_notification(CALLEE, task_id, "hook")
        except ConflictError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# -- the requests, without a gateway -------------------------------------------------------------


def test_the_delivery_requests_name_their_routes_and_only_enable_is_repeated() -> None:
    health = requests.get_endpoint_health("invoice classifier")
    assert health.method == "GET"
    assert health.path == "/v1/agents/invoice%20classifier/endpoint/health"
    enable = requests.enable_endpoint("a")
    assert (enable.method, enable.path) == ("POST", "/v1/agents/a/endpoint/enable")
    assert enable.json is None
    assert enable.repeatable  # enabling an endpoint that is not disabled changes nothing
    since = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    redrive = requests.redrive_deliveries("a", since)
    assert (redrive.method, redrive.path) == ("POST", "/v1/agents/a/endpoint/redrive")
    assert redrive.json == {"since": "2026-12-07T09:00:00+00:00"}
    assert requests.redrive_deliveries("a", "2026-12-07T09:00:00Z").json == {
        "since": "2026-12-07T09:00:00Z"
    }
    assert not redrive.repeatable
    replay = requests.replay_delivery("a", "t/1")
    assert (replay.method, replay.path) == ("POST", "/v1/agents/a/tasks/t%2F1/replay")
    assert not replay.repeatable
    with pytest.raises(ValueError):  # a naive datetime names no moment
        requests.redrive_deliveries("a", datetime(2026, 12, 7, 9, 0))
    with pytest.raises(ValueError):
        requests.redrive_deliveries("a", "")
    with pytest.raises(TypeError):
        requests.redrive_deliveries("a", 1765098000)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        requests.replay_delivery("a", "")


def test_a_notification_replay_names_its_route_and_is_not_repeated() -> None:
    replay = requests.replay_notification("invoice classifier", "t/1", "refund hook")
    assert (replay.method, replay.json) == ("POST", None)
    assert replay.path == (
        "/v1/agents/invoice%20classifier/tasks/t%2F1/notifications/refund%20hook/replay"
    )
    assert not replay.repeatable  # a repeat would send the event once more
    for callee, task_id, config_id in (("", "t", "c"), ("a", "", "c"), ("a", "t", "")):
        with pytest.raises(ValueError):
            requests.replay_notification(callee, task_id, config_id)


# -- the sync client, on the gateway -------------------------------------------------------------


def test_a_failing_endpoint_shows_its_health_and_its_waiting_deliveries_are_replayed_and_redriven(
    tenant: Tenant, endpoint: PushEndpoint
) -> None:
    admin = tenant.admin
    admin.agents.set_endpoint(CALLEE, endpoint.url)
    fresh = admin.agents.endpoint_health(CALLEE)
    assert (fresh["url"], fresh["state"], fresh["consecutive_failures"]) == (
        endpoint.url, "active", 0,
    )
    assert fresh["success_rate"] is None, "no attempt yet"
    assert fresh["disabled"] is None
    assert fresh["disable_after"]["failures"] >= 1 and fresh["disable_after"]["seconds"] >= 0

    before_the_opens = datetime.now(UTC) - timedelta(minutes=1)
    first = a_failed_delivery(tenant, "Classify INV-1")
    failing = failing_health(admin)
    assert failing["agent_id"] == admin.agents.get(CALLEE)["id"]
    assert failing["consecutive_failures"] >= 1
    assert "503" in (failing["last_error"] or ""), failing
    assert failing["failing_since"] is not None and failing["last_failure_at"] is not None
    assert failing["attempts"]["failed"] >= 1 and failing["success_rate"] == 0
    with tenant.client(tenant.viewer_key) as viewer:  # a viewer reads it
        assert viewer.agents.endpoint_health(CALLEE)["state"] == "failing"

    # a replay attempts the waiting delivery now (the retry was ten minutes away), same id
    replayed = replayed_once_waiting(admin, first)
    assert replayed["task_id"] == first and replayed["webhook_id"]
    attempts_after(tenant, first, 2)
    assert endpoint.receiver.webhook_ids(first) == [replayed["webhook_id"]] * 2

    second = a_failed_delivery(tenant, "Classify INV-2")
    canceled = a_failed_delivery(tenant, "Classify INV-3")
    assert tenant.caller.agents.cancel(CALLEE, canceled).state == "canceled"
    with pytest.raises(ConflictError):  # a finished task has no delivery waiting
        admin.agents.replay_delivery(CALLEE, canceled)
    with pytest.raises(NotFoundError):
        admin.agents.replay_delivery(CALLEE, str(uuid.uuid4()))

    later = admin.agents.redrive_deliveries(CALLEE, datetime.now(UTC) + timedelta(hours=1))
    assert later == {"redriven": 0, "task_ids": [], "next_since": None}
    with pytest.raises(BadRequestError):
        admin.agents.redrive_deliveries(CALLEE, "yesterday")

    # the endpoint works again: a redrive delivers both waiting tasks, not the canceled one
    endpoint.receiver.failing = False
    redriven = admin.agents.redrive_deliveries(CALLEE, before_the_opens)
    assert redriven["redriven"] == len(redriven["task_ids"])
    assert set(redriven["task_ids"]) == {first, second}, redriven
    assert redriven["next_since"] is None
    assert finished_state(tenant, first) == "completed"
    assert finished_state(tenant, second) == "completed"
    assert tenant.caller.agents.task(CALLEE, second).artifact_text() == "ok"
    assert len(set(endpoint.receiver.webhook_ids(second))) == 1, "a redrive keeps the id"
    with pytest.raises(ConflictError):
        admin.agents.replay_delivery(CALLEE, first)  # completed now

    healthy = eventually(
        lambda: admin.agents.endpoint_health(CALLEE),
        lambda health: health["state"] == "active" and health["attempts"]["ok"] >= 1,
        "the endpoint's health to count its success",
    )
    assert healthy["consecutive_failures"] == 0 and healthy["failing_since"] is None
    assert healthy["last_success_at"] is not None
    assert healthy["success_rate"] is not None and 0 < healthy["success_rate"] < 1


def test_only_an_admin_enables_an_endpoint_and_a_pull_task_or_agent_has_no_delivery(
    tenant: Tenant, endpoint: PushEndpoint
) -> None:
    admin = tenant.admin
    # opened while the callee was pulled: the task keeps that delivery mode
    pulled = tenant.caller.agents.call(CALLEE, text="Read the ledger")
    admin.agents.set_endpoint(CALLEE, endpoint.url)
    a_failed_delivery(tenant, "Classify INV-4")
    with pytest.raises(ConflictError):  # a pull task has no delivery to replay
        admin.agents.replay_delivery(CALLEE, pulled.id)

    enabled = admin.agents.enable_endpoint(CALLEE)
    assert enabled["state"] != "disabled" and enabled["disabled"] is None
    assert enabled["url"] == endpoint.url
    agent_endpoint = admin.agents.get(CALLEE).get("endpoint")
    assert agent_endpoint is not None and agent_endpoint.get("disabled") is None
    enabling = [e["action"] for e in admin.audit.iter(action="agent.endpoint")]
    assert "agent.endpoint.enable" not in enabling, "nothing was disabled: nothing is audited"
    for key in (tenant.member_key, tenant.viewer_key):
        with tenant.client(key) as person, pytest.raises(PermissionDeniedError):
            person.agents.enable_endpoint(CALLEE)

    with pytest.raises(NotFoundError):
        admin.agents.endpoint_health(PULL_AGENT)
    with pytest.raises(NotFoundError):
        admin.agents.enable_endpoint(PULL_AGENT)


def test_a_notification_config_is_sent_its_latest_event_again_under_the_same_webhook_id(
    tenant: Tenant, hook: Hook
) -> None:
    task = tenant.caller.agents.call(CALLEE, text="Refund INV-7")  # the callee pulls it
    create_notification_config(tenant, task.id, "hook", hook.url)
    with pytest.raises(ConflictError):  # the config has received no event yet
        tenant.caller.agents.replay_notification(CALLEE, task.id, "hook")
    assert hook.received() == []

    # the callee claims the task and completes it: the config is notified of each change
    callee_key = tenant.admin.agents.issue_key(CALLEE).key
    with httpx.Client(
        base_url=tenant.base_url, headers={"Authorization": f"Bearer {callee_key}"}, timeout=30.0
    ) as callee:
        claimed = callee.get("/v1/agents/me/tasks/next", params={"wait": 5})
        assert claimed.status_code == 200 and claimed.json()["id"] == task.id, claimed.text
        answered = callee.post(f"/v1/agents/me/tasks/{task.id}/result", json=COMPLETED)
        assert answered.status_code == 200, answered.text
    sent = notified_until(hook, "TASK_STATE_COMPLETED")
    last = sent[-1]
    assert last.state == "TASK_STATE_COMPLETED", "the final state is the latest event"
    assert len({notification.webhook_id for notification in sent}) == len(sent)

    replayed = notification_replayed(tenant.caller, task.id)
    assert replayed["webhook_id"] == last.webhook_id
    assert (replayed["task_id"], replayed["config_id"]) == (task.id, "hook")
    assert replayed["event"] >= len(sent)
    assert replayed["webhook_id"] == f"{task.id}:hook:{replayed['event']}"
    again = eventually(hook.received, lambda got: len(got) > len(sent), "the replayed event")
    assert (again[len(sent)].webhook_id, again[len(sent)].body) == (last.webhook_id, last.body)

    with pytest.raises(NotFoundError):  # a config the task does not have
        tenant.caller.agents.replay_notification(CALLEE, task.id, "no-such-hook")
    with tenant.client(callee_key) as callee_client, pytest.raises(PermissionDeniedError):
        callee_client.agents.replay_notification(CALLEE, task.id, "hook")  # it reads the task
    with pytest.raises(NotFoundError):
        tenant.caller.agents.replay_notification(CALLEE, str(uuid.uuid4()), "hook")
    assert len(hook.received()) == len(sent) + 1, "the event once more, and nothing else"


# -- the async client ----------------------------------------------------------------------------


def test_the_async_client_reads_health_replays_redrives_and_enables(
    gateway: tuple[str, str], endpoint: PushEndpoint
) -> None:
    tenant = new_tenant(*gateway)
    tenant.admin.agents.set_endpoint(CALLEE, endpoint.url)
    since = datetime.now(UTC) - timedelta(minutes=1)
    task_id = a_failed_delivery(tenant, "Classify INV-5")
    failing_health(tenant.admin)  # failing from now on, until a success

    async def replay(admin: AsyncForgebench) -> Replayed:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:  # as `replayed_once_waiting`, awaited
            try:
                return await admin.agents.replay_delivery(CALLEE, task_id)
            except ConflictError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def redrive(admin: AsyncForgebench) -> Redriven:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:  # an empty redrive replays nothing: the replay's attempt may still hold on
            redriven = await admin.agents.redrive_deliveries(CALLEE, since)
            if redriven["task_ids"] or time.monotonic() > deadline:
                return redriven
            await asyncio.sleep(0.2)

    async def run() -> tuple[EndpointHealth, EndpointHealth]:
        async with AsyncForgebench(api_key=tenant.admin_key, base_url=tenant.base_url) as admin:
            health = await admin.agents.endpoint_health(CALLEE)
            assert (await replay(admin))["task_id"] == task_id
            await asyncio.to_thread(attempts_after, tenant, task_id, 2)
            redriven = await redrive(admin)
            assert redriven["task_ids"] == [task_id] and redriven["redriven"] == 1
            with pytest.raises(NotFoundError):
                await admin.agents.endpoint_health(PULL_AGENT)
            return health, await admin.agents.enable_endpoint(CALLEE)

    health, enabled = asyncio.run(run())
    assert health["state"] == "failing" and "503" in (health["last_error"] or "")
    assert enabled["state"] != "disabled" and enabled["disabled"] is None
    attempts_after(tenant, task_id, 3)  # the redrive's attempt
    assert len(set(endpoint.receiver.webhook_ids(task_id))) == 1
    tenant.admin.close()
    tenant.caller.close()


def test_the_async_client_replays_a_notification_an_admin_too(
    gateway: tuple[str, str], hook: Hook
) -> None:
    tenant = new_tenant(*gateway)
    task = tenant.caller.agents.call(CALLEE, text="Refund INV-8")
    create_notification_config(tenant, task.id, "hook", hook.url)
    callee_key = tenant.admin.agents.issue_key(CALLEE).key

    async def before_any_event() -> None:
        async with AsyncForgebench(api_key=tenant.caller_key, base_url=tenant.base_url) as caller:
            with pytest.raises(ConflictError):
                await caller.agents.replay_notification(CALLEE, task.id, "hook")

    asyncio.run(before_any_event())
    assert tenant.caller.agents.cancel(CALLEE, task.id).state == "canceled"
    sent = notified_until(hook, "TASK_STATE_CANCELED")

    async def replay() -> ReplayedNotification:
        async with AsyncForgebench(api_key=tenant.admin_key, base_url=tenant.base_url) as admin:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while True:  # as `notification_replayed`, awaited
                try:
                    return await admin.agents.replay_notification(CALLEE, task.id, "hook")
                except ConflictError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)

    async def refused() -> None:
        async with AsyncForgebench(api_key=callee_key, base_url=tenant.base_url) as callee:
            with pytest.raises(PermissionDeniedError):
                await callee.agents.replay_notification(CALLEE, task.id, "hook")
        async with AsyncForgebench(api_key=tenant.caller_key, base_url=tenant.base_url) as caller:
            with pytest.raises(NotFoundError):
                await caller.agents.replay_notification(CALLEE, task.id, "another-hook")

    replayed = asyncio.run(replay())
    assert replayed["webhook_id"] == sent[-1].webhook_id
    assert (replayed["task_id"], replayed["config_id"]) == (task.id, "hook")
    again = eventually(hook.received, lambda got: len(got) > len(sent), "the replayed event")
    assert again[len(sent)].webhook_id == sent[-1].webhook_id
    assert again[len(sent)].state == "TASK_STATE_CANCELED"
    asyncio.run(refused())
    tenant.admin.close()
    tenant.caller.close()
