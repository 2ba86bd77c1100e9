# shellcheck shell=bash
# Shared by scripts/localstack-*.sh (sourced, not run): the LocalStack endpoint, the environment
# cdklocal and the AWS SDK need to reach it without DNS, and `run`, which prints instead of
# running under --dry-run.
#
# The endpoint is 127.0.0.1, not localhost.localstack.cloud: that name is public DNS pointing at
# 127.0.0.1, so it does not resolve offline or behind corporate DNS that filters it, and cdklocal's
# default endpoints use it (`cdk bootstrap` then fails with "NoCredentials"). S3 is addressed
# path-style (http://127.0.0.1:4566/<bucket>/…), since virtual-host buckets need that name's
# wildcard subdomains.

LOCALSTACK_ENDPOINT="${LOCALSTACK_ENDPOINT:-http://127.0.0.1:4566}"
LOCALSTACK_ENDPOINT="${LOCALSTACK_ENDPOINT%/}"
LOCALSTACK_CONTAINER="${LOCALSTACK_CONTAINER:-kaj-localstack}"
LOCALSTACK_ACCOUNT=000000000000
DRY_RUN="${DRY_RUN:-0}"

# The environment every LocalStack command runs with (printed under --dry-run).
localstack_env() {
  export AWS_ENDPOINT_URL="$LOCALSTACK_ENDPOINT"
  export AWS_ENDPOINT_URL_S3="$LOCALSTACK_ENDPOINT"
  export AWS_S3_FORCE_PATH_STYLE=true
  export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  unset AWS_SESSION_TOKEN AWS_PROFILE
  export AWS_REGION="${AWS_REGION:-us-east-1}"
  export AWS_DEFAULT_REGION="$AWS_REGION"
  # cdklocal removes every other AWS_* variable before it runs cdk (AWS_ENDPOINT_URL* it keeps).
  export AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION,AWS_S3_FORCE_PATH_STYLE"
  export CDK_DISABLE_CLI_TELEMETRY=true
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ export AWS_ENDPOINT_URL=%s AWS_ENDPOINT_URL_S3=%s AWS_S3_FORCE_PATH_STYLE=true' \
      "$AWS_ENDPOINT_URL" "$AWS_ENDPOINT_URL_S3"
    printf ' AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=%s AWS_ENVAR_ALLOWLIST=%s\n' \
      "$AWS_REGION" "$AWS_ENVAR_ALLOWLIST"
  fi
}

# Runs a command, or prints it (`+ cmd args…`, shell-quoted) under --dry-run.
run() {
  if [ "$DRY_RUN" = 1 ]; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# `capture NAME cmd…`: NAME=$(cmd…), or under --dry-run prints the command and sets NAME to
# `<NAME>` (what the later printed commands then show).
capture() {
  local name="$1"
  shift
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ %s=$(' "$name"
    printf '%q ' "$@"
    printf ')\n'
    printf -v "$name" '<%s>' "$name"
  else
    local value
    value="$("$@")"
    printf -v "$name" '%s' "$value"
  fi
}

# Checks an --api value: http or rest.
check_api_kind() {
  case "$1" in
    http | rest) ;;
    *)
      echo "--api must be http or rest, got \"$1\"" >&2
      exit 2
      ;;
  esac
}
