"""`push_app`: the handler `serve` takes, answering the gateway's push deliveries (ASGI).

A push agent's endpoint receives one signed POST per delivery (docs/api.md, "Push delivery"):
`{"task_id", "call_id", "message", "destination"}`. The app verifies it (`verify_delivery`:
timestamp, signature against the gateway's JWKS, destination, replay), builds the `Task` the
handler expects, runs the handler and answers with the TaskResultIn its reply maps to, the same
JSON the pull path posts to `POST /v1/agents/me/tasks/{id}/result`:

- a delivery that fails a check: `401`, and the handler never runs;
- the handler's reply (`task.done/ask/fail`, a str, a dict, ...): `200` with its TaskResultIn;
  a `fail` reply is a `200` too, with the failed TaskResultIn;
- a handler that raises: `500`, so the gateway delivers again later (its retry carries the same
  `webhook-id`, which the app then lets through once more);
- the gateway's keys (or this agent's id) could not be read: `503`, retried by the gateway too.

The app is a plain ASGI 3 callable with no framework behind it: run it under any asyncio ASGI
server (uvicorn, hypercorn, granian, daphne), or mount it in Starlette/FastAPI
(`app.mount("/forgebench", push_app(...))`). It answers every path with the same endpoint, so
mount it where the saved endpoint URL points.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, TypeAlias

from . import _requests as requests
from ._client import resolve_settings
from ._errors import ForgebenchError
from ._http import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, AsyncTransport
from ._serve import AsyncHandler, error_message
from ._task import Task, TaskReply, reply_from_result
from ._tracing import continued
from .webhooks import (
    DEFAULT_TOLERANCE_SECONDS,
    ReplayCache,
    WebhookVerificationError,
    fetch_jwks_async,
    verify_delivery,
)

__all__ = ["MAX_DELIVERY_BYTES", "PushApp", "push_app", "task_from_delivery"]

logger = logging.getLogger("forgebench")

Scope: TypeAlias = MutableMapping[str, Any]
ASGIMessage: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[ASGIMessage]]
Send: TypeAlias = Callable[[ASGIMessage], Awaitable[None]]

MAX_DELIVERY_BYTES = 4 * 1024 * 1024
"""The largest request body the app reads (a delivery's message is at most 1 MiB serialized)."""

#: The JWKS is fetched again after a signature fails, at most once per this many seconds (so
#: that forged POSTs cannot make the app hammer the gateway).
JWKS_REFRESH_SECONDS = 10.0


def task_from_delivery(delivery: Mapping[str, Any]) -> Task:
    """The `Task` a handler gets for a verified delivery (the parsed body).

    A delivery carries less than a claimed task: `id`, `call_id`, `callee_agent_id` (the
    destination's agent), `state` (`working`), and the caller's newest message as `message`
    (so `.parts`, `.text`, `.data`) and as the one entry of `history`: the opening message on
    the first delivery, the caller's answer on the delivery that follows an `ask`. There is no
    `context_id` in a delivery.
    """
    task_id = delivery.get("task_id")
    message = delivery.get("message")
    if not isinstance(task_id, str) or not task_id or not isinstance(message, Mapping):
        raise ValueError("the delivery has no task_id or no message")
    destination = delivery.get("destination")
    agent_id = destination.get("agent_id") if isinstance(destination, Mapping) else None
    return Task(
        {
            "id": task_id,
            "call_id": delivery.get("call_id"),
            "callee_agent_id": agent_id,
            "status": {"state": "working", "message": None},
            "input": {"message": dict(message)},
            "history": [dict(message)],
            "artifacts": [],
            "error": None,
        }
    )


class _GatewayUnavailable(Exception):
    """The JWKS or the agent's id could not be read from the gateway."""


class PushApp:
    """The ASGI app `push_app` returns; see `push_app`."""

    def __init__(
        self,
        handler: AsyncHandler,
        *,
        endpoint_url: str,
        agent_id: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        tolerance: int = DEFAULT_TOLERANCE_SECONDS,
        replay_cache: ReplayCache | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        if not callable(handler):
            raise TypeError("handler must be callable: the function `serve` takes")
        if not endpoint_url:
            raise ValueError("endpoint_url is required: this endpoint's URL exactly as saved")
        if tolerance <= 0:
            raise ValueError("tolerance must be more than 0 seconds")
        self._handler = handler
        self._handler_is_async = _is_async_callable(handler)
        self.endpoint_url = endpoint_url
        self._agent_id = agent_id
        self._jwks: dict[str, Any] | None = dict(jwks) if jwks is not None else None
        self._jwks_fetched_at: float | None = None
        self.tolerance = tolerance
        self.replay_cache = replay_cache if replay_cache is not None else ReplayCache(tolerance)
        self._timeout = timeout
        self._transport: AsyncTransport | None = None
        # The gateway is needed to read what was not given; with both given, it is used (when
        # configured, arguments or environment) only to refresh the JWKS after a rotation.
        self._api_key: str | None
        self._base_url: str | None
        if jwks is None or agent_id is None:
            key, url = resolve_settings(api_key, base_url)
            if not key:
                raise ValueError(
                    "an api_key is required (or set FORGEBENCH_API_KEY) to read the gateway's "
                    "JWKS and this agent's id; or pass jwks= and agent_id="
                )
            self._api_key, self._base_url = key, url
        else:
            try:
                key, url = resolve_settings(api_key, base_url)
            except ValueError:
                key, url = "", ""
            self._api_key, self._base_url = (key, url) if key and url else (None, None)

    def _gateway(self) -> AsyncTransport | None:
        """The one client of the gateway every delivery shares (its connections are kept), or
        `None` when the app was given no key."""
        if self._api_key is None or self._base_url is None:
            return None
        if self._transport is None:
            self._transport = AsyncTransport(
                self._api_key, self._base_url, self._timeout, DEFAULT_MAX_RETRIES, None
            )
        return self._transport

    async def aclose(self) -> None:
        """Closes the app's connections to the gateway (the server's shutdown does it)."""
        if self._transport is not None:
            transport, self._transport = self._transport, None
            await transport.aclose()

    def __repr__(self) -> str:  # never the key
        return f"PushApp(endpoint_url={self.endpoint_url!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)
            await self.aclose()
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            raise RuntimeError(f"forgebench push app: unsupported ASGI scope {kind!r}")

    # -- one delivery ----------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await _respond(send, 405, {"detail": "method not allowed: POST a delivery"},
                           [(b"allow", b"POST")])
            return
        body = await _read_body(receive)
        if body is None:  # the client went away
            return
        if len(body) > MAX_DELIVERY_BYTES:
            await _respond(send, 413, {"detail": "the delivery is too large"})
            return
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope.get("headers", [])
        ]
        try:
            delivery = await self._verify(headers, body)
        except WebhookVerificationError as error:
            logger.warning("forgebench: refused a push delivery: %s", error)
            await _respond(send, 401, {"detail": str(error), "reason": error.reason})
            return
        except _GatewayUnavailable as error:
            logger.error("forgebench: a push delivery could not be verified: %s", error)
            await _respond(send, 503, {"detail": "the gateway's keys could not be read"},
                           [(b"retry-after", b"5")])
            return
        try:
            task = await self._task_of(delivery)
        except ValueError as error:
            await _respond(send, 400, {"detail": str(error)})
            return
        except _GatewayUnavailable as error:
            logger.error("forgebench: a pushed task could not be read: %s", error)
            # the gateway's retry of this delivery carries the same webhook-id: let it in
            self.replay_cache.forget(_header(headers, "webhook-id"))
            await _respond(send, 503, {"detail": "the task could not be read"},
                           [(b"retry-after", b"5")])
            return
        try:
            # the handler continues the trace the delivery's POST is in
            with continued({name.lower(): value for name, value in headers}):
                result = await self._run_handler(task)
        except Exception:
            logger.exception("forgebench: the handler raised on pushed task %s; answering 500 "
                             "so the gateway delivers it again", task.id)
            # the gateway's retry of this delivery carries the same webhook-id: let it in
            self.replay_cache.forget(_header(headers, "webhook-id"))
            await _respond(send, 500, {"detail": "the handler raised"})
            return
        try:
            reply = reply_from_result(result)
        except TypeError as error:  # as in `serve`: a reply that cannot be sent fails the task
            logger.error("forgebench: the handler's reply to task %s fails it: %s", task.id, error)
            reply = TaskReply.failed(error_message(error))
        await _respond(send, 200, reply.to_json())

    async def _task_of(self, delivery: Mapping[str, Any]) -> Task:
        """The task the handler gets: with a key, the task as `GET /v1/agents/{agent}/tasks/{id}`
        answers it (what `serve` would have claimed: its conversation, caller and history), as
        the TypeScript and Rust adapters do; without one, what the delivery itself carries
        (`task_from_delivery`)."""
        from_body = task_from_delivery(delivery)
        transport = self._gateway()
        if transport is None:
            return from_body
        try:
            agent_id = await self._own_agent_id()
            read = await transport.send(requests.get_task(agent_id, from_body.id, wait=0))
        except ForgebenchError as error:
            raise _GatewayUnavailable(f"reading task {from_body.id} failed: {error}") from error
        if not isinstance(read, dict):
            raise _GatewayUnavailable(f"reading task {from_body.id} gave no task")
        return Task(read)

    async def _run_handler(self, task: Task) -> Any:
        """The handler's result: a coroutine function is awaited, a plain one runs on a thread
        (so that it may block, as under `Forgebench.agents.serve`)."""
        if self._handler_is_async:
            result = self._handler(task)
        else:
            result = await asyncio.to_thread(self._handler, task)
        if inspect.isawaitable(result):
            result = await result
        return result

    # -- verification ----------------------------------------------------------------------------

    async def _verify(self, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        agent_id = await self._own_agent_id()
        jwks = self._jwks if self._jwks is not None else await self._refresh_jwks()
        try:
            return self._check(headers, body, jwks, agent_id)
        except WebhookVerificationError as error:
            if error.reason != "signature" or not self._may_refresh(headers):
                raise
        # a signature no key we hold verifies: a rotation may have added a key since
        return self._check(headers, body, await self._refresh_jwks(), agent_id)

    def _check(
        self, headers: list[tuple[str, str]], body: bytes, jwks: Mapping[str, Any], agent_id: str
    ) -> dict[str, Any]:
        return verify_delivery(
            headers,
            body,
            jwks,
            url=self.endpoint_url,
            agent_id=agent_id,
            tolerance=self.tolerance,
            replay_cache=self.replay_cache,
        )

    def _may_refresh(self, headers: list[tuple[str, str]]) -> bool:
        """Whether to read the JWKS again: a gateway to ask, a signature to check, and no
        read in the last `JWKS_REFRESH_SECONDS`."""
        if self._api_key is None:
            return False
        if "v1a," not in _header(headers, "webhook-signature"):
            return False
        last = self._jwks_fetched_at
        return last is None or time.monotonic() - last >= JWKS_REFRESH_SECONDS

    async def _refresh_jwks(self) -> dict[str, Any]:
        if self._api_key is None or self._base_url is None:
            raise _GatewayUnavailable("no gateway to read the JWKS from")
        self._jwks_fetched_at = time.monotonic()
        try:
            jwks = await fetch_jwks_async(
                self._base_url, self._api_key, timeout=self._timeout,
                max_retries=DEFAULT_MAX_RETRIES,
            )
        except ForgebenchError as error:
            raise _GatewayUnavailable(f"reading the JWKS failed: {error}") from error
        self._jwks = jwks
        return jwks

    async def _own_agent_id(self) -> str:
        if self._agent_id is not None:
            return self._agent_id
        transport = self._gateway()
        if transport is None:
            raise _GatewayUnavailable("no gateway to read this agent's id from")
        try:
            me = await transport.send(requests.me())
        except ForgebenchError as error:
            raise _GatewayUnavailable(
                f"reading this agent (GET /v1/agents/me, with an agent key) failed: {error}"
            ) from error
        agent_id = me.get("id") if isinstance(me, dict) else None
        if not isinstance(agent_id, str):
            raise _GatewayUnavailable("GET /v1/agents/me named no agent id")
        self._agent_id = agent_id
        return agent_id


def push_app(
    handler: AsyncHandler,
    *,
    endpoint_url: str,
    agent_id: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    jwks: Mapping[str, Any] | None = None,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    replay_cache: ReplayCache | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> PushApp:
    """An ASGI app serving push deliveries with `handler`, the function `serve` takes.

    - `handler(task)` returns what a `serve` handler returns (`task.done/ask/fail`, a str, a
      dict, ...); a coroutine function is awaited, a plain function runs on a worker thread.
    - `endpoint_url`: this endpoint's URL exactly as saved on the agent
      (`agents.set_endpoint`); a delivery whose `destination.url` differs is refused.
    - `api_key` / `base_url` (else `FORGEBENCH_API_KEY` / `FORGEBENCH_URL`): the agent's own key
      and the gateway, to read the JWKS (`fetch_jwks`) and, unless `agent_id` is given, this
      agent's id (`GET /v1/agents/me`), both at the first delivery. The JWKS is read again when
      a signature verifies with none of its keys (a rotation), at most every 10 s.
    - `jwks` / `agent_id`: give them to skip those reads (with both, no key is needed; one given
      anyway still refreshes the JWKS after a rotation).
    - `tolerance`: seconds a `webhook-timestamp` may be off (300). `replay_cache`: the
      `webhook-id`s already handled (a new in-memory `ReplayCache` by default; share one across
      apps of one process).
    - `timeout`: seconds for each gateway read.
    """
    return PushApp(
        handler,
        endpoint_url=endpoint_url,
        agent_id=agent_id,
        api_key=api_key,
        base_url=base_url,
        jwks=jwks,
        tolerance=tolerance,
        replay_cache=replay_cache,
        timeout=timeout,
    )


# -- ASGI plumbing ---------------------------------------------------------------------------------


def _is_async_callable(handler: Any) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 (an object with an async __call__)
    return call is not None and inspect.iscoroutinefunction(call)


def _header(headers: list[tuple[str, str]], name: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


async def _read_body(receive: Receive) -> bytes | None:
    """The request body (cut short past `MAX_DELIVERY_BYTES`), or None on a disconnect."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return None
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_DELIVERY_BYTES:
            return b"".join(chunks) + chunk
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start: the JWKS is read at the first delivery; the caller closes the app's
    connections once the server shuts down."""
    while True:
        message = await receive()
        if message.get("type") == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message.get("type") == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
