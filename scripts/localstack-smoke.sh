#!/usr/bin/env bash
# `npm run localstack:smoke`: the deployed stack, end to end, on a running LocalStack
# (`npm run local:up` first; needs a Docker engine for Lambda).
#
#   bash scripts/localstack-smoke.sh [--dry-run] [--auth iam|none] [--stack NAME] [--keep]
#
#  1. probe LocalStack (it answers, no token demanded, the services are there)
#  2. deploy a scratch stack (api=rest; nothing retained, no deletion protection)
#  3. submit a send_email task through the deployed REST API (SigV4-signed under --auth iam, the
#     default; unsigned under --auth none) and wait for it to succeed
#  4. force a dead letter (a task whose two attempts both fail), then redrive it with
#     `kaj dlq redrive --stack … --endpoint-url …` and wait for it to succeed
#  5. tear down: `cdklocal destroy` (unless --keep)
# --dry-run prints the environment and every command instead of running them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/localstack-lib.sh
source scripts/localstack-lib.sh

auth=iam
stack="${KAJ_SMOKE_STACK:-kaj-smoke}"
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --keep) keep=1 ;;
    --auth)
      auth="${2:-}"
      shift
      ;;
    --stack)
      stack="${2:-}"
      shift
      ;;
    *)
      echo "usage: localstack-smoke.sh [--dry-run] [--auth iam|none] [--stack NAME] [--keep]" >&2
      exit 2
      ;;
  esac
  shift
done
case "$auth" in iam | none) ;; *)
  echo "--auth must be iam or none, got \"$auth\"" >&2
  exit 2
  ;;
esac

localstack_env
api_step=(npx --no-install tsx scripts/localstack-smoke-api.ts)
kaj=(npx --no-install kaj)
target=(--stack "$stack" --endpoint-url "$LOCALSTACK_ENDPOINT")
# Signed with LocalStack's test/test keys for its region under IAM auth; unsigned without auth.
sign=()
if [ "$auth" = iam ]; then sign=(--region "$AWS_REGION"); fi

run bash scripts/localstack-probe.sh --api rest

teardown() {
  if [ "$keep" = 1 ]; then
    echo "kept stack $stack (--keep): npx cdklocal destroy --force $stack removes it"
  else
    run npx --no-install cdklocal destroy --force --no-notices -c "kaj:stackName=$stack" "$stack"
  fi
}
trap teardown EXIT

run bash scripts/localstack-deploy.sh --api rest -c "kaj:stackName=$stack" -c "kaj:authMode=$auth" \
  -c kaj:retainData=false -c kaj:deletionProtection=false

capture API_URL "${api_step[@]}" api-url "${target[@]}"
echo "API: $API_URL"

# 3. A task through the API, to success.
capture TASK "${api_step[@]}" submit --api-url "$API_URL" ${sign[@]+"${sign[@]}"} --type send_email \
  --payload '{"to":"ada@example.com","subject":"smoke"}'
run "${api_step[@]}" wait --api-url "$API_URL" ${sign[@]+"${sign[@]}"} --task-id "$TASK" --expect succeeded

# 4. A dead letter: both attempts fail (the simulated provider is down for two attempts), …
capture DEAD "${api_step[@]}" submit --api-url "$API_URL" ${sign[@]+"${sign[@]}"} --type send_email --max-attempts 2 \
  --payload '{"to":"ada@example.com","subject":"smoke dead letter","simulate":{"transient_failures":2}}'
run "${api_step[@]}" wait --api-url "$API_URL" ${sign[@]+"${sign[@]}"} --task-id "$DEAD" --expect failed \
  --timeout-seconds 180
run "${kaj[@]}" dlq list "${target[@]}" --type send_email
# … redriven with its attempts kept, so the third attempt is the first the provider lets through.
run "${kaj[@]}" dlq redrive "${target[@]}" --type send_email --keep-attempts --reason "localstack smoke" --yes
run "${api_step[@]}" wait --api-url "$API_URL" ${sign[@]+"${sign[@]}"} --task-id "$DEAD" --expect succeeded
if [ "$DRY_RUN" = 1 ]; then
  echo "dry run: the commands above were printed, none was run"
else
  echo "smoke passed on LocalStack: submit, run, dead letter, redrive (stack $stack, auth $auth)"
fi
