#!/usr/bin/env python3
"""Fails unless every operation of infra/openapi.yaml that an SDK should reach was requested
through that SDK.

    operations-reached.py ACCESS_LOG NAME=USER_AGENT_PREFIX [NAME=USER_AGENT_PREFIX ...]

ACCESS_LOG is the local gateway's access log (FORGEBENCH_ACCESS_LOG: one JSON line per request,
with its `operation`, `status` and `user_agent`), written while the SDKs' suites ran. An
operation counts as reached by an SDK when a request whose User-Agent starts with the SDK's
prefix was routed to it, whatever the answer. Operations marked `x-forgebench-client` have a
client of their own (`a2a-sdk`: the A2A binding, reached with A2A clients; `console`: the
console's page and sessions; `oauth`, `jwks`: public documents read without a key by any OAuth 2.0
client or JWKS reader) and are not asked of the SDKs.
Needs PyYAML (scripts/install.sh puts it in .local/venv).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def sdk_operations(document: dict) -> set[str]:
    operations = set()
    for path_item in document["paths"].values():
        for method, operation in path_item.items():
            if method in METHODS and "x-forgebench-client" not in operation:
                operations.add(operation["operationId"])
    return operations


def reached_by(log: Path, prefix: str) -> set[str]:
    reached = set()
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["user_agent"].startswith(prefix):
            reached.add(entry["operation"])
    return reached


def main(arguments: list[str]) -> int:
    if len(arguments) < 2 or any("=" not in sdk for sdk in arguments[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parent.parent
    wanted = sdk_operations(yaml.safe_load((root / "infra/openapi.yaml").read_text()))
    log = Path(arguments[0])
    status = 0
    for sdk in arguments[1:]:
        name, prefix = sdk.split("=", 1)
        missing = sorted(wanted - reached_by(log, prefix))
        if missing:
            status = 1
            print(f"{name} SDK: {len(missing)} of {len(wanted)} operations never requested through it: "
                  + ", ".join(missing), file=sys.stderr)
        else:
            print(f"{name} SDK: all {len(wanted)} operations requested through it", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
