#!/usr/bin/env bash
# The whole test suite: static checks (scripts/lint.sh), unit tests, the molecule scenarios on real hosts.
#   scripts/test.sh              everything
#   scripts/test.sh static       lint, argument_specs, syntax, pytest only
#   scripts/test.sh SCENARIO...  only those molecule scenarios (with the static checks and pytest beside them)
#   scripts/test.sh unit         the unit lane alone: tests/unit under coverage.py, no Ansible, no container
#                                (docs/testing.md, "The unit lane"); the suite's pytest part runs these tests too
#   scripts/test.sh integration  tests/integration alone: Ansible on the controller and local hosts, moto, no container
source "$(dirname "$0")/env.sh"

# The unit lane: tests/unit on two pytest-xdist workers, each under coverage.py (tests/conftest.py starts it;
# .coveragerc: the lines of plugins/module_utils and plugins/filter, each worker's data combined); fails under its
# floor (fail_under) or over its time (UNIT_BUDGET s). It needs no apt package and no collection build: only the venv.
UNIT_BUDGET=60
unit_lane() {
  local data t0 rc secs cpu total
  data="$(mktemp -d "${TMPDIR:-/tmp}/eagle3-unit-coverage.XXXXXX")"
  export COVERAGE_FILE="$data/.coverage"
  t0=$(date +%s)
  set +e
  # A subshell, so that `times` reports the CPU of this run's processes only.
  ( EAGLE3_UNIT_COVERAGE="$EAGLE3_ROOT/.coveragerc" pytest -q -p no:cacheprovider tests/unit -n 2 --durations=5
    rc=$?; times >"$data/times"; exit "$rc" )
  rc=$?
  set -e
  secs=$(( $(date +%s) - t0 ))
  cpu=$(children_cpu "$data/times")
  coverage combine -q
  total=$(coverage report --format=total --fail-under=0)
  # The files below 100 %, the least covered first; exit status 2 under the floor.
  coverage report --skip-covered || { [ "$rc" -ne 0 ] || rc=2; }
  rm -rf "$data"
  eagle3_log "unit: $( [ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") in $secs s ($cpu CPU-s), line coverage of plugins/module_utils and plugins/filter $total % (floor: .coveragerc fail_under)"
  [ "$rc" -eq 0 ] || return "$rc"
  [ "$secs" -le "$UNIT_BUDGET" ] || { eagle3_log "unit: over its budget of $UNIT_BUDGET s (a loaded machine, or a slow test to move out of tests/unit)"; return 1; }
}
# FILE: the user + system CPU seconds of a shell's waited-for children, from what bash's `times` wrote to FILE (its
# second line). `times` itself must run in that shell: in $(...) it would report a new subshell's, nothing.
children_cpu() { awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] }; printf "%d", t }' "$1"; }
if [ "${1:-}" = unit ]; then
  eagle3_venv requirements-dev.txt
  eagle3_activate
  unit_lane
  exit $?
fi
# The integration tests alone: tests/integration (Ansible on the controller and local hosts, moto; no container),
# one file per worker as the suite's pytest part runs them.
if [ "${1:-}" = integration ]; then
  eagle3_venv requirements-dev.txt
  eagle3_activate
  exec pytest -q -p no:cacheprovider tests/integration --durations=15 -n auto --maxprocesses 4 --dist loadfile
fi

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
if [ "${#SCENARIOS[@]}" -gt 0 ]; then
  # The scenarios run the collection as an ops team installs it: built from this checkout, installed into a fresh
  # path (the scenarios' shared .config/molecule/config.yml and the tests' own ansible-playbook runs use
  # EAGLE3_COLLECTIONS).
  EAGLE3_COLLECTIONS="$(mktemp -d "${TMPDIR:-/tmp}/eagle3-collections.XXXXXX")"
  export EAGLE3_COLLECTIONS
  cleanup() { rm -rf "$EAGLE3_COLLECTIONS"; }
  trap cleanup EXIT
  eagle3_collection_install "$EAGLE3_COLLECTIONS"
fi

# One stage: molecule default in the foreground, shown live (its converge and its roll gate a measured speedup), and
# beside it, at the lowest priority (LOWEST below), the parts that time nothing: the static checks (scripts/lint.sh:
# they read the checkout only, so they no longer hold every other part back for a minute and more), pytest, molecule
# ec2 (moto) and molecule neuron (fixture repositories). They take what default leaves idle, so its timing is its
# own; they share no host name, port or results directory with it or each other (default: its hosts on
# :2211/:2219, :8100, :9190; ec2: moto on :5055; neuron: its host on :2221, repositories on :8741-8742; pytest: free
# ports and hosts that are never created). docs/testing.md, "The suite's time".
# EAGLE3_TEST_PARALLEL=0 runs everything one after the other, at normal priority.
TIMED=()
QUIET=(lint pytest)
for scenario in "${SCENARIOS[@]}"; do
  case "$scenario" in default) TIMED+=("$scenario") ;; *) QUIET+=("$scenario") ;; esac
done
part_log() { case "$1" in pytest|lint) echo "$ARTIFACTS/$1.log" ;; *) echo "$ARTIFACTS/molecule-$1.log" ;; esac; }
part_command() {
  case "$1" in
    lint) echo "bash $EAGLE3_ROOT/scripts/lint.sh" ;;
    # One file per worker (module fixtures stay whole), a worker per core up to 4. In one process it was the suite's
    # last part, on one core of two for 720 s after default ended (2026-12-06, 930f22f); alone on 2 cores, 554 s.
    pytest) echo "pytest -q -p no:cacheprovider tests --durations=15 -n auto --maxprocesses 4 --dist loadfile" ;;
    *) echo "molecule test -s $1" ;;
  esac
}
# The parts at the lowest priority: `nice -n 19`, in a session of their own whose autogroup is niced too. Under the
# kernel's autogroup scheduling (sched_autogroup_enabled, on here and on many distributions' kernels) a nice value counts
# only inside its session's group, and that group competes as an equal with each cgroup beside it: nice alone left
# this script's whole session (the niced parts with default's controller) one half of the cores against the
# containers' cgroup, so default's host got about one core while they ran (its vLLM starts took 45-60 s against 21 s
# on the idle machine, 2026-12-06). setsid -w: a new session and autogroup, waited for.
LOWEST=(setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' lowest)
run_part() {  # NAME [live|nice]: runs it, its output in part_log NAME (and on stdout if live); its exit status,
  local name="$1" t0 rc prefix=(env)  # seconds and CPU seconds (on the controller) in $ARTIFACTS/NAME.rc
  [ "${2:-}" = nice ] && prefix=("${LOWEST[@]}")
  t0=$(date +%s)
  set +e
  if [ "${2:-}" = live ]; then
    $(part_command "$name") 2>&1 | tee "$(part_log "$name")"
  else
    "${prefix[@]}" $(part_command "$name") >"$(part_log "$name")" 2>&1
  fi
  rc=$?
  set -e
  times >"$ARTIFACTS/$name.times"
  echo "$rc $(( $(date +%s) - t0 )) $(children_cpu "$ARTIFACTS/$name.times")" >"$ARTIFACTS/$name.rc"
  rm -f "$ARTIFACTS/$name.times"
}
show_part() {  # NAME [live]: prints its log (unless it was shown live) and result; returns its exit status
  local rc secs cpu
  read -r rc secs cpu <"$ARTIFACTS/$1.rc"
  if [ "${2:-}" != live ]; then
    printf '\n' >&2
    eagle3_log "$(part_command "$1") ($(part_log "$1")):"
    cat "$(part_log "$1")"
  fi
  eagle3_log "$1: $( [ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") in $secs s ($cpu CPU-s on the controller)"
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
