#!/usr/bin/env bash
# The smoke suite against LocalStack: the integration tests that exercise SQS, KMS and S3
# (nextest's `localstack` profile, .config/nextest.toml) with those services served by
# LocalStack's runtime and DynamoDB by DynamoDB Local, on ports of their own
# (FORGEBENCH_SMOKE_DYNAMODB_PORT 8020, FORGEBENCH_SMOKE_LOCALSTACK_PORT 4576). Installs what it
# needs (scripts/install.sh localstack). CI runs it after scripts/test.sh, whose build it reuses.
#   FORGEBENCH_LOCALSTACK_URL=http://localhost:4566 scripts/localstack-smoke.sh
# runs the same tests against a LocalStack you run yourself (e.g. its Docker image), with DynamoDB
# Local still started here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

export FORGEBENCH_LOCAL_STACK=localstack
export FORGEBENCH_DYNAMODB_PORT=${FORGEBENCH_SMOKE_DYNAMODB_PORT:-8020}
export FORGEBENCH_LOCALSTACK_PORT=${FORGEBENCH_SMOKE_LOCALSTACK_PORT:-4576}
if [ -n "${FORGEBENCH_LOCALSTACK_URL:-}" ]; then
  # Your LocalStack: only DynamoDB Local is started here.
  FORGEBENCH_LOCAL_STACK=moto scripts/install.sh stack
  trap 'FORGEBENCH_LOCAL_STACK=moto scripts/local-stack.sh stop' EXIT
  FORGEBENCH_LOCAL_STACK=moto scripts/local-stack.sh start
  eval "$(scripts/local-stack.sh env)"
  export AWS_ENDPOINT_URL=$FORGEBENCH_LOCALSTACK_URL
else
  trap 'scripts/local-stack.sh stop' EXIT
  scripts/local-stack.sh start
  eval "$(scripts/local-stack.sh env)"
fi
echo "localstack-smoke: SQS, KMS and S3 at $AWS_ENDPOINT_URL, DynamoDB at $AWS_ENDPOINT_URL_DYNAMODB" >&2
status=0
# Over the whole workspace, as the build and the Rust tests select it (the localstack profile's
# filter keeps forgebench-tests' own): `-p forgebench-tests` alone unifies its dependencies'
# features differently and compiled 64 crates again (2 min 40 s of a CI run).
cargo nextest run --locked --workspace --profile localstack --no-fail-fast || status=1
# The tests passing is not enough: LocalStack must have served them. Its log names each request
# it answered (`AWS sqs.SendMessage => 200`).
if [ -z "${FORGEBENCH_LOCALSTACK_URL:-}" ]; then
  log=".local/run-$FORGEBENCH_DYNAMODB_PORT/localstack.log"
  for request in sqs.SendMessage sqs.ReceiveMessage kms.Encrypt kms.Decrypt s3.PutObject s3.GetObject; do
    served=$(grep -c "AWS $request => 2" "$log" || true)
    echo "localstack-smoke: LocalStack answered $request $served times" >&2
    [ "$served" -gt 0 ] || status=1
  done
fi
exit "$status"
