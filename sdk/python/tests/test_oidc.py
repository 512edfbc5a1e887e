"""Signing in with OpenID Connect, on the gateway and a real provider (oauth2-mock-server):
`issuers.*` through the sync and async clients, and agents whose `token_provider` fetches
client-credentials tokens from the provider.

The provider is the one the gateway's own tests use (tests/oidc-provider at the repository's
root); the gateway reads its discovery document and JWKS over loopback
(`FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8`, as `scripts/sdk-tests.sh` sets it).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from gateway import CALLEE_NAME, CALLER_NAME, Pair
from oidc_provider import OidcProvider

from forgebench import (
    AsyncForgebench,
    AuthenticationError,
    ConflictError,
    Forgebench,
    NotFoundError,
    PermissionDeniedError,
)
from forgebench import _auth


def fresh_audience() -> str:
    """An audience no other test trusts: an (issuer, audience) pair belongs to one tenant."""
    return f"pysdk-{uuid.uuid4().hex}"


def test_issuers_through_the_sync_client_and_agents_signed_in_with_provider_tokens(
    pair: Pair, oidc_provider: OidcProvider
) -> None:
    audience = fresh_audience()
    with Forgebench(api_key=pair.admin.key, base_url=pair.base_url) as admin:
        trusted = admin.issuers.trust(
            oidc_provider.issuer, audience, [{"subject": "svc-caller", "agent": CALLER_NAME}]
        )
        assert (trusted["issuer"], trusted["audience"]) == (oidc_provider.issuer, audience)
        assert trusted["discovery_url"] == (
            f"{oidc_provider.issuer}/.well-known/openid-configuration"
        )
        assert trusted["subjects"] == [{"subject": "svc-caller", "agent_id": pair.caller_id}]
        assert trusted.get("discovery") == {"read": True}  # the provider's document was read
        [listed] = admin.issuers.list()
        assert listed["id"] == trusted["id"] and "discovery" not in listed  # only in the answer
        with pytest.raises(ConflictError):
            admin.issuers.trust(oidc_provider.issuer, audience)
        # Nothing listens there yet: trusted all the same, and the answer says why not read.
        unreadable = admin.issuers.trust("http://127.0.0.1:1", fresh_audience())
        found = unreadable.get("discovery")
        assert found is not None and found["read"] is False and found.get("problem"), found
        admin.issuers.distrust(unreadable["id"])
        with pytest.raises(PermissionDeniedError):  # the outbound guard never reads this one
            admin.issuers.trust("https://169.254.169.254", fresh_audience())

        fetched: list[str] = []

        def caller_token() -> tuple[str, float]:
            body = oidc_provider.client_credentials("svc-caller", audience)
            fetched.append(body["access_token"])
            return body["access_token"], body["expires_in"]

        with Forgebench(base_url=pair.base_url, token_provider=caller_token) as caller:
            assert caller.agents.me()["id"] == pair.caller_id
            opened = caller.agents.call(CALLEE_NAME, text="signed in with a token")
            assert opened.caller_agent_id == pair.caller_id
            assert len(fetched) == 1  # the token is kept while it is fresh
            for token in fetched:
                assert token not in repr(caller)

            # The callee's subject is not listed yet: its token is refused, and the provider is
            # asked once more (one refresh, one retry) before the refusal is raised.
            callee_fetches: list[int] = []

            def callee_token() -> str:
                callee_fetches.append(1)
                token: str = oidc_provider.client_credentials("svc-callee", audience)[
                    "access_token"
                ]
                return token

            with Forgebench(
                base_url=pair.base_url, token_provider=callee_token, max_retries=0
            ) as callee:
                with pytest.raises(AuthenticationError) as refused:
                    callee.agents.me()
                assert 'error="invalid_token"' in refused.value.headers["www-authenticate"]
                assert len(callee_fetches) == 2

                updated = admin.issuers.update(
                    trusted["id"],
                    [
                        {"subject": "svc-caller", "agent": CALLER_NAME},
                        {"subject": "svc-callee", "agent": pair.callee_id},
                    ],
                )
                assert updated["id"] == trusted["id"]
                assert sorted(
                    (grant["subject"], grant.get("agent_id")) for grant in updated["subjects"]
                ) == [("svc-callee", pair.callee_id), ("svc-caller", pair.caller_id)]

                # Now the callee signs in with its token and serves the caller's task.
                assert callee.agents.me()["id"] == pair.callee_id
                task = callee.agents.next_task(wait=5)
                assert task is not None and task.id == opened.id
                callee.agents.reply(task.id, task.done(text="answered with a token"))
            done = caller.agents.task(CALLEE_NAME, opened.id)
            assert (done.state, done.artifact_text()) == ("completed", "answered with a token")

        removed = admin.issuers.distrust(trusted["id"])
        assert removed == {"id": trusted["id"], "removed": True}
        assert admin.issuers.list() == []
        with pytest.raises(NotFoundError):
            admin.issuers.distrust(trusted["id"])


def test_a_token_signs_in_only_as_the_agent_its_subject_names(
    pair: Pair, oidc_provider: OidcProvider
) -> None:
    """A token acts exactly as the agent's key: the binding decides what it may call."""
    audience = fresh_audience()
    with Forgebench(api_key=pair.admin.key, base_url=pair.base_url) as admin:
        admin.issuers.trust(
            oidc_provider.issuer, audience, [{"subject": "svc-callee", "agent": CALLEE_NAME}]
        )

    def callee_token() -> str:
        token: str = oidc_provider.client_credentials("svc-callee", audience)["access_token"]
        return token

    with Forgebench(base_url=pair.base_url, token_provider=callee_token) as callee:
        assert callee.agents.me()["name"] == CALLEE_NAME
        with pytest.raises(PermissionDeniedError):  # no binding from the callee to the caller
            callee.agents.call(CALLER_NAME, text="the other way round")
        with pytest.raises(PermissionDeniedError):  # an agent does not manage issuers
            callee.issuers.list()


def test_a_refused_token_is_replaced_once_and_the_request_sent_again(
    pair: Pair, oidc_provider: OidcProvider
) -> None:
    """The first token is one the gateway refuses (an audience nobody trusts, though its
    expiry is far off); the provider's next one is good: one refresh, one retry, no error."""
    audience = fresh_audience()
    with Forgebench(api_key=pair.admin.key, base_url=pair.base_url) as admin:
        admin.issuers.trust(
            oidc_provider.issuer, audience, [{"subject": "svc-caller", "agent": CALLER_NAME}]
        )
    audiences = [fresh_audience(), audience]
    asked: list[str] = []

    def provide() -> tuple[str, float]:
        asked.append(audiences[len(asked)])
        body = oidc_provider.client_credentials("svc-caller", asked[-1])
        return body["access_token"], body["expires_in"]

    with Forgebench(base_url=pair.base_url, token_provider=provide, max_retries=0) as caller:
        task = caller.agents.call(CALLEE_NAME, text="after one refused token")
        assert task.caller_agent_id == pair.caller_id
        assert asked == audiences
        caller.agents.me()
        assert len(asked) == 2  # the good token is kept


def test_a_token_about_to_expire_is_replaced_before_it_is_sent(
    pair: Pair, oidc_provider: OidcProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real tokens, the SDK's clock moved on: 60 s before the JWT's `exp` (read from the token,
    since this provider function gives no `expires_in`) the provider is asked again."""
    audience = fresh_audience()
    with Forgebench(api_key=pair.admin.key, base_url=pair.base_url) as admin:
        admin.issuers.trust(
            oidc_provider.issuer, audience, [{"subject": "svc-caller", "agent": CALLER_NAME}]
        )
    tokens: list[str] = []

    def provide() -> str:
        token: str = oidc_provider.client_credentials("svc-caller", audience)["access_token"]
        tokens.append(token)
        return token

    with Forgebench(base_url=pair.base_url, token_provider=provide) as caller:
        caller.agents.me()
        exp = _auth.jwt_expiry(tokens[0])
        assert exp is not None
        now = _auth._now()
        monkeypatch.setattr(_auth, "_now", lambda: exp - 61)
        assert caller.agents.me()["id"] == pair.caller_id
        assert len(tokens) == 1
        monkeypatch.setattr(_auth, "_now", lambda: exp - 59)
        assert caller.agents.me()["id"] == pair.caller_id
        assert len(tokens) == 2
        monkeypatch.setattr(_auth, "_now", lambda: now)
        caller.agents.me()
        assert len(tokens) == 2  # the new token is fresh


def test_issuers_and_an_async_token_provider_through_the_async_client(
    pair: Pair, oidc_provider: OidcProvider
) -> None:
    async def run() -> None:
        audience = fresh_audience()
        async with AsyncForgebench(api_key=pair.admin.key, base_url=pair.base_url) as admin:
            trusted = await admin.issuers.trust(oidc_provider.issuer, audience)
            assert trusted["subjects"] == []
            assert [issuer["id"] for issuer in await admin.issuers.list()] == [trusted["id"]]
            updated = await admin.issuers.update(
                trusted["id"], [{"subject": "svc-caller", "agent": pair.caller_id}]
            )
            assert updated["subjects"] == [{"subject": "svc-caller", "agent_id": pair.caller_id}]

            fetches = 0

            async def provide() -> tuple[str, float]:
                nonlocal fetches
                fetches += 1
                async with httpx.AsyncClient() as http:
                    response = await http.post(
                        f"{oidc_provider.issuer}/token",
                        data={
                            "grant_type": "client_credentials",
                            "client_id": "svc-caller",
                            "aud": audience,
                        },
                    )
                body = response.json()
                return body["access_token"], body["expires_in"]

            async with AsyncForgebench(base_url=pair.base_url, token_provider=provide) as caller:
                me, task = await asyncio.gather(
                    caller.agents.me(), caller.agents.call(CALLEE_NAME, text="async, a token")
                )
                assert me["id"] == task.caller_agent_id == pair.caller_id
                assert fetches == 1  # one provider call at a time, then the token is kept

            removed = await admin.issuers.distrust(trusted["id"])
            assert removed["removed"] is True
            assert await admin.issuers.list() == []

    asyncio.run(run())
