#!/usr/bin/env bash
# Builds the SDK, type-checks the docs' samples against its declarations, and runs every test
# against a gateway:
#   FORGEBENCH_URL=http://127.0.0.1:8140 FORGEBENCH_OPERATOR_KEY=... sdk/typescript/test.sh
# The tests make their own tenants (with the operator key), agents, bindings and keys.
set -euo pipefail
cd "$(dirname "$0")"

: "${FORGEBENCH_URL:?set FORGEBENCH_URL to the gateway base URL}"
: "${FORGEBENCH_OPERATOR_KEY:?set FORGEBENCH_OPERATOR_KEY to the gateway operator key}"
export FORGEBENCH_URL FORGEBENCH_OPERATOR_KEY

if ! curl -s -o /dev/null --max-time 5 "$FORGEBENCH_URL/openapi.json"; then
  echo "test.sh: no gateway answers at $FORGEBENCH_URL" >&2
  exit 1
fi

[ -d node_modules ] || npm ci --no-audit --no-fund
# the real OpenID Connect provider test/oidc.test.ts signs agents in with (oauth2-mock-server)
[ -d ../../tests/oidc-provider/node_modules ] || npm ci --prefix ../../tests/oidc-provider --no-audit --no-fund
npm run --silent build
echo "test.sh: the samples type-check with tsc --noEmit --strict"
npx tsc -p samples/tsconfig.json --noEmit --strict
rm -rf build
npm run --silent build:test
node --test --test-concurrency=4 build/test/*.test.js
