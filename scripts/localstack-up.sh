#!/usr/bin/env bash
# `npm run local:up`: start LocalStack (docker-compose.yml) and wait until it answers healthy.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker >/dev/null 2>&1; then
  echo "docker is not installed: the LocalStack path needs a Docker engine (see docs/deploy.md)." >&2
  exit 1
fi
if ! docker info >/dev/null 2>&1; then
  echo "the Docker engine is not running (docker info failed)." >&2
  exit 1
fi

docker compose up -d localstack

endpoint="${LOCALSTACK_ENDPOINT:-http://localhost:4566}"
deadline=$((SECONDS + ${LOCALSTACK_WAIT_SECONDS:-120}))
printf 'waiting for LocalStack at %s ' "$endpoint"
until health="$(curl -fsS "$endpoint/_localstack/health" 2>/dev/null)" \
  && grep -q '"cloudformation": *"\(available\|running\)"' <<<"$health" \
  && grep -q '"sqs": *"\(available\|running\)"' <<<"$health"; do
  if ((SECONDS > deadline)); then
    echo
    echo "LocalStack did not become healthy in time. Logs:" >&2
    docker compose logs --tail 50 localstack >&2 || true
    exit 1
  fi
  printf '.'
  sleep 2
done
echo ' ready.'
echo "Next: npm run deploy:localstack   (then KAJ_TEST_ENDPOINT=$endpoint for the integration suite)"
