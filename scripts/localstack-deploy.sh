#!/usr/bin/env bash
# `npm run deploy:localstack`: bootstrap and deploy the Kaj stack into a running LocalStack
# (`npm run local:up` first). Extra arguments go to `cdklocal deploy`, e.g. `-c kaj:authMode=none`.
set -euo pipefail
cd "$(dirname "$0")/.."

export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_DEFAULT_REGION="${AWS_REGION:-us-east-1}"
# cdklocal clears AWS_* variables before calling cdk; keep the region.
export AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION"
export CDK_DISABLE_CLI_TELEMETRY=true
account=000000000000

npx --no-install cdklocal bootstrap "aws://$account/$AWS_REGION" --no-notices
npx --no-install cdklocal deploy --require-approval never --no-notices "$@"
