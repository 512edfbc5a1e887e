#!/usr/bin/env bash
# Generates TypeScript types from the gateway's OpenAPI document with openapi-typescript (pinned in
# package-lock.json) and type-checks client.ts against them with `tsc --strict`, so the document
# stays fit for generating clients. Usage: tests/openapi-client/check.sh OPENAPI_JSON
# (the JSON the local gateway serves at /openapi.json; scripts/schemathesis.sh passes it).
set -euo pipefail
document=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")"
echo "== generated client: openapi-typescript, then tsc --strict" >&2
npm ci --no-audit --no-fund --loglevel=error
rm -rf generated && mkdir generated
npx --no-install openapi-typescript "$document" --output generated/api.d.ts
npx --no-install tsc -p .
echo "generated client: generated/api.d.ts from the document compiles with client.ts (tsc --strict)"
