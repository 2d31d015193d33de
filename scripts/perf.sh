#!/usr/bin/env bash
# The automation's speed, measured on rehearsal hosts (docs/performance.md): overhead against the
# bare tutorial commands, no-op rerun, 1 vs 4 hosts, readiness lag. Takes ~12 min on 2 cores.
#   scripts/perf.sh [--repeat N] [--skip-scaling] [--keep]
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
eagle3_venv requirements.txt
eagle3_activate
exec python scripts/perf/perf.py "$@"
