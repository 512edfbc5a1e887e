"""`forgebench.webhooks`: verifying signed push deliveries and A2A push notifications.

The unit tests sign deliveries and notifications with a key made here, and check the
notifications the gateway's own tests wrote (sdk/testdata/notifications.json); the last tests
receive a real delivery and real notifications from the gateway on a local endpoint and verify
them with the JWKS the gateway serves.
"""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from gateway import CALLEE_NAME, Pair, PlainAgent

from forgebench import AuthenticationError, ForgebenchError
from forgebench.webhooks import (
    DEFAULT_TOLERANCE_SECONDS,
    ReplayCache,
    WebhookVerificationError,
    fetch_jwks,
    fetch_jwks_async,
    notification_destination,
    verify_delivery,
    verify_notification,
)

URL = "https://receiver.example/a2a"
AGENT_ID = "706608c0-4160-452a-86ac-ded1186326ac"
NOW = 1_760_000_000


def jwk(
    key: Ed25519PrivateKey, purpose: str = "webhook-signing", kid: str = "k1"
) -> dict[str, Any]:
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig",
            "purpose": purpose}


def delivery_body(url: str = URL, agent_id: str = AGENT_ID) -> bytes:
    body = {
        "task_id": "task-1",
        "call_id": "call-1",
        "message": {"role": "user", "parts": [{"text": "Classify"}]},
        "destination": {"tenant_id": "tenant-1", "agent_id": agent_id, "url": url},
    }
    return json.dumps(body).encode()


def sign(key: Ed25519PrivateKey, webhook_id: str, timestamp: int, body: bytes) -> str:
    signature = key.sign(f"{webhook_id}.{timestamp}.".encode() + body)
    return "v1a," + base64.b64encode(signature).decode()


@dataclass
class Signed:
    """A delivery signed by `key`, and a JWKS publishing `key` for webhook signing."""

    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    webhook_id: str = "msg_delivery-1"
    timestamp: int = NOW
    body: bytes = field(default_factory=delivery_body)

    def headers(self, **overrides: str | None) -> dict[str, str]:
        headers: dict[str, str | None] = {
            "Webhook-Id": self.webhook_id,
            "Webhook-Timestamp": str(self.timestamp),
            "Webhook-Signature": sign(self.key, self.webhook_id, self.timestamp, self.body),
            "Content-Type": "application/json",
        }
        headers.update({name.replace("_", "-").title(): v for name, v in overrides.items()})
        return {name: value for name, value in headers.items() if value is not None}

    def jwks(self) -> dict[str, Any]:
        card_key = Ed25519PrivateKey.generate()
        return {"keys": [jwk(card_key, "card-signing", "card"), jwk(self.key)]}


def rejected(signed: Signed, **arguments: Any) -> WebhookVerificationError:
    """The error `verify_delivery` raises for `signed` with the given changes."""
    call: dict[str, Any] = {
        "headers": signed.headers(),
        "body": signed.body,
        "jwks": signed.jwks(),
        "url": URL,
        "agent_id": AGENT_ID,
        "now": NOW,
        **arguments,
    }
    with pytest.raises(WebhookVerificationError) as caught:
        verify_delivery(call.pop("headers"), call.pop("body"), call.pop("jwks"), **call)
    return caught.value


def test_a_signed_delivery_for_this_endpoint_verifies_and_is_returned_parsed() -> None:
    signed = Signed()
    delivery = verify_delivery(signed.headers(), signed.body, signed.jwks(), url=URL,
                               agent_id=AGENT_ID, now=NOW)
    assert delivery["task_id"] == "task-1"
    assert delivery["destination"]["url"] == URL


def test_headers_match_whatever_their_case_and_container() -> None:
    signed = Signed()
    lower = {name.lower(): value for name, value in signed.headers().items()}
    upper = [(name.upper(), value) for name, value in signed.headers().items()]
    for headers in (lower, upper, httpx.Headers(signed.headers())):
        assert verify_delivery(headers, signed.body.decode(), signed.jwks(), url=URL,
                               agent_id=AGENT_ID, now=NOW)["call_id"] == "call-1"


def test_other_signature_entries_are_ignored_and_any_v1a_entry_may_verify() -> None:
    signed = Signed()
    other = sign(Ed25519PrivateKey.generate(), signed.webhook_id, NOW, signed.body)
    value = f"v1,c2VjcmV0 {other} v1a,not*base64 {signed.headers()['Webhook-Signature']}"
    headers = signed.headers(webhook_signature=value)
    assert verify_delivery(headers, signed.body, signed.jwks(), url=URL, agent_id=AGENT_ID,
                           now=NOW)


def test_a_tampered_body_fails_the_signature_check() -> None:
    signed = Signed()
    error = rejected(signed, body=signed.body.replace(b"Classify", b"Delete everything"))
    assert error.reason == "signature"


def test_a_changed_id_or_timestamp_fails_the_signature_check() -> None:
    signed = Signed()
    assert rejected(signed, headers=signed.headers(webhook_id="msg_other")).reason == "signature"
    moved = signed.headers(webhook_timestamp=str(NOW + 1))
    assert rejected(signed, headers=moved).reason == "signature"


def test_an_old_or_future_timestamp_fails_the_timestamp_check_before_the_signature() -> None:
    old = Signed(timestamp=NOW - DEFAULT_TOLERANCE_SECONDS - 1)
    error = rejected(old, headers=old.headers())
    assert error.reason == "timestamp"
    assert "tolerance" in str(error)
    ahead = Signed(timestamp=NOW + DEFAULT_TOLERANCE_SECONDS + 1)
    assert rejected(ahead, headers=ahead.headers()).reason == "timestamp"
    # just inside the tolerance, and a tolerance of one's own
    edge = Signed(timestamp=NOW - DEFAULT_TOLERANCE_SECONDS)
    assert verify_delivery(edge.headers(), edge.body, edge.jwks(), url=URL, agent_id=AGENT_ID,
                           now=NOW)
    assert rejected(edge, headers=edge.headers(), tolerance=60).reason == "timestamp"
    # a tampered body with a stale timestamp says timestamp: that check comes first
    assert rejected(old, headers=old.headers(), body=b"{}").reason == "timestamp"


def test_the_clock_is_the_default_now() -> None:
    signed = Signed(timestamp=int(time.time()))
    assert verify_delivery(signed.headers(), signed.body, signed.jwks(), url=URL,
                           agent_id=AGENT_ID)
    stale = Signed(key=signed.key, timestamp=int(time.time()) - DEFAULT_TOLERANCE_SECONDS - 60)
    with pytest.raises(WebhookVerificationError) as caught:
        verify_delivery(stale.headers(), stale.body, stale.jwks(), url=URL, agent_id=AGENT_ID)
    assert caught.value.reason == "timestamp"


def test_a_timestamp_that_is_not_unix_seconds_fails_the_timestamp_check() -> None:
    signed = Signed()
    for value in ("", "17e8", "-1760000000", "1760000000.5", "soon", "１７６"):
        assert rejected(signed, headers=signed.headers(webhook_timestamp=value)).reason == (
            "timestamp"
        ), value


def test_a_key_of_another_purpose_does_not_verify() -> None:
    signed = Signed()
    jwks = {"keys": [jwk(signed.key, "card-signing")]}
    error = rejected(signed, jwks=jwks)
    assert error.reason == "signature"
    assert rejected(signed, jwks={"keys": [{**jwk(signed.key), "purpose": None}]}).reason == (
        "signature"
    )


def test_a_signature_of_another_key_does_not_verify() -> None:
    signed = Signed()
    impostor = Signed(key=Ed25519PrivateKey.generate())
    assert rejected(signed, headers=impostor.headers()).reason == "signature"


def test_another_destination_url_or_agent_fails_the_destination_check() -> None:
    signed = Signed()
    error = rejected(signed, url="https://receiver.example/other")
    assert error.reason == "destination"
    assert "url" in str(error)
    error = rejected(signed, agent_id=str(uuid.uuid4()))
    assert error.reason == "destination"
    assert "agent_id" in str(error)
    elsewhere = Signed(body=delivery_body(url="https://elsewhere.example/a2a"))
    assert rejected(elsewhere, headers=elsewhere.headers(), body=elsewhere.body).reason == (
        "destination"
    )
    nowhere = Signed(body=b'{"task_id": "t"}')
    assert rejected(nowhere, headers=nowhere.headers(), body=nowhere.body).reason == (
        "destination"
    )


def test_missing_headers_fail_the_check_they_belong_to() -> None:
    signed = Signed()
    assert rejected(signed, headers=signed.headers(webhook_timestamp=None)).reason == "timestamp"
    assert rejected(signed, headers=signed.headers(webhook_id=None)).reason == "signature"
    assert rejected(signed, headers=signed.headers(webhook_signature=None)).reason == "signature"
    assert rejected(signed, headers={}).reason == "timestamp"
    only_v1 = signed.headers(webhook_signature="v1,c2VjcmV0")
    assert rejected(signed, headers=only_v1).reason == "signature"
    assert rejected(signed, jwks={"keys": []}).reason == "signature"


def test_errors_never_echo_the_signature_the_body_or_the_urls() -> None:
    signed = Signed()
    failures = [
        rejected(signed, body=signed.body + b" "),
        rejected(signed, url="https://secret-token@other.example/a2a?token=hunter2"),
        rejected(signed, agent_id="someone-else"),
    ]
    signature = signed.headers()["Webhook-Signature"]
    for error in failures:
        message = str(error)
        for secret in (signature[4:], "Classify", URL, "hunter2", "someone-else"):
            assert secret not in message
        assert isinstance(error, ForgebenchError)


def test_a_replay_cache_drops_an_id_already_accepted_and_only_after_every_check() -> None:
    signed = Signed()
    cache = ReplayCache()
    arguments: dict[str, Any] = {"url": URL, "agent_id": AGENT_ID, "now": NOW,
                                 "replay_cache": cache}
    # a forged body under the genuine id is refused by the signature and not remembered
    with pytest.raises(WebhookVerificationError):
        verify_delivery(signed.headers(), b"{}", signed.jwks(), **arguments)
    assert len(cache) == 0
    assert verify_delivery(signed.headers(), signed.body, signed.jwks(), **arguments)
    assert rejected(signed, replay_cache=cache).reason == "replay"
    # another delivery (a new id) passes; ids leave the cache once out of the tolerance
    other = Signed(key=signed.key, webhook_id="msg_delivery-2")
    assert verify_delivery(other.headers(), other.body, other.jwks(), **arguments)
    assert cache.remember("msg_delivery-3", NOW, now=NOW + DEFAULT_TOLERANCE_SECONDS + 1)
    assert len(cache) == 1


# -- verify_notification ---------------------------------------------------------------------

HOOK_URL = "https://receiver.example/hooks/a2a?team=7"
CONFIG_ID = "hook-1"
TASK_ID = "task-1"
VECTORS = Path(__file__).resolve().parents[2] / "testdata" / "notifications.json"


def notification_body(
    url: str = HOOK_URL, config_id: str = CONFIG_ID, task_id: str = TASK_ID
) -> bytes:
    destination = {"tenant_id": "tenant-1", "task_id": task_id, "config_id": config_id,
                   "url": url}
    update = {
        "taskId": task_id,
        "contextId": "context-1",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-01T10:00:02.000000Z",
                   "message": {"role": "ROLE_AGENT", "parts": [{"text": "half way"}]}},
        "metadata": {"forgebench": {"destination": destination}},
    }
    return json.dumps({"statusUpdate": update}).encode()


def signed_notification(**changes: Any) -> Signed:
    return Signed(webhook_id=f"{TASK_ID}:{CONFIG_ID}:1", body=notification_body(**changes))


def notification_refused(signed: Signed, **arguments: Any) -> WebhookVerificationError:
    """The error `verify_notification` raises for `signed` with the given changes."""
    call: dict[str, Any] = {
        "headers": signed.headers(),
        "body": signed.body,
        "jwks": signed.jwks(),
        "url": HOOK_URL,
        "now": NOW,
        **arguments,
    }
    with pytest.raises(WebhookVerificationError) as caught:
        verify_notification(call.pop("headers"), call.pop("body"), call.pop("jwks"), **call)
    return caught.value


def test_a_notification_signed_for_this_receiver_verifies_and_is_returned_parsed() -> None:
    signed = signed_notification()
    for config_id, task_id in ((None, None), (CONFIG_ID, None), (None, TASK_ID),
                               (CONFIG_ID, TASK_ID)):
        event = verify_notification(signed.headers(), signed.body, signed.jwks(), url=HOOK_URL,
                                    config_id=config_id, task_id=task_id, now=NOW)
        assert event["statusUpdate"]["taskId"] == TASK_ID
        destination = notification_destination(event)
        assert destination is not None
        assert destination["url"] == HOOK_URL and destination["config_id"] == CONFIG_ID


def test_a_notification_signed_for_another_receiver_is_refused() -> None:
    elsewhere = signed_notification(url="https://elsewhere.example/hooks/a2a?team=7")
    error = notification_refused(elsewhere)
    assert error.reason == "destination"
    assert "url" in str(error)
    # the URL as saved, exactly: no normalization either way
    signed = signed_notification()
    for url in ("https://receiver.example/hooks/a2a", "https://RECEIVER.example/hooks/a2a?team=7",
                HOOK_URL + "/"):
        assert notification_refused(signed, url=url).reason == "destination", url


def test_another_config_or_task_fails_the_destination_check() -> None:
    signed = signed_notification()
    error = notification_refused(signed, config_id="hook-2")
    assert (error.reason, "config_id" in str(error)) == ("destination", True)
    error = notification_refused(signed, task_id="task-2")
    assert (error.reason, "task_id" in str(error)) == ("destination", True)


def test_a_tampered_notification_fails_the_signature_check() -> None:
    signed = signed_notification()
    tampered = signed.body.replace(b"half way", b"all done")
    assert notification_refused(signed, body=tampered).reason == "signature"
    # moving the destination to this receiver breaks the signature too
    moved = signed_notification(url="https://elsewhere.example/x")
    assert notification_refused(signed, headers=moved.headers()).reason == "signature"


def test_an_old_notification_fails_the_timestamp_check() -> None:
    old = Signed(webhook_id="task-1:hook-1:1", body=notification_body(),
                 timestamp=NOW - DEFAULT_TOLERANCE_SECONDS - 1)
    error = notification_refused(old, headers=old.headers())
    assert error.reason == "timestamp"
    assert "tolerance" in str(error)
    # checked before the signature, and with the tolerance given
    assert notification_refused(old, headers=old.headers(), body=b"{}").reason == "timestamp"
    assert verify_notification(old.headers(), old.body, old.jwks(), url=HOOK_URL, now=NOW,
                               tolerance=DEFAULT_TOLERANCE_SECONDS + 1)


def test_a_body_naming_no_notification_destination_fails_the_destination_check() -> None:
    for body in (delivery_body(), b'{"statusUpdate": {"taskId": "t"}}',
                 b'{"statusUpdate": {"metadata": {"forgebench": {}}}}', b"[]", b"not json"):
        signed = Signed(body=body)
        error = notification_refused(signed, headers=signed.headers(), body=body)
        assert error.reason == "destination", body
    # and a notification is no delivery: it names no delivery destination
    notification = signed_notification()
    assert rejected(notification, headers=notification.headers(),
                    body=notification.body).reason == "destination"


def test_a_replay_cache_drops_a_notification_already_accepted() -> None:
    signed = signed_notification()
    cache = ReplayCache()
    assert verify_notification(signed.headers(), signed.body, signed.jwks(), url=HOOK_URL,
                               now=NOW, replay_cache=cache)
    assert notification_refused(signed, replay_cache=cache).reason == "replay"


def test_notification_errors_never_echo_the_body_or_the_urls() -> None:
    signed = signed_notification()
    for error in (notification_refused(signed, url="https://other.example/?token=hunter2"),
                  notification_refused(signed, body=signed.body + b" "),
                  notification_refused(signed, config_id="secret-config")):
        for secret in ("hunter2", HOOK_URL, "half way", "secret-config"):
            assert secret not in str(error)


def vectors() -> dict[str, Any]:
    """The notifications the gateway's tests built and signed (shared/src/push/signature.rs)."""
    loaded: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return loaded


def test_the_gateways_own_notifications_verify() -> None:
    vector = vectors()
    assert len(vector["notifications"]) >= 2
    kinds: set[str] = set()
    for notification in vector["notifications"]:
        headers, body = notification["headers"], notification["body"]
        now = int(headers["webhook-timestamp"])
        event = verify_notification(headers, body, vector["jwks"], url=vector["url"],
                                    config_id=vector["config_id"], task_id=vector["task_id"],
                                    now=now)
        kinds.update(event)
        assert notification_destination(event) == {
            "tenant_id": vector["tenant_id"], "task_id": vector["task_id"],
            "config_id": vector["config_id"], "url": vector["url"]}

        def refusal(**changes: Any) -> str:
            arguments: dict[str, Any] = {"url": vector["url"], "now": now, **changes}
            raw = arguments.pop("body", body)
            with pytest.raises(WebhookVerificationError) as caught:
                verify_notification(headers, raw, vector["jwks"], **arguments)
            return caught.value.reason

        assert refusal(url="https://receiver.example/hooks/a2a") == "destination"
        assert refusal(config_id="another-hook") == "destination"
        assert refusal(body=body.replace(vector["url"], "https://elsewhere.example/")) == (
            "signature"
        )
        assert refusal(now=now + DEFAULT_TOLERANCE_SECONDS + 1) == "timestamp"
    assert kinds == {"statusUpdate", "artifactUpdate"}


# -- fetch_jwks, against a canned server -----------------------------------------------------


class _Jwks(BaseHTTPRequestHandler):
    status = 200
    seen_authorization: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).seen_authorization.append(self.headers.get("Authorization", ""))
        assert self.path == "/v1/billing/export/pubkey"
        body = json.dumps({"keys": []} if self.status == 200 else {"detail": "no"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def jwks_server() -> Iterator[tuple[str, type[_Jwks]]]:
    handler = type("Handler", (_Jwks,), {"seen_authorization": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", handler
    server.shutdown()
    server.server_close()


def test_fetch_jwks_reads_the_route_with_the_key(jwks_server: tuple[str, type[_Jwks]]) -> None:
    url, handler = jwks_server
    assert fetch_jwks(url, "fb_test_key") == {"keys": []}
    assert asyncio.run(fetch_jwks_async(url, "fb_test_key")) == {"keys": []}
    assert handler.seen_authorization == ["Bearer fb_test_key", "Bearer fb_test_key"]
    handler.status = 401
    with pytest.raises(AuthenticationError):
        fetch_jwks(url, "fb_test_key")


# -- a real delivery from the gateway --------------------------------------------------------


@dataclass
class ReceivedRequest:
    headers: list[tuple[str, str]]
    body: bytes


class _Endpoint(BaseHTTPRequestHandler):
    received: queue.Queue[ReceivedRequest]

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        type(self).received.put(ReceivedRequest(list(self.headers.items()), body))
        answer = json.dumps({"state": "completed", "artifacts": [
            {"name": "response", "parts": [{"text": "received"}]}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_real_delivery_verifies_with_the_gateways_jwks(pair: Pair) -> None:
    received: queue.Queue[ReceivedRequest] = queue.Queue()
    handler = type("Endpoint", (_Endpoint,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/a2a"
        saved = pair.admin.ok("PUT", f"/v1/agents/{CALLEE_NAME}/endpoint", json={"url": endpoint})
        assert saved["endpoint"]["url"] == endpoint
        task = pair.caller.open(CALLEE_NAME, {"parts": [{"text": "Classify"}]}, wait=20)
        assert task["status"]["state"] == "completed", task["status"]
        delivery_request = received.get(timeout=5)
    finally:
        server.shutdown()
        server.server_close()

    # any key of the tenant reads the JWKS: here the callee's own
    jwks = fetch_jwks(pair.base_url, pair.callee_key)
    assert {key["purpose"] for key in jwks["keys"]} >= {"webhook-signing"}
    cache = ReplayCache()
    delivery = verify_delivery(delivery_request.headers, delivery_request.body, jwks,
                               url=endpoint, agent_id=pair.callee_id, replay_cache=cache)
    assert delivery["task_id"] == task["id"]
    assert delivery["destination"]["agent_id"] == pair.callee_id

    def refusal(**changes: Any) -> str:
        arguments: dict[str, Any] = {"url": endpoint, "agent_id": pair.callee_id, **changes}
        body = arguments.pop("body", delivery_request.body)
        with pytest.raises(WebhookVerificationError) as caught:
            verify_delivery(delivery_request.headers, body, jwks, **arguments)
        return caught.value.reason

    assert refusal(replay_cache=cache) == "replay"
    assert refusal(url=endpoint.replace("/a2a", "/other")) == "destination"
    assert refusal(agent_id=pair.caller_id) == "destination"
    assert refusal(body=delivery_request.body.replace(b"Classify", b"Classifx")) == "signature"
    assert refusal(now=time.time() + DEFAULT_TOLERANCE_SECONDS + 5) == "timestamp"
    # the card-signing keys of the same set never verify a delivery
    card_only = {"keys": [key for key in jwks["keys"] if key["purpose"] != "webhook-signing"]}
    with pytest.raises(WebhookVerificationError) as caught:
        verify_delivery(delivery_request.headers, delivery_request.body, card_only,
                        url=endpoint, agent_id=pair.callee_id)
    assert caught.value.reason == "signature"


# -- real notifications from the gateway -----------------------------------------------------


def a2a_rpc(agent: PlainAgent, callee_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of an A2A JSON-RPC call on the callee's interface, sent with `agent`'s key."""
    answer = agent.ok(
        "POST",
        f"/v1/agents/{callee_id}/a2a/jsonrpc",
        headers={"A2A-Version": "1.0"},
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
    )
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def notifications_until_final(received: queue.Queue[ReceivedRequest]) -> list[ReceivedRequest]:
    """The notifications received up to the one of the task's final state."""
    posts: list[ReceivedRequest] = []
    while True:
        post = received.get(timeout=15)
        posts.append(post)
        state = json.loads(post.body).get("statusUpdate", {}).get("status", {}).get("state")
        if state == "TASK_STATE_COMPLETED":
            return posts


def test_real_notifications_verify_with_the_gateways_jwks(pair: Pair) -> None:
    received: queue.Queue[ReceivedRequest] = queue.Queue()
    handler = type("Receiver", (_Endpoint,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        hook = f"http://127.0.0.1:{server.server_address[1]}/hooks/a2a?team=7"
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                   "parts": [{"text": "Classify"}]}
        configuration = {"returnImmediately": True,
                         "taskPushNotificationConfig": {"id": "hook", "url": hook}}
        sent = a2a_rpc(pair.caller, pair.callee_id, "SendMessage",
                       {"message": message, "configuration": configuration})
        task_id = sent["task"]["id"]
        assert pair.callee.claim_within(10)["id"] == task_id
        pair.callee.complete_with_text(task_id, "received")
        posts = notifications_until_final(received)
    finally:
        server.shutdown()
        server.server_close()

    # any key of the tenant reads the JWKS: here the caller's own, who made the config
    jwks = fetch_jwks(pair.base_url, pair.caller_key)
    cache = ReplayCache()
    kinds = []
    for post in posts:
        event = verify_notification(post.headers, post.body, jwks, url=hook, config_id="hook",
                                    task_id=task_id, replay_cache=cache)
        kinds.append(next(iter(event)))
        destination = notification_destination(event)
        assert destination is not None
        assert (destination["url"], destination["config_id"], destination["task_id"]) == (
            hook, "hook", task_id)
    assert kinds == ["statusUpdate", "artifactUpdate", "statusUpdate"]

    first = posts[0]

    def refusal(**changes: Any) -> str:
        arguments: dict[str, Any] = {"url": hook, **changes}
        body = arguments.pop("body", first.body)
        with pytest.raises(WebhookVerificationError) as caught:
            verify_notification(first.headers, body, jwks, **arguments)
        return caught.value.reason

    assert refusal(replay_cache=cache) == "replay"
    assert refusal(url=hook.replace("?team=7", "")) == "destination"
    assert refusal(config_id="another-hook") == "destination"
    assert refusal(task_id=str(uuid.uuid4())) == "destination"
    assert refusal(body=first.body.replace(b"/hooks/a2a", b"/elsewhere")) == "signature"
    assert refusal(now=time.time() + DEFAULT_TOLERANCE_SECONDS + 5) == "timestamp"
