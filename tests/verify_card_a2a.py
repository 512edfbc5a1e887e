"""Reads Forgebench agent cards as an A2A 1.0 client does, with the official A2A Python SDK
(`a2a-sdk`, used strictly as a third party): the SDK's card resolver fetches the card, the SDK's
signature verifier checks it against the key the gateway publishes, and the card is reported as
the SDK parsed it, so the caller can check what an A2A client sees.

usage:
  verify_card_a2a.py card AGENT_BASE_URL JWKS_URL KEY
      resolve `{AGENT_BASE_URL}/.well-known/agent-card.json` (sending `Authorization: Bearer KEY`)
  verify_card_a2a.py registry REGISTRY_URL JWKS_URL KEY
      every card of the registry (`{"cards", "next_cursor"}`, all pages)

Prints one JSON report (a list of them for `registry`) and exits 0 when every card verified,
1 when one did not (its report says why), 2 on anything else.
"""
import asyncio
import json
import sys
import traceback
import uuid

import httpx
from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    ClientCallContext,
    InMemoryContextCredentialStore,
)
from a2a.client.card_resolver import parse_agent_card
from a2a.client.interceptors import BeforeArgs
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.signing import SignatureVerificationError, create_signature_verifier
from jwt import PyJWK
from jwt.exceptions import PyJWKError


def verifier(jwks: dict):
    """The SDK's verifier, EdDSA only, with the gateway's card-signing keys by `kid`. An unknown
    kid is a PyJWT error, which the verifier takes as that signature not holding."""

    def key_provider(kid, _jku):
        for key in jwks.get("keys", []):
            if key.get("kid") == kid and key.get("purpose") == "card-signing":
                return PyJWK(key)
        raise PyJWKError(f"no card-signing key {kid} in the JWKS")

    return create_signature_verifier(key_provider, ["EdDSA"])


async def authorization_sent(card, key: str) -> str | None:
    """The `Authorization` the SDK's own AuthInterceptor adds for this card when the client holds
    `key` for every scheme the card declares: it sends one only for a scheme that the card's
    `securityRequirements` names."""
    store = InMemoryContextCredentialStore()
    session = str(uuid.uuid4())
    for name in card.security_schemes:
        await store.set_credentials(session, name, key)
    args = BeforeArgs(
        input=None,
        method="SendMessage",
        agent_card=card,
        context=ClientCallContext(state={"sessionId": session}),
    )
    await AuthInterceptor(store).before(args)
    return (args.context.service_parameters or {}).get("Authorization")


async def report(card, key: str) -> dict:
    """The card as the SDK parsed it (proto fields, not the JSON that came in)."""
    try:
        validate_proto_required_fields(card)
        missing = []
    except InvalidParamsError as error:
        missing = sorted({e["field"] for e in (error.data or {}).get("errors", [])})
    capabilities = {
        field: getattr(card.capabilities, field)
        for field in ("streaming", "push_notifications", "extended_agent_card")
        if card.capabilities.HasField(field)
    }
    schemes = {}
    for name, scheme in card.security_schemes.items():
        kind = scheme.WhichOneof("scheme")
        schemes[name] = {"kind": kind}
        if kind == "http_auth_security_scheme":
            schemes[name]["scheme"] = scheme.http_auth_security_scheme.scheme
    return {
        "name": card.name,
        "description": card.description,
        "version": card.version,
        "supported_interfaces": [
            {
                "url": i.url,
                "protocol_binding": i.protocol_binding,
                "protocol_version": i.protocol_version,
            }
            for i in card.supported_interfaces
        ],
        "capabilities": capabilities,
        "skills": [
            {"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags)}
            for s in card.skills
        ],
        "security_schemes": schemes,
        "security_requirements": [sorted(r.schemes) for r in card.security_requirements],
        "authorization_sent": await authorization_sent(card, key),
        "missing_required_fields": missing,
    }


async def check_one(card, verify, key: str) -> dict:
    try:
        verify(card)
    except SignatureVerificationError as error:
        return {"verified": False, "error": f"{type(error).__name__}: {error}"}
    return {"verified": True, **await report(card, key)}


async def main(argv: list[str]) -> int:
    if len(argv) != 5 or argv[1] not in ("card", "registry"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, url, jwks_url, key = argv[1:]
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        jwks = (await http.get(jwks_url)).raise_for_status().json()
        verify = verifier(jwks)
        if mode == "card":
            resolver = A2ACardResolver(http, url)
            try:
                card = await resolver.get_agent_card(signature_verifier=verify)
            except SignatureVerificationError as error:
                reports = {"verified": False, "error": f"{type(error).__name__}: {error}"}
            else:
                reports = {"verified": True, **await report(card, key)}
            verified = reports["verified"]
        else:
            reports, cursor = [], None
            for _ in range(100):
                # httpx adds `cursor` to the query the URL already has (`limit`).
                params = {"cursor": cursor} if cursor else None
                page = (await http.get(url, params=params)).raise_for_status().json()
                for entry in page["cards"]:
                    reports.append(await check_one(parse_agent_card(entry), verify, key))
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            verified = all(r["verified"] for r in reports)
    print(json.dumps(reports, ensure_ascii=False))
    return 0 if verified else 1


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv)))
    except Exception:  # anything but a verdict: not 1, which means "did not verify"
        traceback.print_exc()
        sys.exit(2)
