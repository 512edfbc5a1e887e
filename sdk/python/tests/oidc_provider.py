"""A real OpenID Connect provider for the tests: `tests/oidc-provider/provider.mjs` at the
repository's root (oauth2-mock-server from npm), started on a loopback port.

It serves discovery, a JWKS and the client-credentials grant; a client-credentials token's
`sub` is the client's id. Its tokens are fetched here with plain httpx, as a workload would.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx

FOLDER = Path(__file__).resolve().parents[3] / "tests" / "oidc-provider"


class OidcProvider:
    """A running provider; `stop()` closes its stdin, which ends it."""

    def __init__(self) -> None:
        if not (FOLDER / "node_modules" / "oauth2-mock-server").is_dir():
            raise RuntimeError(
                f"the provider's packages are missing: npm ci --prefix {FOLDER} "
                "(sdk/python/test.sh and scripts/install.sh do it)"
            )
        self._process = subprocess.Popen(
            ["node", "provider.mjs"],
            cwd=FOLDER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        timer = threading.Timer(30.0, self._process.kill)  # a provider that never prints
        timer.start()
        try:
            first = self._process.stdout.readline()
        finally:
            timer.cancel()
        if not first:
            raise RuntimeError("the OpenID Connect provider did not start (see its stderr)")
        self.issuer: str = json.loads(first)["issuer"]
        self._http = httpx.Client(timeout=30.0)

    def __repr__(self) -> str:
        return f"OidcProvider(issuer={self.issuer!r})"

    def client_credentials(self, client_id: str, audience: str) -> dict[str, Any]:
        """The token endpoint's answer (`access_token`, `expires_in`, ...) to the client
        credentials grant of `client_id` for `audience`."""
        response = self._http.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "client_id": client_id, "aud": audience},
        )
        assert response.status_code == 200, f"token endpoint -> {response.status_code}"
        body: dict[str, Any] = response.json()
        return body

    def stop(self) -> None:
        self._http.close()
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
