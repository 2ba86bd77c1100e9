#!/usr/bin/env bash
# `npm run local:up`: start LocalStack (docker-compose.yml) and wait until it answers healthy.
#
#   bash scripts/localstack-up.sh [--dry-run]
#
# Waits on http://127.0.0.1:4566/_localstack/health (LOCALSTACK_ENDPOINT overrides it), then runs
# scripts/localstack-probe.sh. A container that exits asking for an account (images from 2026.3 on,
# without LOCALSTACK_AUTH_TOKEN: exit code 55) is reported as such, not waited for.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/localstack-lib.sh
source scripts/localstack-lib.sh

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    *)
      echo "usage: localstack-up.sh [--dry-run]" >&2
      exit 2
      ;;
  esac
  shift
done

if [ "$DRY_RUN" = 1 ]; then
  run docker compose up -d localstack
  run curl -fsS "$LOCALSTACK_ENDPOINT/_localstack/health"
  run bash scripts/localstack-probe.sh --api rest
  exit 0
fi

if ! command -v docker >/dev/null 2>&1; then
  echo "docker is not installed: the LocalStack path needs a Docker engine (see docs/deploy.md, LocalStack)." >&2
  exit 1
fi
if ! docker info >/dev/null 2>&1; then
  echo "the Docker engine is not running (docker info failed)." >&2
  exit 1
fi

docker compose up -d localstack

deadline=$((SECONDS + ${LOCALSTACK_WAIT_SECONDS:-120}))
printf 'waiting for LocalStack at %s ' "$LOCALSTACK_ENDPOINT"
until curl -fsS --max-time 5 "$LOCALSTACK_ENDPOINT/_localstack/health" >/dev/null 2>&1; do
  state="$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$LOCALSTACK_CONTAINER" 2>/dev/null || true)"
  if [[ "$state" == exited* ]] || ((SECONDS > deadline)); then
    echo
    docker compose logs --tail 30 localstack >&2 || true
    # The probe names the cause: an account demanded (exit 55), or no answer.
    bash scripts/localstack-probe.sh --api rest || exit $?
    exit 1
  fi
  printf '.'
  sleep 2
done
echo ' up.'
bash scripts/localstack-probe.sh --api rest
echo "Next: npm run deploy:localstack, or npm run localstack:smoke (KAJ_TEST_ENDPOINT=$LOCALSTACK_ENDPOINT runs the integration suite there too)"
