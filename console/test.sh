#!/usr/bin/env bash
# Runs the console's end-to-end tests in headless Chromium (Debian's chromium; no browser
# download) against a gateway that serves the console at /console:
#   FORGEBENCH_URL=http://127.0.0.1:8140 FORGEBENCH_OPERATOR_KEY=... console/test.sh
# The tests make their own tenants (with the operator key), agents, bindings, members and keys,
# and start an OpenID Connect provider of their own (tests/oidc-provider, node).
# CHROMIUM names another browser binary (default /usr/bin/chromium). Screenshots of each page
# land in console/test/screenshots/.
set -euo pipefail
cd "$(dirname "$0")"

: "${FORGEBENCH_URL:?set FORGEBENCH_URL to the gateway base URL}"
: "${FORGEBENCH_OPERATOR_KEY:?set FORGEBENCH_OPERATOR_KEY to the gateway operator key}"
export FORGEBENCH_URL FORGEBENCH_OPERATOR_KEY

if ! curl -s -o /dev/null --max-time 5 "$FORGEBENCH_URL/console"; then
  echo "test.sh: no gateway answers at $FORGEBENCH_URL" >&2
  exit 1
fi
chromium_bin=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium_bin" ]; then
  echo "test.sh: no browser at $chromium_bin (apt-get install -y chromium, or set CHROMIUM)" >&2
  exit 1
fi

[ -d node_modules ] || npm ci --no-audit --no-fund
# The trusted-issuers test starts a real OpenID Connect provider (tests/oidc-provider).
[ -d ../tests/oidc-provider/node_modules ] || npm ci --no-audit --no-fund --prefix ../tests/oidc-provider
node --test --test-concurrency=1 test/*.test.mjs
