#!/usr/bin/env bash
# The whole test suite: static checks, unit tests, then the molecule scenarios on real hosts.
#   scripts/test.sh              everything
#   scripts/test.sh static       lint, argument_specs, syntax, pytest only
#   scripts/test.sh SCENARIO...  only those molecule scenarios (after the static checks)
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
# chromium (optional): the report test opens report.html headless and keeps a screenshot in artifacts/.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    eagle3_log "apt-get install chromium (report screenshot test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
      || eagle3_log "chromium could not be installed: the screenshot part of the report test is skipped"
  else
    eagle3_log "chromium missing and not root: the screenshot part of the report test is skipped"
  fi
fi
eagle3_venv requirements-dev.txt
eagle3_activate

ARTIFACTS="${EAGLE3_ARTIFACTS:-$EAGLE3_ROOT/artifacts}"
mkdir -p "$ARTIFACTS"
SCENARIOS=(ec2 neuron default)
[ "$#" -gt 0 ] && SCENARIOS=("$@")
[ "${1:-}" = static ] && SCENARIOS=()

start=$(date +%s)
cleanup() { :; }  # replaced below when a collection is installed into a temporary path
eagle3_log "yamllint --strict"
yamllint --strict .
eagle3_log "ansible-lint (production profile)"
ansible-lint --offline -q
eagle3_log "argument_specs == defaults"
python scripts/check_argspecs.py roles
eagle3_log "syntax check"
ansible-playbook --syntax-check site.yml eagle3.trn2.site eagle3.trn2.teardown >/dev/null
if [ "${#SCENARIOS[@]}" -gt 0 ]; then
  # The scenarios run the collection as an ops team installs it: built from this checkout, installed
  # into a fresh path (molecule.yml and the tests' own ansible-playbook runs use EAGLE3_COLLECTIONS).
  EAGLE3_COLLECTIONS="$(mktemp -d "${TMPDIR:-/tmp}/eagle3-collections.XXXXXX")"
  export EAGLE3_COLLECTIONS
  cleanup() { rm -rf "$EAGLE3_COLLECTIONS"; }
  trap cleanup EXIT
  eagle3_collection_install "$EAGLE3_COLLECTIONS"
fi

# One stage: molecule default in the foreground, shown live (its converge and its roll gate a measured speedup), and
# beside it, at `nice -n 19`, the parts that time nothing: pytest, molecule ec2 (moto) and molecule neuron (fixture
# repositories). Niced, they take only what default leaves idle (about 30 % of 2 cores), so default's timing is its
# own; they share no host name, port or results directory with it or each other (default: its hosts on
# :2211/:2219, :8100, :9190; ec2: moto on :5055; neuron: its host on :2221, repositories on :8741-8742; pytest: free
# ports and hosts that are never created). docs/testing.md, "The suite's time".
# EAGLE3_TEST_PARALLEL=0 runs everything one after the other, at normal priority.
TIMED=()
QUIET=(pytest)
for scenario in "${SCENARIOS[@]}"; do
  case "$scenario" in default) TIMED+=("$scenario") ;; *) QUIET+=("$scenario") ;; esac
done
part_log() { if [ "$1" = pytest ]; then echo "$ARTIFACTS/pytest.log"; else echo "$ARTIFACTS/molecule-$1.log"; fi; }
part_command() {
  if [ "$1" = pytest ]; then echo "pytest -q -p no:cacheprovider tests --durations=15"
  else echo "molecule test -s $1"; fi
}
run_part() {  # NAME [live|nice]: runs it, its output in part_log NAME (and on stdout if live), its exit status and
  local name="$1" t0 rc prefix=(env)  # seconds in $ARTIFACTS/NAME.rc
  [ "${2:-}" = nice ] && prefix=(nice -n 19)
  t0=$(date +%s)
  set +e
  if [ "${2:-}" = live ]; then
    $(part_command "$name") 2>&1 | tee "$(part_log "$name")"
  else
    "${prefix[@]}" $(part_command "$name") >"$(part_log "$name")" 2>&1
  fi
  rc=$?
  set -e
  echo "$rc $(( $(date +%s) - t0 ))" >"$ARTIFACTS/$name.rc"
}
show_part() {  # NAME [live]: prints its log (unless it was shown live) and result; returns its exit status
  local rc secs
  read -r rc secs <"$ARTIFACTS/$1.rc"
  if [ "${2:-}" != live ]; then
    printf '\n' >&2
    eagle3_log "$(part_command "$1") ($(part_log "$1")):"
    cat "$(part_log "$1")"
  fi
  eagle3_log "$1: $( [ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") in $secs s"
  return "$rc"
}
still_running() {  # NAME...: one line for each part that has not ended yet, with the last line it printed
  local name
  for name in "$@"; do
    [ -e "$ARTIFACTS/$name.rc" ] && continue
    eagle3_log "$name still running, $(( $(date +%s) - start )) s in; its last line: $(grep -v '^[[:space:]]*$' "$(part_log "$name")" 2>/dev/null | tail -n 1 | cut -c1-160)"
  done
}
for name in "${QUIET[@]}" "${TIMED[@]}"; do rm -f "$ARTIFACTS/$name.rc" "$(part_log "$name")"; done

failed=()
if [ "${EAGLE3_TEST_PARALLEL:-1}" = 1 ]; then
  mode=plain
  [ "${#TIMED[@]}" -gt 0 ] && mode=nice
  eagle3_log "side by side${TIMED:+ at nice 19, beside ${TIMED[*]}}: ${QUIET[*]} (logs in $ARTIFACTS, printed when each ends)"
  pids=()
  for name in "${QUIET[@]}"; do run_part "$name" "$mode" & pids+=($!); done
  # A line a minute on what still runs in the background, between default's own lines.
  ( while sleep 60; do still_running "${QUIET[@]}"; done ) & ticker=$!
  trap 'kill "$ticker" 2>/dev/null || true; cleanup' EXIT
  for scenario in "${TIMED[@]}"; do
    eagle3_log "molecule test -s $scenario (in the foreground: it measures speed)"
    run_part "$scenario" live
    show_part "$scenario" live || failed+=("$scenario")
  done
  wait "${pids[@]}" || true
  kill "$ticker" 2>/dev/null || true
  for name in "${QUIET[@]}"; do show_part "$name" || failed+=("$name"); done
else
  for name in "${QUIET[@]}" "${TIMED[@]}"; do run_part "$name"; show_part "$name" || failed+=("$name"); done
fi
[ "${#failed[@]}" -eq 0 ] || { eagle3_log "failed: ${failed[*]}"; exit 1; }
eagle3_log "all tests passed in $(( $(date +%s) - start )) s"
