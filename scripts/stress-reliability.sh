#!/usr/bin/env bash
# Runs the reliability suites (test/integration/reliability) N times in a row, optionally with a
# CPU hog beside them, and stops at the first failing run. A suite that fails one run in twenty
# blocks every submission: run this before calling a flaky test fixed.
#
#   bash scripts/stress-reliability.sh [-n RUNS] [--hog [N]] [--keep-logs] [-- VITEST_ARGS...]
#
#   -n RUNS       how many runs (default 20)
#   --hog [N]     keep N busy-looping node processes (default 1) running beside the suites
#   --keep-logs   keep every run's log, not only the failing one's
#   -- ARGS       passed to `vitest run` instead of the default `test/integration/reliability`
#                 (e.g. `-- test/integration/reliability/sdk-faults.test.ts -t moto`)
#
# Prints one line per run and a summary (passed/failed, wall time); exits 1 if a run failed,
# leaving that run's full vitest output in the log directory it names.
set -uo pipefail

runs=20
hogs=0
keep=0
vitest_args=(test/integration/reliability)
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n | --runs) runs="$2"; shift 2 ;;
    --hog)
      if [[ "${2:-}" =~ ^[0-9]+$ ]]; then hogs="$2"; shift 2; else hogs=1; shift; fi ;;
    --keep-logs) keep=1; shift ;;
    --) shift; vitest_args=("$@"); break ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "-n needs a positive number, got '$runs'" >&2; exit 2; }

cd "$(dirname "$0")/.."
logs="$(mktemp -d "${TMPDIR:-/tmp}/kaj-stress-XXXXXX")"
hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null; done
  hog_pids=()
}
trap 'stop_hogs' EXIT
trap 'stop_hogs; echo; echo "interrupted"; exit 130' INT TERM

for ((i = 0; i < hogs; i++)); do
  node -e 'for (;;) {}' &
  hog_pids+=("$!")
done

echo "stress: ${runs} run(s) of vitest run ${vitest_args[*]}; CPU hogs: ${hogs}; $(nproc) core(s); logs in ${logs}"
passed=0
failed=0
started=$(date +%s)
for ((run = 1; run <= runs; run++)); do
  log="${logs}/run-${run}.log"
  t0=$(date +%s)
  if npx vitest run "${vitest_args[@]}" >"$log" 2>&1; then
    passed=$((passed + 1))
    summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *Tests ' | tr -s ' ' | tail -1)
    echo "run ${run}/${runs}: pass in $(($(date +%s) - t0)) s —${summary}"
    [[ $keep -eq 1 ]] || rm -f "$log"
  else
    failed=$((failed + 1))
    echo "run ${run}/${runs}: FAIL in $(($(date +%s) - t0)) s — full output in ${log}"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ FAIL |^[A-Za-z]*Error[:\[ ]' | head -20 | sed 's/^/    /'
    break
  fi
done
elapsed=$(($(date +%s) - started))
stop_hogs
echo "stress: ${passed} passed, ${failed} failed of ${runs} run(s) in $((elapsed / 60)) min $((elapsed % 60)) s (CPU hogs: ${hogs})"
if [[ $failed -eq 0 && $keep -eq 0 ]]; then rmdir "$logs" 2>/dev/null; fi
[[ $failed -eq 0 ]]
