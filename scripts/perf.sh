#!/usr/bin/env bash
# The automation's speed, measured on rehearsal hosts (docs/performance.md): overhead against the
# bare tutorial commands, no-op rerun, 1 vs 4 hosts, readiness lag. Takes ~12 min on 2 cores.
#   scripts/perf.sh [--repeat N] [--skip-scaling] [--keep]
#   scripts/perf.sh --speedup [--host NAME] [--port PORT] [--rounds R] [--per-round N] [--busy K]
#     the EAGLE3 speedup as a distribution on a converged rehearsal host (scripts/perf/speedup.py)
#   scripts/perf.sh --stragglers [--hosts NAME:PORT,NAME:PORT] [--delay D] [--prompts N] [--checkout DIR] [--no-converge] [--keep]
#                    [--own-cores]
#     fleet wall time vs the slowest host's own time with cross-step delays (scripts/perf/stragglers.py)
#   scripts/perf.sh --compile-cache [--hosts NAME:PORT,NAME:PORT] [--prompts N] [--no-converge] [--keep]
#     a first start with the canary's shipped compile cache vs the canary's cold one (scripts/perf/compile_cache.py)
#   scripts/perf.sh --peer [--host NAME:PORT] [--prompts N] [--rounds R] [--no-converge] [--keep]
#     our benchmark phase vs `vllm bench sweep serve` doing the same two profiles on the same host (scripts/perf/peer.py)
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
eagle3_venv requirements.txt
eagle3_activate
if [ "${1:-}" = --speedup ]; then
  shift
  exec python scripts/perf/speedup.py "$@"
fi
if [ "${1:-}" = --stragglers ]; then
  shift
  exec python scripts/perf/stragglers.py "$@"
fi
if [ "${1:-}" = --peer ]; then
  shift
  exec python scripts/perf/peer.py "$@"
fi
if [ "${1:-}" = --compile-cache ]; then
  shift
  exec python scripts/perf/compile_cache.py "$@"
fi
exec python scripts/perf/perf.py "$@"
