#!/usr/bin/env python3
"""The rehearsal's EAGLE3 speedup as a distribution (docs/performance.md, "Speedup margin").

On a converged rehearsal host (site.yml has run on it: units, models, dataset in place), in
rounds: start the installed vllm-baseline unit, run the rehearsal's benchmark --per-round times,
stop it; the same for vllm-eagle3. Pair i of a round is (baseline run i, EAGLE3 run i); its
speedup is EAGLE3 output_throughput / baseline output_throughput, the report's speedup gate.
With --busy K, the last K runs of every round of both profiles run while a CPU hog spins on the
controller (one process per core, at normal priority), so the machine is under load for both
sides of those pairs.

The benchmark is the one the vllm_bench role runs in the rehearsal (inventories/rehearsal):
`vllm bench serve --dataset-name sonnet --sonnet-input-len 512 --sonnet-output-len 128
--num-prompts 50 --max-concurrency 2 --temperature 0`, against the unit's port.

usage: scripts/perf.sh --speedup [--host NAME] [--port PORT] [--rounds R] [--per-round N] [--busy K] [--profile P]

--profile names the speculative profile to pair with the baseline (default eagle3; after a k sweep,
eagle3-k3 etc.).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("EAGLE3_ARTIFACTS", ROOT / "artifacts")) / "perf"
VENV = "/opt/eagle3/venv"
MODELS = "/var/lib/eagle3/models"


def log(msg: str) -> None:
    print(f"{dt.datetime.now():%H:%M:%S} speedup: {msg}", flush=True)


def on_host(host: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", "exec", host, *argv], capture_output=True, text=True, check=check)


def wait_ready(host: str, unit: str, port: int, timeout: float = 900) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        state = on_host(host, "systemctl", "is-active", unit, check=False).stdout.strip()
        if state == "failed":
            sys.exit(f"{unit} failed on {host}")
        probe = on_host(host, "python3", "-c", "import urllib.request,sys;"
                        f"sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:{port}/health',timeout=2).status==200 else 1)",
                        check=False)
        if probe.returncode == 0:
            return time.monotonic() - start
        time.sleep(1)
    sys.exit(f"{unit} not ready on {host} after {timeout} s")


def bench(host: str, port: int, label: str) -> dict:
    served = json.loads(on_host(host, "cat", f"{MODELS}/manifest.json").stdout)  # the models in use
    path = f"/tmp/speedup-{label}.json"
    on_host(host, "rm", "-f", path)
    model = on_host(host, "sh", "-c", f"grep -h '^served-model-name:' /etc/eagle3/baseline.yaml | cut -d' ' -f2-").stdout.strip()
    proc = on_host(host, "env", "HF_HUB_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1",
                   f"{VENV}/bin/vllm", "bench", "serve", "--base-url", f"http://127.0.0.1:{port}",
                   "--model", model.strip("'\""), "--tokenizer", f"{MODELS}/target",
                   "--dataset-name", "sonnet", "--dataset-path", f"{MODELS}/dataset/sonnet.txt",
                   "--sonnet-input-len", "512", "--sonnet-output-len", "128", "--num-prompts", "50",
                   "--max-concurrency", "2", "--temperature", "0",
                   "--save-result", "--result-dir", "/tmp", "--result-filename", f"speedup-{label}.json",
                   check=False)
    if proc.returncode != 0:
        sys.exit(f"vllm bench serve failed on {host}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    result = json.loads(on_host(host, "cat", path).stdout)
    keys = ("output_throughput", "median_tpot_ms", "median_ttft_ms", "duration", "completed",
            "spec_decode_acceptance_rate", "spec_decode_acceptance_length")
    return {"models": served.get("files", {}).get("target/model.safetensors", "")[:12],
            **{k: result.get(k) for k in keys}}


def spin() -> None:
    while True:
        pass


def profile_runs(host: str, port: int, profile: str, runs: int, busy: int, rnd: int) -> list[dict]:
    unit = f"vllm-{profile}.service"
    on_host(host, "systemctl", "start", unit)
    try:
        ready = wait_ready(host, unit, port)
        log(f"round {rnd}: {unit} ready in {ready:.0f} s")
        out = []
        for i in range(runs):
            loaded = i >= runs - busy
            hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(os.cpu_count() or 1)] if loaded else []
            for hog in hogs:
                hog.start()
            try:
                row = bench(host, port, f"{profile}-{rnd}-{i}")
            finally:
                for hog in hogs:  # only the processes this script started
                    hog.kill()
                    hog.join()
            row.update(round=rnd, run=i, busy=loaded)
            log(f"round {rnd} {profile} run {i}{' (busy)' if loaded else ''}: {row['output_throughput']:.1f} tok/s, "
                f"TPOT {row['median_tpot_ms']:.2f} ms, TTFT {row['median_ttft_ms']:.0f} ms")
            out.append(row)
        return out
    finally:
        on_host(host, "systemctl", "stop", unit, check=False)


def summary(values: list[float]) -> dict:
    return {"n": len(values), "min": round(min(values), 3), "median": round(statistics.median(values), 3),
            "max": round(max(values), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="rehearsal-1", help="a converged rehearsal host (container name)")
    parser.add_argument("--port", type=int, default=8000, help="its eagle3_port")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--per-round", type=int, default=5, help="benchmark runs per profile and round")
    parser.add_argument("--busy", type=int, default=2, help="runs per round under a CPU hog on every core")
    parser.add_argument("--profile", default="eagle3", help="the speculative profile (its unit vllm-<profile>)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    pairs = []
    for rnd in range(1, args.rounds + 1):
        base = profile_runs(args.host, args.port, "baseline", args.per_round, args.busy, rnd)
        spec = profile_runs(args.host, args.port, args.profile, args.per_round, args.busy, rnd)
        for b, s in zip(base, spec):
            pairs.append({"round": rnd, "run": b["run"], "busy": b["busy"], "baseline": b, "eagle3": s,
                          "speedup": round(s["output_throughput"] / b["output_throughput"], 3)})
            log(f"pair {rnd}.{b['run']}{' (busy)' if b['busy'] else ''}: {pairs[-1]['speedup']}x")
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    figures = {"date": stamp, "machine": f"{os.cpu_count()} CPUs, {mem / 1048576:.0f} GiB RAM, {os.uname().machine}",
               "command": "scripts/perf.sh --speedup " + " ".join(sys.argv[1:]), "host": args.host, "profile": args.profile,
               "speedup_all": summary([p["speedup"] for p in pairs]),
               "speedup_idle": summary([p["speedup"] for p in pairs if not p["busy"]]) if any(not p["busy"] for p in pairs) else None,
               "speedup_busy": summary([p["speedup"] for p in pairs if p["busy"]]) if any(p["busy"] for p in pairs) else None,
               "pairs": pairs}
    path = OUT / f"speedup-{stamp}.json"
    path.write_text(json.dumps(figures, indent=2) + "\n")
    log(f"speedup over {len(pairs)} pairs: {figures['speedup_all']} (idle {figures['speedup_idle']}, "
        f"busy {figures['speedup_busy']}); saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
