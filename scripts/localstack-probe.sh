#!/usr/bin/env bash
# Does LocalStack answer, and can it host the stack? Run by localstack-deploy.sh and
# localstack-smoke.sh before anything is deployed; on its own: `bash scripts/localstack-probe.sh
# [--api rest|http]`.
#
# Reads $LOCALSTACK_ENDPOINT/_localstack/health (default http://127.0.0.1:4566) and exits
#   0  it answers, and every service the stack needs is available (the HTTP API's too, for --api http)
#   2  it does not answer, answers an error, or lacks a service (each named)
#   3  it demands an account: LocalStack images from 2026.3 on exit 55 at start without
#      LOCALSTACK_AUTH_TOKEN ("LocalStack requires an account to run")
#   4  --api http, and API Gateway v2 (HTTP APIs) is not in this LocalStack: its free edition
#      emulates REST APIs only
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/localstack-lib.sh
source scripts/localstack-lib.sh

api=rest
while [ $# -gt 0 ]; do
  case "$1" in
    --api)
      api="${2:-}"
      shift 2
      ;;
    --api=*)
      api="${1#--api=}"
      shift
      ;;
    *)
      echo "usage: localstack-probe.sh [--api rest|http]" >&2
      exit 2
      ;;
  esac
done
check_api_kind "$api"

# What the stack creates (and what cdk bootstrap and deploy use), by LocalStack's service names.
required=(cloudformation s3 ssm iam sts lambda sqs dynamodb logs events cloudwatch sns secretsmanager)
if [ "$api" = http ]; then required+=(apigatewayv2); else required+=(apigateway); fi

token_help() {
  cat >&2 <<EOF
LocalStack demands an account: images from 2026.3 on refuse to start without LOCALSTACK_AUTH_TOKEN
("LocalStack requires an account to run", exit code 55).
  - Use the tag docker-compose.yml pins (localstack/localstack:4.7.0, starts without a token), or
  - set LOCALSTACK_AUTH_TOKEN (https://app.localstack.cloud/settings/auth-tokens) and restart:
      LOCALSTACK_AUTH_TOKEN=... LOCALSTACK_IMAGE=localstack/localstack:<tag> npm run local:up
EOF
}

# The container, when Docker can tell: did it exit asking for an account?
container_demands_token() {
  command -v docker >/dev/null 2>&1 || return 1
  local state
  state="$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$LOCALSTACK_CONTAINER" 2>/dev/null)" || return 1
  [ "$state" = "exited 55" ] && return 0
  docker logs --tail 100 "$LOCALSTACK_CONTAINER" 2>&1 | grep -qi 'requires an account\|LOCALSTACK_AUTH_TOKEN' && return 0
  return 1
}

url="$LOCALSTACK_ENDPOINT/_localstack/health"
if ! answer="$(curl -sS --max-time "${LOCALSTACK_PROBE_TIMEOUT:-5}" -w '\n%{http_code}' "$url" 2>&1)"; then
  if container_demands_token; then
    token_help
    exit 3
  fi
  cat >&2 <<EOF
LocalStack does not answer at $LOCALSTACK_ENDPOINT ($url: ${answer##*curl: }).
  Start it with \`npm run local:up\` (needs a Docker engine: LocalStack runs Lambda functions in
  containers through the Docker socket), or point LOCALSTACK_ENDPOINT at yours.
EOF
  exit 2
fi
status="${answer##*$'\n'}"
body="${answer%$'\n'*}"

# A healthy licensed LocalStack may mention its license in a 200 answer: only an error answer, or
# the start-up refusal's own words, mean a token is missing.
if grep -qi 'requires an account' <<<"$body" || [ "$status" = 401 ] || [ "$status" = 402 ] ||
  { [ "$status" != 200 ] && grep -qi 'auth.\{0,1\}token\|license' <<<"$body"; }; then
  token_help
  echo "  (its answer: HTTP $status ${body:0:300})" >&2
  exit 3
fi
if [ "$status" != 200 ]; then
  echo "LocalStack at $LOCALSTACK_ENDPOINT answered HTTP $status to $url: ${body:0:300}" >&2
  exit 2
fi

missing=()
for s in "${required[@]}"; do
  grep -q "\"$s\": *\"\(available\|running\)\"" <<<"$body" || missing+=("$s")
done
if [ "$api" = http ] && [[ " ${missing[*]} " == *" apigatewayv2 "* ]]; then
  cat >&2 <<EOF
The HTTP API (API Gateway v2) is not available in this LocalStack: its free edition emulates REST
APIs only (CreateApi answers 501 "not included in your current license plan").
  Deploy with --api rest (the default of these scripts: the same routes, auth and handler), or use a
  licensed LocalStack (LOCALSTACK_AUTH_TOKEN) with apigatewayv2 in LOCALSTACK_SERVICES.
EOF
  exit 4
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "LocalStack at $LOCALSTACK_ENDPOINT lacks services the stack needs: ${missing[*]}" >&2
  echo "  (not \"available\"/\"running\" in $url; SERVICES in docker-compose.yml must list them)" >&2
  exit 2
fi
edition="$(grep -o '"edition": *"[^"]*"' <<<"$body" | sed 's/.*: *"\(.*\)"/\1/' || true)"
version="$(grep -o '"version": *"[^"]*"' <<<"$body" | sed 's/.*: *"\(.*\)"/\1/' || true)"
echo "LocalStack ${version:-?} (${edition:-unknown edition}) answers at $LOCALSTACK_ENDPOINT: ready for api=$api."
