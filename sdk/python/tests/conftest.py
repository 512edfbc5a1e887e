"""Fixtures: the gateway under test (FORGEBENCH_URL, FORGEBENCH_OPERATOR_KEY) and fresh tenants."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gateway import Pair, create_pair  # noqa: E402
from oidc_provider import OidcProvider  # noqa: E402


@pytest.fixture(scope="session")
def gateway() -> tuple[str, str]:
    """The gateway's base URL and operator key; tests that need one skip without them."""
    url = os.environ.get("FORGEBENCH_URL", "").rstrip("/")
    operator_key = os.environ.get("FORGEBENCH_OPERATOR_KEY", "")
    if not url or not operator_key:
        pytest.skip("FORGEBENCH_URL and FORGEBENCH_OPERATOR_KEY name the gateway to test against")
    return url, operator_key


@pytest.fixture
def base_url(gateway: tuple[str, str]) -> str:
    return gateway[0]


@pytest.fixture
def pair(gateway: tuple[str, str]) -> Iterator[Pair]:
    """A new tenant: `billing-orchestrator` bound to `invoice-classifier`, a key for each."""
    created = create_pair(*gateway)
    yield created
    created.close()


@pytest.fixture
def unbound_pair(gateway: tuple[str, str]) -> Iterator[Pair]:
    """A new tenant with the same two agents and no binding between them."""
    created = create_pair(*gateway, bound=False)
    yield created
    created.close()


@pytest.fixture(scope="session")
def oidc_provider(gateway: tuple[str, str]) -> Iterator[OidcProvider]:
    """A real OpenID Connect provider on a loopback port, one per test process."""
    provider = OidcProvider()
    yield provider
    provider.stop()
