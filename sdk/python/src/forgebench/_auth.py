"""Signing in: a static key, or access tokens from a caller's provider, kept until shortly
before they expire.

A token provider is a callable of no argument that returns a fresh access token: either the
token itself (a `str`; when it is a JWT its `exp` claim, read without verification, says when
it expires) or a pair `(token, expires_in)` (`expires_in` in seconds from now, as a token
endpoint's answer gives it, or None to fall back on the JWT's `exp`). A token is used until
`REFRESH_MARGIN_SECONDS` before it expires; a token whose expiry is known neither way is asked
for again before every request. The async client's provider may also be a coroutine function.

No token ever reaches a log or a `repr`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import inspect
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import httpx

#: A provider's answer: the token, or `(token, expires_in_seconds)`.
TokenResult: TypeAlias = str | tuple[str, float | None]
#: What `Forgebench(token_provider=...)` takes.
TokenProvider: TypeAlias = Callable[[], TokenResult]
#: What `AsyncForgebench(token_provider=...)` takes: a plain or a coroutine function.
AsyncTokenProvider: TypeAlias = Callable[[], TokenResult] | Callable[[], Awaitable[TokenResult]]

#: How long before its expiry a token is replaced by a fresh one.
REFRESH_MARGIN_SECONDS = 60.0

_INVALID_TOKEN = re.compile(r'\berror\s*=\s*"?invalid_token"?', re.IGNORECASE)


def _now() -> float:
    """The wall clock (seconds since the epoch), as a JWT's `exp` counts; tests replace it."""
    return time.time()


def jwt_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT, read without verifying anything; None when there is none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(claims, dict):
        return None
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return None
    return float(exp)


def is_invalid_token(response: httpx.Response) -> bool:
    """A 401 whose `WWW-Authenticate` says the bearer token was refused (RFC 6750 §3.1)."""
    if response.status_code != 401:
        return False
    return any(
        _INVALID_TOKEN.search(value)
        for value in response.headers.get_list("www-authenticate")
    )


@dataclass(frozen=True)
class _Held:
    """A token and when it stops being used (None: used for one request only)."""

    token: str
    refresh_at: float | None

    def __repr__(self) -> str:  # never the token
        return f"_Held(refresh_at={self.refresh_at!r})"


def held_token(result: Any, asked_at: float) -> _Held:
    """A provider's answer, checked, with the time it is to be replaced.

    `asked_at` is the clock read before the provider was called, so a slow provider makes the
    token be replaced early rather than late.
    """
    expires_in: Any = None
    if isinstance(result, tuple):
        if len(result) != 2:
            raise TypeError("a token provider returns a token, or a pair (token, expires_in)")
        result, expires_in = result
    if not isinstance(result, str) or not result:
        raise TypeError("a token provider must return a non-empty str token")
    if expires_in is not None and (
        isinstance(expires_in, bool) or not isinstance(expires_in, int | float)
    ):
        raise TypeError("a token provider's expires_in must be a number of seconds or None")
    expires_at = asked_at + float(expires_in) if expires_in is not None else jwt_expiry(result)
    refresh_at = expires_at - REFRESH_MARGIN_SECONDS if expires_at is not None else None
    return _Held(result, refresh_at)


class _Cache:
    """The token in use, while it is fresh."""

    def __init__(self) -> None:
        self._held: _Held | None = None

    def fresh(self) -> str | None:
        held = self._held
        if held is None or held.refresh_at is None or _now() >= held.refresh_at:
            return None
        return held.token

    def keep(self, held: _Held) -> str:
        self._held = held
        return held.token

    def drop(self, token: str) -> None:
        """Forget `token` (refused by the gateway), unless another replaced it meanwhile."""
        if self._held is not None and self._held.token == token:
            self._held = None


def _provider_name(provider: Callable[..., Any]) -> str:
    return getattr(provider, "__qualname__", None) or type(provider).__name__


class StaticKey:
    """An API key, sent as it is with every request."""

    refreshes = False

    def __init__(self, key: str) -> None:
        if not key:
            raise ValueError("an api_key is required (or set FORGEBENCH_API_KEY)")
        self._key = key

    def __repr__(self) -> str:  # never the key
        return "StaticKey()"

    def token(self) -> str:
        return self._key

    async def token_async(self) -> str:
        return self._key

    def forget(self, token: str) -> None:
        """A key is not refreshed: nothing to forget."""


class SyncTokenSource:
    """A sync provider's tokens, each kept while fresh; one call to the provider at a time."""

    refreshes = True

    def __init__(self, provider: TokenProvider) -> None:
        if not callable(provider):
            raise TypeError("token_provider must be a callable that returns a token")
        self._provider = provider
        self._cache = _Cache()
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the token
        return f"SyncTokenSource(provider={_provider_name(self._provider)})"

    def token(self) -> str:
        """The token in use while it is fresh, else a new one from the provider."""
        token = self._cache.fresh()
        if token is not None:
            return token
        with self._lock:
            token = self._cache.fresh()  # another thread may have fetched one meanwhile
            if token is not None:
                return token
            asked_at = _now()
            result = self._provider()
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if callable(close):
                    close()  # no "never awaited" warning for a coroutine we refuse
                raise TypeError(
                    "the sync client's token_provider returned an awaitable: use AsyncForgebench"
                )
            return self._cache.keep(held_token(result, asked_at))

    async def token_async(self) -> str:
        """`token`, from a coroutine (the provider, a plain function, blocks while it runs)."""
        return self.token()

    def forget(self, token: str) -> None:
        self._cache.drop(token)


class AsyncTokenSource:
    """An async client's provider (a plain or a coroutine function); see `SyncTokenSource`."""

    refreshes = True

    def __init__(self, provider: AsyncTokenProvider) -> None:
        if not callable(provider):
            raise TypeError("token_provider must be a callable that returns a token")
        self._provider = provider
        self._cache = _Cache()
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:  # never the token
        return f"AsyncTokenSource(provider={_provider_name(self._provider)})"

    def token(self) -> str:
        raise TypeError("an async token provider serves the async client only")

    async def token_async(self) -> str:
        token = self._cache.fresh()
        if token is not None:
            return token
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            token = self._cache.fresh()
            if token is not None:
                return token
            asked_at = _now()
            result: Any = self._provider()
            if inspect.isawaitable(result):
                result = await result
            return self._cache.keep(held_token(result, asked_at))

    def forget(self, token: str) -> None:
        self._cache.drop(token)


Credential: TypeAlias = StaticKey | SyncTokenSource | AsyncTokenSource
