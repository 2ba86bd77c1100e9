#!/usr/bin/env bash
# `npm run deploy:localstack`: bootstrap and deploy the Kaj stack into a running LocalStack
# (`npm run local:up` first).
#
#   bash scripts/localstack-deploy.sh [--dry-run] [--api rest|http] [cdklocal deploy args…]
#
# --api rest (the default here): LocalStack's free edition emulates REST APIs, not HTTP APIs;
#   --api http needs a licensed LocalStack (the probe refuses it otherwise, naming why).
# --dry-run prints the environment and every command instead of running them.
# Other arguments go to `cdklocal deploy`, e.g. `-c kaj:authMode=none`.
#
# Every endpoint is http://127.0.0.1:4566 (LOCALSTACK_ENDPOINT overrides it), S3 path-style: no
# dependency on localhost.localstack.cloud resolving (offline, corporate DNS).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/localstack-lib.sh
source scripts/localstack-lib.sh

api="${KAJ_LOCALSTACK_API:-rest}"
deploy_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run)
      DRY_RUN=1
      shift
      ;;
    --api)
      api="${2:-}"
      shift 2
      ;;
    --api=*)
      api="${1#--api=}"
      shift
      ;;
    *)
      deploy_args+=("$1")
      shift
      ;;
  esac
done
check_api_kind "$api"
for a in ${deploy_args[@]+"${deploy_args[@]}"}; do
  case "$a" in
    kaj:api=* | *' kaj:api='*)
      echo "choose the API kind with --api rest|http (the probe checks for it), not -c kaj:api=…" >&2
      exit 2
      ;;
  esac
done

localstack_env
run bash scripts/localstack-probe.sh --api "$api"
run npx --no-install cdklocal bootstrap "aws://$LOCALSTACK_ACCOUNT/$AWS_REGION" --no-notices
run npx --no-install cdklocal deploy --require-approval never --no-notices -c "kaj:api=$api" ${deploy_args[@]+"${deploy_args[@]}"}
