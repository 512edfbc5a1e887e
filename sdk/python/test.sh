#!/usr/bin/env bash
# Runs the Python SDK's tests against a running gateway.
#
#   FORGEBENCH_URL=http://127.0.0.1:8080 FORGEBENCH_OPERATOR_KEY=fb_op_... sdk/python/test.sh [pytest args]
#
# Makes a venv in .local/sdk-python-venv (at the repository's root) when there is none, installs
# this package with its `test` extra (pytest, and mypy at the version pyproject.toml pins) into
# it, installs the tests' OpenID Connect provider (tests/oidc-provider, npm) when missing,
# type-checks the package and its tests with `mypy --strict` (the package ships py.typed),
# then runs pytest; a type error fails the run before any test, else the exit code is pytest's.
# The tests make their own tenant, agents, bindings and keys with the operator key, so they can
# share a gateway.
set -euo pipefail

sdk_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$sdk_dir/../.." && pwd)"
venv="$repo_root/.local/sdk-python-venv"

if [[ -z "${FORGEBENCH_URL:-}" || -z "${FORGEBENCH_OPERATOR_KEY:-}" ]]; then
  echo "test.sh: set FORGEBENCH_URL (the gateway's base URL) and FORGEBENCH_OPERATOR_KEY" >&2
  exit 2
fi

python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
fi

"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$sdk_dir[test]"

# The real OpenID Connect provider tests/test_oidc.py signs agents in with (oauth2-mock-server,
# from its lockfile, as scripts/install.sh installs it).
provider="$repo_root/tests/oidc-provider"
if ! cmp -s "$provider/package-lock.json" "$provider/node_modules/.package-lock.json.installed"; then
  echo "test.sh: npm ci in tests/oidc-provider" >&2
  npm ci --silent --no-audit --no-fund --prefix "$provider" >/dev/null
  cp "$provider/package-lock.json" "$provider/node_modules/.package-lock.json.installed"
fi

cd "$sdk_dir"
echo "test.sh: mypy --strict over src/ and tests/" >&2
"$venv/bin/python" -m mypy --strict src tests
# Four at once (pytest-xdist): the tests mostly wait on the gateway, each on a tenant of its own.
exec "$venv/bin/python" -m pytest -n "${FORGEBENCH_PYTEST_WORKERS:-4}" "$@"
