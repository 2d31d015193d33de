#!/usr/bin/env bash
# The automation's speed, measured on rehearsal hosts (docs/performance.md): overhead against the
# bare tutorial commands, no-op rerun, 1 vs 4 hosts, readiness lag. Takes ~12 min on 2 cores.
#   scripts/perf.sh [--repeat N] [--skip-scaling] [--keep]
#   scripts/perf.sh --speedup [--host NAME] [--port PORT] [--rounds R] [--per-round N] [--busy K]
#     the EAGLE3 speedup as a distribution on a converged rehearsal host (scripts/perf/speedup.py)
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
eagle3_venv requirements.txt
eagle3_activate
if [ "${1:-}" = --speedup ]; then
  shift
  exec python scripts/perf/speedup.py "$@"
fi
exec python scripts/perf/perf.py "$@"
