"""Running the docs' Python samples (verbatim copies in sdk/python/samples/) against a gateway.

A sample runs exactly as written. Two constants of the docs are swapped for this gateway's:
the public base URL, and the example callee id of the "by id" samples (an agent's id is made by
the gateway, so the docs' id cannot exist here). Keys come from the environment, as the samples
read them; names a sample leaves to its reader (`classify`, `log`, `client`, `task_id`, ...)
are the globals it runs with.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"
REPO_ROOT = Path(__file__).resolve().parents[3]
PUBLIC_BASE_URL = "https://api.forgebench.ai"
DOCS_CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac"


SEEDS_CANDIDATES = (REPO_ROOT.parent / "shared" / "seeds", Path("/work/shared/seeds"))


def seeds_dir() -> Path | None:
    """The public docs, when this checkout has them beside it."""
    for candidate in SEEDS_CANDIDATES:
        if candidate.is_dir():
            return candidate
    return None


def in_ci() -> bool:
    """Whether this is a CI run (`CI` set, as CI services do, and not to `false` or `0`): there
    the docs must be found, so that a green run means the copies were compared with them."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def sample_names() -> list[str]:
    return sorted(path.name for path in SAMPLES_DIR.glob("*.py"))


def sample_text(name: str) -> str:
    return (SAMPLES_DIR / name).read_text(encoding="utf-8")


def localized(name: str, base_url: str, callee_id: str | None = None) -> str:
    """The sample's source with the docs' base URL (and example callee id) made local."""
    source = sample_text(name)
    if "Forgebench(" in source:
        assert PUBLIC_BASE_URL in source, f"{name} builds a client for another URL"
        source = source.replace(PUBLIC_BASE_URL, base_url)
    if DOCS_CALLEE_ID in source:
        assert callee_id is not None, f"{name} names a callee by id: pass the local one"
        source = source.replace(DOCS_CALLEE_ID, callee_id)
    return source


def run_sample(
    name: str,
    base_url: str,
    namespace: dict[str, Any] | None = None,
    callee_id: str | None = None,
) -> dict[str, Any]:
    """Execute the sample with `namespace` as its globals; returns them."""
    globals_ = namespace if namespace is not None else {}
    globals_.setdefault("__name__", "__sample__")
    code = compile(localized(name, base_url, callee_id), str(SAMPLES_DIR / name), "exec")
    exec(code, globals_)
    return globals_


class RecordingLog:
    """The `log` the caller samples use: records what they log at error level."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, message: str, *args: Any) -> None:
        self.errors.append(message % args if args else message)
