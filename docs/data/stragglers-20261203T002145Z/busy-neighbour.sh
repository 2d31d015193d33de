#!/usr/bin/env bash
# Diagnostic run 2026-12-03 00:38 UTC, after scripts/perf.sh --stragglers --delay 90 --own-cores --keep (its pair inventory): host A alone, pinned to CPU 0, while a busy loop runs in host B's container pinned to CPU 1.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
source scripts/env.sh && eagle3_activate >/dev/null
A=perf-straggler-1 B=perf-straggler-2
podman update --cpuset-cpus 0 $A >/dev/null; podman update --cpuset-cpus 1 $B >/dev/null
podman exec $A sh -c "mkdir -p /etc/systemd/system/vllm-baseline.service.d && printf '[Service]\nExecStartPre=/bin/sleep 90\n' > /etc/systemd/system/vllm-baseline.service.d/eagle3-straggler.conf && systemctl daemon-reload"
podman exec $B sh -c 'echo $$ > /run/busy.pid; exec timeout 600 sh -c "while :; do :; done"' &
BUSY=$!
sleep 2
RUN=strag-neighbour-$(date -u +%Y%m%dT%H%M%SZ)
start=$(date +%s.%N)
EAGLE3_RUN_ID=$RUN EAGLE3_RESULTS_DIR=$PWD/artifacts/perf/results ANSIBLE_FORCE_COLOR=0 \
  ansible-playbook -i artifacts/perf/stragglers-20261203T002145Z/pair playbooks/benchmark.yml --limit $A,localhost \
  -e '{"eagle3_bench_num_prompts": 10, "eagle3_bench_exclusive_window": false}' > artifacts/perf/results/$RUN.log 2>&1 || echo "rc $?"
end=$(date +%s.%N)
echo "$RUN wall $(echo "$end - $start" | bc) s"
podman exec $B sh -c 'kill $(cat /run/busy.pid)' || true
wait $BUSY || true
podman exec $A sh -c "rm -f /etc/systemd/system/vllm-baseline.service.d/eagle3-straggler.conf && systemctl daemon-reload"
podman update --cpuset-cpus 0,1 $A >/dev/null; podman update --cpuset-cpus 0,1 $B >/dev/null
