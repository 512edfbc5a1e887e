"""`token_provider` without a gateway: when the provider is asked (a fake clock), the one refresh
and retry after a refused token, the exclusive `api_key`, and no token in any repr.

The gateway's side of all this (real tokens of a real provider) is tests/test_oidc.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from forgebench import AsyncForgebench, AuthenticationError, Forgebench
from forgebench import _auth
from forgebench._auth import REFRESH_MARGIN_SECONDS, held_token, jwt_expiry

BASE = "http://gateway.test"
INVALID_TOKEN = (
    'Bearer error="invalid_token", '
    'resource_metadata="http://gateway.test/.well-known/oauth-protected-resource"'
)


def jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT: only its claims are read by the SDK."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock(1_800_000_000.0)
    monkeypatch.setattr(_auth, "_now", fake)
    return fake


class Gateway:
    """A mock gateway: 401 invalid_token for the tokens in `refused`, else `{"ok": true}`;
    records the token of each request."""

    def __init__(self, refused: set[str] | None = None, challenge: str = INVALID_TOKEN) -> None:
        self.refused = refused if refused is not None else set()
        self.challenge = challenge
        self.tokens: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        token = request.headers["authorization"].removeprefix("Bearer ")
        self.tokens.append(token)
        if token in self.refused:
            body = {"detail": {"code": "unauthenticated", "message": "invalid token"}}
            return httpx.Response(401, json=body, headers={"www-authenticate": self.challenge})
        return httpx.Response(200, json={"id": "a-1", "name": "agent"})

    def client(self, provider: Any, **options: Any) -> Forgebench:
        http = httpx.Client(transport=httpx.MockTransport(self))
        return Forgebench(base_url=BASE, token_provider=provider, http_client=http, **options)

    def async_client(self, provider: Any, **options: Any) -> AsyncForgebench:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self))
        return AsyncForgebench(base_url=BASE, token_provider=provider, http_client=http, **options)


class Provider:
    """Hands out `answers` in turn (the last one again when they run out), counting calls."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers)) - 1]


@pytest.fixture
def no_key_variable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("FORGEBENCH_API_KEY", raising=False)
    yield


# -- expiry arithmetic --------------------------------------------------------------------------


def test_the_expiry_comes_from_expires_in_else_from_the_jwt_exp() -> None:
    token = jwt({"sub": "svc", "exp": 1_800_000_900})
    assert jwt_expiry(token) == 1_800_000_900
    assert held_token(token, 1_800_000_000).refresh_at == 1_800_000_900 - REFRESH_MARGIN_SECONDS
    # expires_in counts from when the provider was asked, and wins over exp
    assert held_token((token, 300), 1_800_000_000).refresh_at == 1_800_000_300 - 60
    assert held_token((token, None), 1_800_000_000).refresh_at == 1_800_000_900 - 60
    for unknown in ("opaque-token", "a.b.c", jwt({"sub": "svc"}), jwt({"exp": True})):
        assert jwt_expiry(unknown) is None
        assert held_token(unknown, 0).refresh_at is None


@pytest.mark.parametrize("answer", ["", 42, None, ("t",), ("t", "soon"), ("t", 1, 2), (7, 60)])
def test_a_provider_answer_that_is_no_token_is_refused(answer: Any) -> None:
    with pytest.raises(TypeError):
        held_token(answer, 0)


def test_the_provider_is_asked_again_60_s_before_the_jwt_expires(clock: Clock) -> None:
    first = jwt({"sub": "svc", "exp": clock.now + 3600})
    second = jwt({"sub": "svc", "exp": clock.now + 7200})
    provider = Provider(first, second)
    gateway = Gateway()
    with gateway.client(provider) as client:
        client.agents.me()
        clock.now += 3600 - 61
        client.agents.me()
        assert provider.calls == 1
        clock.now += 2  # 59 s before exp: within the margin
        client.agents.me()
        assert provider.calls == 2
        client.agents.me()
    assert gateway.tokens == [first, first, second, second]


def test_an_expires_in_pair_is_kept_for_that_long_less_the_margin(clock: Clock) -> None:
    provider = Provider(("opaque-1", 120), ("opaque-2", 120))
    gateway = Gateway()
    with gateway.client(provider) as client:
        client.agents.me()
        clock.now += 59
        client.agents.me()
        clock.now += 1
        client.agents.me()
    assert gateway.tokens == ["opaque-1", "opaque-1", "opaque-2"]


def test_without_a_known_expiry_the_provider_is_asked_for_every_request(clock: Clock) -> None:
    provider = Provider("opaque-1", "opaque-2", "opaque-3")
    gateway = Gateway()
    with gateway.client(provider) as client:
        for _ in range(3):
            client.agents.me()
    assert gateway.tokens == ["opaque-1", "opaque-2", "opaque-3"]


# -- a refused token ----------------------------------------------------------------------------


def test_an_invalid_token_401_asks_the_provider_once_more_and_retries_once(clock: Clock) -> None:
    stale = jwt({"sub": "svc", "exp": clock.now + 3600})
    fresh = jwt({"sub": "svc", "exp": clock.now + 3601})
    provider = Provider(stale, fresh)
    gateway = Gateway(refused={stale})
    with gateway.client(provider, max_retries=0) as client:
        # a POST that is never sent again after a broken connection: a refusal did nothing
        client.agents.create("new-agent")
        client.agents.me()
    assert provider.calls == 2
    assert gateway.tokens == [stale, fresh, fresh]


def test_a_second_refusal_is_raised_after_one_refresh(clock: Clock) -> None:
    provider = Provider("bad-1", "bad-2", "bad-3")
    gateway = Gateway(refused={"bad-1", "bad-2", "bad-3"})
    with gateway.client(provider) as client, pytest.raises(AuthenticationError) as refused:
        client.agents.me()
    assert refused.value.status == 401
    assert (provider.calls, gateway.tokens) == (2, ["bad-1", "bad-2"])


def test_a_401_that_is_not_an_invalid_token_is_not_retried(clock: Clock) -> None:
    provider = Provider("token-1", "token-2")
    gateway = Gateway(refused={"token-1"}, challenge='Bearer resource_metadata="x"')
    with gateway.client(provider) as client, pytest.raises(AuthenticationError):
        client.agents.me()
    assert (provider.calls, gateway.tokens) == (1, ["token-1"])


def test_a_key_is_never_refreshed() -> None:
    gateway = Gateway(refused={"fb_agt_key"})
    http = httpx.Client(transport=httpx.MockTransport(gateway))
    with (
        Forgebench(api_key="fb_agt_key", base_url=BASE, http_client=http) as client,
        pytest.raises(AuthenticationError),
    ):
        client.agents.me()
    assert gateway.tokens == ["fb_agt_key"]


# -- the async client ---------------------------------------------------------------------------


def test_the_async_client_takes_a_coroutine_or_a_plain_provider(clock: Clock) -> None:
    stale = jwt({"sub": "svc", "exp": clock.now + 3600})
    fresh = jwt({"sub": "svc", "exp": clock.now + 3601})
    gateway = Gateway(refused={stale})
    asked: list[str] = []

    async def coroutine_provider() -> str:
        await asyncio.sleep(0.01)  # the other requests wait for this one answer
        asked.append("coroutine")
        return stale if len(asked) == 1 else fresh

    plain = Provider(("opaque", 300))

    async def run() -> None:
        async with gateway.async_client(coroutine_provider) as client:
            await asyncio.gather(*(client.agents.me() for _ in range(3)))
        async with gateway.async_client(plain) as client:
            await client.agents.me()
            await client.agents.me()

    asyncio.run(run())
    # one provider call at a time: the requests waited for the first token, and the refusal
    # of the stale one brought one new token for all of them
    assert asked == ["coroutine", "coroutine"]
    assert gateway.tokens[0] == stale and gateway.tokens[:-2].count(fresh) == 3
    assert plain.calls == 1 and gateway.tokens[-2:] == ["opaque", "opaque"]


def test_the_sync_client_refuses_a_coroutine_provider() -> None:
    async def provider() -> str:
        return "token"

    with Gateway().client(provider) as client, pytest.raises(TypeError, match="AsyncForgebench"):
        client.agents.me()


# -- configuration and secrecy ------------------------------------------------------------------


@pytest.mark.parametrize("client_class", [Forgebench, AsyncForgebench])
def test_api_key_and_token_provider_are_exclusive(
    client_class: type[Forgebench | AsyncForgebench], no_key_variable: None
) -> None:
    with pytest.raises(ValueError, match="not both"):
        client_class(api_key="fb_agt_key", base_url=BASE, token_provider=lambda: "token")
    with pytest.raises(ValueError, match="api_key or a token_provider is required"):
        client_class(base_url=BASE)
    with pytest.raises(TypeError, match="callable"):
        not_callable: Any = "a token, not a provider"
        client_class(base_url=BASE, token_provider=not_callable)


def test_the_key_variable_is_not_read_with_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGEBENCH_API_KEY", "fb_agt_from_the_environment")
    gateway = Gateway()
    with gateway.client(lambda: "the-token") as client:
        client.agents.me()
    assert gateway.tokens == ["the-token"]
    with Forgebench(base_url=BASE) as keyed:  # without a provider the variable still counts
        assert keyed.base_url == BASE


def test_no_token_is_shown_in_a_repr(clock: Clock) -> None:
    token = jwt({"sub": "svc", "exp": clock.now + 3600})
    gateway = Gateway(refused={token})
    with gateway.client(lambda: token) as client:
        with pytest.raises(AuthenticationError) as refused:
            client.agents.me()
        transport = client._transport
        shown = [
            repr(client),
            repr(transport),
            repr(transport._credential),
            repr(transport._credential._cache._held),  # type: ignore[union-attr]
            str(refused.value),
            repr(refused.value),
        ]
    for text in shown:
        assert token not in text
