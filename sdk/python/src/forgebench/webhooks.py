"""Verifying the gateway's signed POSTs: push deliveries on a callee's endpoint, and A2A push
notifications on a caller's webhook.

Every POST the gateway pushes carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
`webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
one of the `webhook-signing` keys of the JWKS at `GET /v1/billing/export/pubkey`. One key signs
for every tenant, so the destination the body names is what binds a POST to one receiver.
`verify_delivery` makes the checks docs/api.md ("Signed deliveries") prescribes, in its order:
the timestamp, the signature, the destination (`destination`); and, given a `ReplayCache`,
drops a `webhook-id` already handled. `verify_notification` makes the same checks on an A2A
push notification, whose body (an A2A `StreamResponse`) names its destination in the update's
`metadata` (docs/a2a.md, "Push notifications").

    jwks = fetch_jwks("https://gateway.example", api_key)  # once, then again on a failure
    delivery = verify_delivery(request.headers, raw_body, jwks,
                               url="https://me.example/a2a", agent_id=my_agent_id)
    event = verify_notification(request.headers, raw_body, jwks,
                                url="https://me.example/hooks/a2a", config_id="hook-1")
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import httpx
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._errors import ForgebenchError
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, AsyncTransport, SyncTransport
from ._requests import Request

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "DeliveryHeaders",
    "JWKS_PATH",
    "NOTIFICATION_METADATA_KEY",
    "WEBHOOK_SIGNING_PURPOSE",
    "ReplayCache",
    "SupportsHeaderItems",
    "WebhookCheck",
    "WebhookVerificationError",
    "fetch_jwks",
    "fetch_jwks_async",
    "notification_destination",
    "verify_delivery",
    "verify_notification",
]

DEFAULT_TOLERANCE_SECONDS = 300
"""How far a delivery's `webhook-timestamp` may be from the receiver's clock, either way."""

WEBHOOK_SIGNING_PURPOSE = "webhook-signing"
"""The `purpose` of the JWKS keys that sign deliveries (`card-signing` keys never do)."""

JWKS_PATH = "/v1/billing/export/pubkey"
"""The gateway's JWKS route (any key of the tenant reads it)."""

WebhookCheck = Literal["timestamp", "signature", "destination", "replay"]
"""The check a delivery or a notification failed."""

NOTIFICATION_METADATA_KEY = "forgebench"
"""The member of a notification's update `metadata` that holds `destination`."""

_NOTIFICATION_UPDATES = ("statusUpdate", "artifactUpdate")

_SIGNATURE_PREFIX = "v1a,"


@runtime_checkable
class SupportsHeaderItems(Protocol):
    """Anything with `items()` of (name, value): a dict, `httpx.Headers`, an `http.server`
    request's `headers`, Starlette's or Werkzeug's headers."""

    def items(self) -> Iterable[tuple[str, Any]]: ...


DeliveryHeaders: TypeAlias = SupportsHeaderItems | Iterable[tuple[str, str]]
"""A request's headers: a mapping-like object, or (name, value) pairs."""


class WebhookVerificationError(ForgebenchError):
    """A delivery or a notification failed a check; `reason` says which one.

    The message names what was wrong, never a header's value, the body, or the URLs compared.
    """

    def __init__(self, reason: WebhookCheck, message: str) -> None:
        self.reason: WebhookCheck = reason
        super().__init__(f"{reason} check failed: {message}")


class ReplayCache:
    """The `webhook-id`s already accepted, each kept until its timestamp leaves the tolerance.

    A delivery older than the tolerance is refused by the timestamp check anyway, so the cache
    never holds more than the ids of one tolerance window. In memory and thread-safe; one per
    receiving process (a receiver with several processes needs a shared store instead).
    """

    def __init__(self, tolerance: int = DEFAULT_TOLERANCE_SECONDS) -> None:
        self._tolerance = tolerance
        self._expiry: dict[str, float] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._expiry)

    def remember(self, webhook_id: str, timestamp: int, *, now: float | None = None) -> bool:
        """Record `webhook_id`; True the first time, False when it is already held."""
        current = time.time() if now is None else now
        with self._lock:
            for held, expiry in list(self._expiry.items()):
                if expiry < current:
                    del self._expiry[held]
            if webhook_id in self._expiry:
                return False
            self._expiry[webhook_id] = timestamp + self._tolerance
            return True

    def forget(self, webhook_id: str) -> None:
        """Drop `webhook_id`, so that the delivery is accepted again: for a delivery that was
        not handled after all (the push app forgets one whose handler raised, since the
        gateway's retry carries the same id)."""
        with self._lock:
            self._expiry.pop(webhook_id.strip(), None)


def verify_delivery(
    headers: DeliveryHeaders,
    body: bytes | str,
    jwks: Mapping[str, Any],
    *,
    url: str,
    agent_id: str,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
    replay_cache: ReplayCache | None = None,
) -> dict[str, Any]:
    """The delivery (the parsed body) when the gateway signed it for this endpoint.

    `headers` are the request's headers, matched case-insensitively (a dict, an
    `httpx.Headers`, a Starlette/Werkzeug header object, or `(name, value)` pairs); `body` is
    the raw request body, exactly as received. `url` is this endpoint's URL as saved on the
    agent (`PUT /v1/agents/{agent}/endpoint`) and `agent_id` this agent's id. `now` is the Unix
    time to check against (the clock by default). With a `replay_cache`, a `webhook-id` it
    already accepted is refused (reason `replay`) after every other check passed.

    Raises `WebhookVerificationError` whose `reason` is the first check that failed:
    `timestamp`, `signature`, `destination` (or `replay`).
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    current = time.time() if now is None else now
    webhook_id, timestamp = _signed_by_the_gateway(headers, raw, jwks, tolerance, current)

    delivery = _json_of(raw)
    destination = delivery.get("destination") if isinstance(delivery, dict) else None
    if not isinstance(destination, dict):
        raise WebhookVerificationError("destination", "the body names no destination")
    if destination.get("url") != url:
        raise WebhookVerificationError("destination", "destination.url is not this endpoint")
    if destination.get("agent_id") != agent_id:
        raise WebhookVerificationError("destination", "destination.agent_id is not this agent")

    _not_replayed(replay_cache, webhook_id, timestamp, current)
    result: dict[str, Any] = delivery
    return result


def verify_notification(
    headers: DeliveryHeaders,
    body: bytes | str,
    jwks: Mapping[str, Any],
    *,
    url: str,
    config_id: str | None = None,
    task_id: str | None = None,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
    replay_cache: ReplayCache | None = None,
) -> dict[str, Any]:
    """The notification (the parsed A2A `StreamResponse`, `{"statusUpdate": ...}` or
    `{"artifactUpdate": ...}`) when the gateway signed it for this receiver.

    `headers`, `body`, `jwks`, `tolerance`, `now` and `replay_cache` are as for
    `verify_delivery`. `url` is this receiver's URL exactly as saved on the push notification
    config; `config_id` and `task_id`, when given, must be the config's id and its task's id.
    The destination is the update's `metadata.forgebench.destination`
    (`notification_destination`).

    Raises `WebhookVerificationError` whose `reason` is the first check that failed:
    `timestamp`, `signature`, `destination` (or `replay`).
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    current = time.time() if now is None else now
    webhook_id, timestamp = _signed_by_the_gateway(headers, raw, jwks, tolerance, current)

    notification = _json_of(raw)
    destination = notification_destination(notification)
    if destination is None:
        raise WebhookVerificationError("destination", "the body names no destination")
    if destination.get("url") != url:
        raise WebhookVerificationError("destination", "destination.url is not this receiver")
    if config_id is not None and destination.get("config_id") != config_id:
        raise WebhookVerificationError("destination", "destination.config_id is not this config")
    if task_id is not None and destination.get("task_id") != task_id:
        raise WebhookVerificationError("destination", "destination.task_id is not this task")

    _not_replayed(replay_cache, webhook_id, timestamp, current)
    result: dict[str, Any] = notification
    return result


def notification_destination(notification: Any) -> dict[str, Any] | None:
    """Where a notification (a parsed `StreamResponse`) says it was sent:
    `{"tenant_id", "task_id", "config_id", "url"}` from its update's
    `metadata.forgebench.destination`, or None when it names none. Trust it only once
    `verify_notification` has accepted the notification."""
    if not isinstance(notification, dict):
        return None
    for kind in _NOTIFICATION_UPDATES:
        update = notification.get(kind)
        if not isinstance(update, dict):
            continue
        metadata = update.get("metadata")
        ours = metadata.get(NOTIFICATION_METADATA_KEY) if isinstance(metadata, dict) else None
        destination = ours.get("destination") if isinstance(ours, dict) else None
        return destination if isinstance(destination, dict) else None
    return None


def _signed_by_the_gateway(
    headers: DeliveryHeaders,
    raw: bytes,
    jwks: Mapping[str, Any],
    tolerance: int,
    current: float,
) -> tuple[str, int]:
    """The `webhook-id` and timestamp of a POST whose timestamp is within `tolerance` of
    `current` and whose signature a `webhook-signing` key of `jwks` made; the timestamp and
    signature checks, in that order."""
    lowered = _lowercase(headers)
    stamp = lowered.get("webhook-timestamp", "").strip()
    if not stamp:
        raise WebhookVerificationError("timestamp", "the webhook-timestamp header is missing")
    if not (stamp.isascii() and stamp.isdigit()):
        raise WebhookVerificationError("timestamp", "webhook-timestamp is not Unix seconds")
    timestamp = int(stamp)
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError(
            "timestamp", f"webhook-timestamp is outside the tolerance of {tolerance} s"
        )

    webhook_id = lowered.get("webhook-id", "").strip()
    if not webhook_id:
        raise WebhookVerificationError("signature", "the webhook-id header is missing")
    signature_header = lowered.get("webhook-signature", "")
    if not signature_header.strip():
        raise WebhookVerificationError("signature", "the webhook-signature header is missing")
    signatures = _signatures(signature_header)
    if not signatures:
        raise WebhookVerificationError("signature", "webhook-signature holds no v1a signature")
    keys = _signing_keys(jwks)
    if not keys:
        raise WebhookVerificationError("signature", "the JWKS holds no webhook-signing key")
    signed = f"{webhook_id}.{stamp}.".encode() + raw
    if not any(_verifies(key, signature, signed) for key in keys for signature in signatures):
        raise WebhookVerificationError("signature", "no published webhook-signing key signed it")
    return webhook_id, timestamp


def _json_of(raw: bytes) -> Any:
    """The signed body, parsed; a body that is not JSON names no destination."""
    try:
        return json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("destination", "the body is not JSON") from None


def _not_replayed(
    replay_cache: ReplayCache | None, webhook_id: str, timestamp: int, current: float
) -> None:
    """The replay check, last: with a cache, a `webhook-id` it already accepted is refused."""
    if replay_cache is not None and not replay_cache.remember(webhook_id, timestamp, now=current):
        raise WebhookVerificationError("replay", "this webhook-id was already handled")


def fetch_jwks(
    base_url: str,
    api_key: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    max_retries: int = DEFAULT_MAX_RETRIES,
    http_client: httpx.Client | None = None,
) -> dict[str, Any]:
    """The gateway's JWKS (`GET /v1/billing/export/pubkey`, read with any key of the tenant).

    Sent like every SDK request (retries, typed `ForgebenchError`s). Keep the set and fetch it
    again when a delivery's signature fails, since a rotation adds a key.
    """
    transport = SyncTransport(api_key, base_url, timeout, max_retries, http_client)
    try:
        return _jwks_of(transport.send(Request("GET", JWKS_PATH)))
    finally:
        transport.close()


async def fetch_jwks_async(
    base_url: str,
    api_key: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    max_retries: int = DEFAULT_MAX_RETRIES,
    http_client: httpx.AsyncClient | None = None,
) -> dict[str, Any]:
    """`fetch_jwks`, with an `httpx.AsyncClient`."""
    transport = AsyncTransport(api_key, base_url, timeout, max_retries, http_client)
    try:
        return _jwks_of(await transport.send(Request("GET", JWKS_PATH)))
    finally:
        await transport.aclose()


def _jwks_of(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("keys"), list):
        raise ForgebenchError("the gateway's JWKS has no `keys` list")
    jwks: dict[str, Any] = body
    return jwks


def _lowercase(headers: DeliveryHeaders) -> dict[str, str]:
    """The headers under lower-case names (the first value of a name that comes twice)."""
    items: Iterable[tuple[str, Any]] = (
        headers.items() if isinstance(headers, SupportsHeaderItems) else headers
    )
    lowered: dict[str, str] = {}
    for name, value in items:
        lowered.setdefault(str(name).lower(), str(value))
    return lowered


def _signatures(header: str) -> list[bytes]:
    """The decoded `v1a,` entries of a `webhook-signature` header; others are ignored."""
    decoded = []
    for entry in header.split():
        if not entry.startswith(_SIGNATURE_PREFIX):
            continue
        try:
            decoded.append(base64.b64decode(entry[len(_SIGNATURE_PREFIX) :], validate=True))
        except (binascii.Error, ValueError):
            continue
    return decoded


def _signing_keys(jwks: Mapping[str, Any]) -> list[Ed25519PublicKey]:
    """The Ed25519 keys of the set whose `purpose` is `webhook-signing`."""
    keys = []
    listed = jwks.get("keys")
    for jwk in listed if isinstance(listed, list) else []:
        if not isinstance(jwk, Mapping) or jwk.get("purpose") != WEBHOOK_SIGNING_PURPOSE:
            continue
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            continue
        x = jwk.get("x")
        if not isinstance(x, str):
            continue
        try:
            raw = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
            keys.append(Ed25519PublicKey.from_public_bytes(raw))
        except (binascii.Error, ValueError):
            continue
    return keys


def _verifies(key: Ed25519PublicKey, signature: bytes, signed: bytes) -> bool:
    try:
        key.verify(signature, signed)
    except InvalidSignature:
        return False
    return True
