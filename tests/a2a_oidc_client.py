"""Signs an agent in to the gate with an OpenID Connect token and calls another agent with the
official A2A Python SDK (a2a-sdk), finding how to sign in from the gate's refusal alone, as a
third-party client would:

1. read the callee's card without a credential: a 401 whose WWW-Authenticate names the
   protected resource metadata (RFC 9728);
2. read that metadata: its authorization_servers are the issuers the callee's tenant trusts;
3. read the issuer's OpenID Connect discovery document and get a token at its token endpoint by
   the client-credentials grant (the workload's own identity; `aud` names the audience the
   tenant trusts the issuer for);
4. read the card with the token, check its signature with the SDK's verifier, and find the
   card's openIdConnect scheme whose discovery URL is the issuer's;
5. send a message over each binding with the SDK's AuthInterceptor, whose credential service
   answers that scheme with the token.

usage: a2a_oidc_client.py BASE_URL CALLEE_ID CLIENT_ID AUDIENCE
Prints one JSON line: the two tasks' ids and states and the scheme used.
"""

import asyncio
import json
import re
import sys
import uuid

import httpx
import jwt
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest
from a2a.utils.signing import create_signature_verifier


class SchemeToken(CredentialService):
    """The token, for the card's openIdConnect scheme of its issuer; nothing for the others."""

    def __init__(self, scheme: str, token: str):
        self.scheme, self.token = scheme, token

    async def get_credentials(self, scheme_name, context):
        return self.token if scheme_name == self.scheme else None


async def token_from_refusal(http, base, callee_id, client_id, audience):
    refused = await http.get(f"{base}/v1/agents/{callee_id}/.well-known/agent-card.json")
    assert refused.status_code == 401, refused.text
    challenge = refused.headers["www-authenticate"]
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
    metadata = (await http.get(metadata_url)).json()
    issuer = metadata["authorization_servers"][0]
    discovery_url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    discovery = (await http.get(discovery_url)).json()
    granted = await http.post(
        discovery["token_endpoint"],
        data={"grant_type": "client_credentials", "client_id": client_id, "aud": audience},
    )
    granted.raise_for_status()
    return discovery_url, granted.json()["access_token"]


async def main(base, callee_id, client_id, audience):
    async with httpx.AsyncClient(timeout=60) as http:
        discovery_url, token = await token_from_refusal(http, base, callee_id, client_id, audience)
        auth = {"Authorization": f"Bearer {token}"}
        jwks = (await http.get(f"{base}/v1/billing/export/pubkey", headers=auth)).json()
        keys = {key["kid"]: key for key in jwks["keys"]}
        card = await A2ACardResolver(http, f"{base}/v1/agents/{callee_id}").get_agent_card(
            http_kwargs={"headers": auth},
            signature_verifier=create_signature_verifier(
                lambda kid, jku: jwt.PyJWK(keys[kid]), ["EdDSA"]
            ),
        )
        schemes = [
            name
            for name, scheme in card.security_schemes.items()
            if scheme.HasField("open_id_connect_security_scheme")
            and scheme.open_id_connect_security_scheme.open_id_connect_url == discovery_url
        ]
        assert len(schemes) == 1, card.security_schemes
        interceptor = AuthInterceptor(SchemeToken(schemes[0], token))
        tasks = []
        for binding in ["JSONRPC", "HTTP+JSON"]:
            config = ClientConfig(
                httpx_client=http, streaming=False, supported_protocol_bindings=[binding]
            )
            client = ClientFactory(config).create(card, interceptors=[interceptor])
            message = Message(
                message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=binding)]
            )
            request = SendMessageRequest(
                message=message,
                configuration=SendMessageConfiguration(return_immediately=True),
            )
            async for response in client.send_message(request):
                tasks.append({"id": response.task.id, "state": response.task.status.state})
                break
        print(json.dumps({"scheme": schemes[0], "tasks": tasks}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
