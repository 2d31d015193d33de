#!/usr/bin/env python3
"""The benchmark phase against its peer (what our checks and records cost over the plain tool; docs/performance.md): our
benchmark play against `vllm bench sweep serve`, the tool a vLLM user would reach for instead, doing the same two
profiles with the same flags on the same host; goal <= 1.05.

On one converged rehearsal host, in one run, alternating (ours, peer, then peer, ours, ... to cancel drift):
  ours: playbooks/benchmark.yml --limit HOST,localhost (a run id of its own each time): per profile, start the unit,
        wait for /health, smoke test and greedy completions, `vllm bench serve`, fetch the JSON, stop; wall time on the
        controller;
  peer: `vllm bench sweep serve` on the host, as the service user with the unit's environment file, the serve command
        the units run (`vllm serve --config /etc/eagle3/baseline.yaml`, with its --host and --port repeated on the
        command line, where the sweep looks for the address to poll), the EAGLE3 profile as a serve parameter
        (`--speculative-config` from /etc/eagle3/eagle3.yaml), and the bench flags read back from our own run's client
        (the Namespace line `vllm bench serve` prints): it starts a server per setting, waits for /health, benchmarks,
        kills it; wall time of the command.
ratio = median(ours) / median(peer). The sweep's own results are kept next to ours (artifacts/perf/peer-<date>/).

usage: scripts/perf.sh --peer [--host NAME:PORT] [--prompts N] [--rounds R] [--no-converge] [--keep]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lab  # noqa: E402  (same directory: inventory(), playbook(), run_book(), machine(), log(), save_figures())

from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as layout  # noqa: E402  (lab: sys.path)

VENV = "/opt/eagle3/venv"
ETC = "/etc/eagle3"
HOME = "/var/lib/eagle3"
# vllm bench serve's options (its Namespace attribute names) that set the workload and the client; the peer passes
# exactly these, with our run's values.
BENCH_OPTIONS = ("base_url", "model", "tokenizer", "dataset_name", "dataset_path", "num_prompts", "max_concurrency",
                 "sonnet_input_len", "sonnet_output_len", "sonnet_prefix_len", "custom_output_len", "temperature", "seed")


def host_sh(host: str, script: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", "exec", host, "sh", "-c", script], capture_output=True, text=True, check=check)


def client_args(log: str) -> dict[str, str]:
    """Our client's options from the Namespace(...) line vllm bench serve prints at its start."""
    line = next(line for line in log.splitlines() if line.startswith("Namespace("))
    # Lists first: our --metadata list holds NAME=value strings (temperature=0, ...) that are not the client's options.
    line = re.sub(r"\[[^\]]*\]", "[]", line)
    found = dict(re.findall(r"(\w+)=('(?:[^'\\]|\\.)*'|None|[^,()]+)", line))
    args = {}
    for name in BENCH_OPTIONS:
        value = found.get(name)
        if value is None or value == "None":
            continue
        args[name] = value[1:-1] if value.startswith("'") else value
    return args


def bench_command(args: dict[str, str]) -> str:
    argv = [f"{VENV}/bin/vllm", "bench", "serve"]
    for name, value in args.items():
        argv += ["--" + name.replace("_", "-"), value]
    return shlex.join(argv)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="perf-peer-1:8351", help="a rehearsal host NAME:SERVER_PORT (sshd on SERVER_PORT - 6000)")
    parser.add_argument("--prompts", type=int, default=lab.NUM_PROMPTS, help="eagle3_bench_num_prompts (the tutorial's 50)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; each runs ours and the peer once, in alternating order")
    parser.add_argument("--no-converge", action="store_true", help="the host is converged already")
    parser.add_argument("--keep", action="store_true", help="keep the host (default: teardown at the end)")
    args = parser.parse_args()
    figures = measure(args.host, args.prompts, args.rounds, converge=not args.no_converge, keep=args.keep,
                      command="scripts/perf.sh --peer " + " ".join(sys.argv[1:]))
    return 0 if figures.get("ok") else 1


def measure(host_port: str, prompts: int, rounds: int, converge: bool, keep: bool, command: str) -> dict:
    """Ours against the peer on host NAME:SERVER_PORT, `rounds` times each; the figures (saved as peer-<date>.json)."""
    host, port = host_port.split(":")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results = Path(os.environ.get("EAGLE3_RESULTS_DIR", lab.OUT / "results"))
    results.mkdir(parents=True, exist_ok=True)
    work = lab.OUT / f"peer-{stamp}"
    inv = lab.inventory(work / "one", {host: int(port)})
    bench = ["-e", json.dumps({"eagle3_bench_num_prompts": prompts})]
    figures: dict = {"date": stamp, "machine": lab.machine(), "revision": subprocess.run(
        ["git", "-C", str(lab.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "command": command, "host": host, "prompts": prompts,
        "ours_s": [], "peer_s": [], "order": []}
    try:
        if converge:
            lab.log(f"converging {host} (provision, install, models, units)")
            wall, rc, tail = lab.run_book(lab.ROOT, inv, "site.yml", f"peer-conv-{stamp}", results,
                                      "--tags", "provision,vllm,models,service")
            if rc:
                sys.exit(f"converge failed (rc {rc}):\n{tail}")
        eagle3 = yaml.safe_load(host_sh(host, f"cat {ETC}/eagle3.yaml").stdout)
        # The sweep finds the server's address for its readiness poll on the serve command line only (it does not
        # read --config): the config's own host and port, repeated.
        serve = f"{VENV}/bin/vllm serve --config {ETC}/baseline.yaml --host {eagle3['host']} --port {eagle3['port']}"
        params = {"baseline": {}, "eagle3": {"speculative_config": eagle3["speculative-config"]}}
        host_sh(host, f"cat > {HOME}/peer-params.json <<'EOF'\n{json.dumps(params)}\nEOF\nchown eagle3: {HOME}/peer-params.json")
        peer_cmd = None
        for rnd in range(rounds):
            # The first round runs ours first: the peer takes our client's flags from it.
            for who in (("ours", "peer") if rnd % 2 == 0 else ("peer", "ours")):
                load = os.getloadavg()[0]
                if who == "ours":
                    run_id = f"peer-ours-{stamp}-{rnd}"
                    lab.log(f"round {rnd + 1}: ours, playbooks/benchmark.yml --limit {host} (run {run_id}, load {load:.2f})")
                    # With the JSON callback: the run's calls are counted (lab.breakdown), so the gap to the peer is
                    # explained by what our phase does besides the waits both make.
                    report = lab.playbook(inv, "playbooks/benchmark.yml", run_id, *bench, "--limit", f"{host},localhost",
                                           results=results)
                    wall = report["wall"]
                    failed = sorted(f for d in layout.host_dirs(layout.run_dir(results, run_id))
                            if Path(f := layout.path_of(str(results), run_id, "failure", d.name)).exists())
                    if failed:
                        sys.exit(f"ours failed ({failed})")
                    figures.setdefault("ours_breakdown", []).append(lab.breakdown(report))
                    if peer_cmd is None:
                        log = host_sh(host, f"cat {HOME}/results/{run_id}/baseline.bench.log").stdout
                        figures["client"] = client_args(log)
                        peer_cmd = (f"{VENV}/bin/vllm bench sweep serve"
                                    f" --serve-cmd {shlex.quote(serve)}"
                                    f" --bench-cmd {shlex.quote(bench_command(figures['client']))}"
                                    f" --serve-params {HOME}/peer-params.json --num-runs 1 --server-ready-timeout 600"
                                    f" -o {HOME}/peer")
                        figures["peer_command"] = peer_cmd
                else:
                    name = f"{stamp}-{rnd}"
                    lab.log(f"round {rnd + 1}: peer, vllm bench sweep serve on {host} (experiment {name}, load {load:.2f})")
                    start = time.monotonic()
                    # The unit's environment (VLLM_CPU_KVCACHE_SPACE, VLLM_HOST_IP, HF_HUB_OFFLINE, ...) as the user.
                    proc = host_sh(host, f"cd {HOME} && set -a && . {ETC}/vllm.env && set +a && "
                                         f"exec runuser -u eagle3 -- {peer_cmd} -e {name}", check=False)
                    wall = time.monotonic() - start
                    (work / f"peer-{name}.log").write_text(proc.stdout + proc.stderr)
                    if proc.returncode:
                        sys.exit(f"vllm bench sweep serve failed (rc {proc.returncode}); see {work}/peer-{name}.log\n"
                                 + proc.stderr[-2000:])
                    out = work / f"peer-{name}"
                    out.mkdir(parents=True, exist_ok=True)
                    for profile in ("baseline", "eagle3"):
                        got = host_sh(host, f"cat {HOME}/peer/{name}/SERVE--{profile}/run=0.json").stdout
                        (out / f"{profile}.json").write_text(got)
                lab.log(f"   {wall:.1f} s")
                figures[f"{who}_s"].append(round(wall, 1))
                figures["order"].append(who)
        ours, peer = statistics.median(figures["ours_s"]), statistics.median(figures["peer_s"])
        figures["ratio"] = round(ours / peer, 3)
        figures["goal"] = 1.05
        figures["ok"] = figures["ratio"] <= 1.05
        lab.log(f"ours {figures['ours_s']} s, peer {figures['peer_s']} s: median ratio {figures['ratio']} (goal <= 1.05)")
    finally:
        if not keep:
            lab.remove_pair(lab.ROOT, inv, [host], f"peer-down-{stamp}", results)
        lab.save_figures(figures, f"peer-{stamp}")
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
