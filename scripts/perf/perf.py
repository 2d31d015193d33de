#!/usr/bin/env python3
"""Measure what the automation costs on top of the work it orchestrates (docs/performance.md).

On rehearsal hosts of this machine, in one run:
  1. overhead: the tutorial's bare commands (tutorial-bare.sh) on a fresh host vs `site.yml` on
     an identical fresh host; ratio of wall times (target <= 1.10);
  2. no-op rerun: `site.yml` again on the converged host, same run id; changed count (target 0),
     wall time (target <= 20 s per host) and the tasks it ran (ok + changed, per host; skipped apart);
  3. scaling: converge (provision, install, models, units) 1 fresh host, then 4 fresh hosts;
     ratio of wall times (target <= 1.5);
  4. readiness lag: from the server's "Application startup complete." in the journal to the end
     of the play's readiness task (target <= 2 s), for every profile started in step 1;
  5. peer: on the converged host of step 1, the benchmark phase against `vllm bench sweep serve` doing the same two
     profiles (scripts/perf/peer.py, --peer-rounds pairs; target <= 1.05).
Every host it creates is named perf-* and removed at the end (playbooks/teardown.yml).

usage: scripts/perf.sh [--repeat N] [--skip-scaling] [--peer-rounds R] [--keep]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402  (same directory: the peer's measure())
from lab import (NUM_PROMPTS, OUT, ROOT, breakdown, changed, inventory, log, machine, playbook,  # noqa: E402
                 save_figures, task_ends, task_seconds, tasks_run)

from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as layout  # noqa: E402  (lab: sys.path)

GENERATOR = ROOT / "roles/model_assets/files/make_rehearsal_models.py"


def readiness_lags(starts: list[float], ready_ends: list[float]) -> list[float]:
    """Seconds from each "Application startup complete." to the end of the readiness task that saw it."""
    return [round(end - max(s for s in starts if s <= end), 2) for end in sorted(ready_ends) if any(s <= end for s in starts)]


def startup_times(host: str) -> list[float]:
    """Epoch seconds of every "Application startup complete." in the vllm units' journal."""
    out = subprocess.run(["podman", "exec", host, "journalctl", "-o", "json", "--no-pager", "-u", "vllm-*",
                          "--grep", "Application startup complete"], capture_output=True, text=True).stdout
    return sorted(int(json.loads(line)["__REALTIME_TIMESTAMP"]) / 1e6 for line in out.splitlines() if line.strip())


def bare(host: str, port: int) -> float:
    tarball = max((Path.home() / ".cache/eagle3/wheelhouse").glob("cpu-*.tar"), key=lambda p: p.stat().st_mtime)
    start = time.monotonic()  # shipping the wheelhouse counts, as it does for site.yml
    for src, dest in ((tarball, "/root/wheelhouse.tar"), (GENERATOR, "/root/make_rehearsal_models.py"),
                      (ROOT / "scripts/perf/tutorial-bare.sh", "/root/tutorial-bare.sh")):
        subprocess.run(["podman", "cp", str(src), f"{host}:{dest}"], check=True)
    proc = subprocess.run(["podman", "exec", host, "bash", "/root/tutorial-bare.sh", "/root/wheelhouse.tar",
                           "/root/make_rehearsal_models.py", str(port), str(NUM_PROMPTS)], text=True)
    if proc.returncode != 0:
        sys.exit(f"the bare tutorial failed on {host}")
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of the no-op rerun (medians)")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--peer-rounds", type=int, default=1, help="pairs of ours and the peer (0: no peer)")
    parser.add_argument("--keep", action="store_true", help="keep the perf-* hosts")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    figures: dict = {"date": stamp, "machine": machine(), "command": "scripts/perf.sh " + " ".join(sys.argv[1:])}
    work = OUT / f"inv-{stamp}"
    pair = inventory(work / "pair", {"perf-bare-1": 8300, "perf-site-1": 8310})
    site_only = inventory(work / "site", {"perf-site-1": 8310})
    one = inventory(work / "one", {"perf-scale-1": 8320})
    four = inventory(work / "four", {f"perf-scale-{i}": 8320 + i for i in range(2, 6)})
    created = [pair, one, four]
    try:
        log("creating two identical fresh hosts (perf-bare-1, perf-site-1); the base image is built if missing")
        playbook(pair, "playbooks/provision.yml", f"perf-{stamp}")

        log("1. the bare tutorial commands on perf-bare-1")
        figures["bare_s"] = round(bare("perf-bare-1", 8300), 1)
        log(f"   bare: {figures['bare_s']} s")
        # site.yml's host then runs beside a stopped bare host, as the bare script ran beside a fresh idle one: what
        # the bare script left running (its servers are killed, their engines should follow) is logged, not measured.
        left = subprocess.run(["podman", "exec", "perf-bare-1", "ps", "-eo", "pid=,pcpu=,args="], capture_output=True,
                              text=True).stdout.splitlines()
        figures["bare_left_running"] = [line.strip() for line in left if "python" in line or "VLLM" in line]
        log(f"   the bare host left running: {figures['bare_left_running'] or 'nothing of vLLM'}; stopping it")
        # The servers' speed in the bare run, beside site.yml's below: the two run one after the other, and this
        # machine's speed drifts (the same benchmark's output throughput varied by a third within a day): when the
        # two differ, so do the waits that make most of either wall time, whatever the automation costs.
        figures["throughput_tok_s"] = {"bare": {
            name: round(json.loads(subprocess.run(["podman", "exec", "perf-bare-1", "cat", f"/opt/bare/results/{name}.json"],
                                                  capture_output=True, text=True, check=True).stdout)["output_throughput"], 1)
            for name in ("baseline", "eagle3")}}
        subprocess.run(["podman", "stop", "-t", "5", "perf-bare-1"], check=True, capture_output=True)
        log("1. site.yml on perf-site-1")
        run_id = f"perf-{stamp}"
        first = playbook(site_only, "site.yml", run_id)
        figures["site_s"] = round(first["wall"], 1)
        figures["site_controller_cpu_s"] = first["controller_cpu"]
        figures["overhead_ratio"] = round(first["wall"] / figures["bare_s"], 3)
        figures["site_breakdown"] = breakdown(first)
        figures["heavy_vs_bare"] = round(figures["site_breakdown"]["heavy_s"] / figures["bare_s"], 3)
        figures["throughput_tok_s"]["site"] = {
            name: round(json.loads(layout.result_file(OUT / "results", run_id, "perf-site-1", name).read_text())["output_throughput"], 1)
            for name in ("baseline", "eagle3")}
        log(f"   site.yml: {figures['site_s']} s, ratio {figures['overhead_ratio']}; steps of 2 s or more "
            f"{figures['site_breakdown']['heavy_s']} s, shorter tasks {figures['site_breakdown']['short']}; output "
            f"throughput (tok/s), bare and site.yml: {figures['throughput_tok_s']}")

        starts = startup_times("perf-site-1")
        lags = readiness_lags(starts, [end for _, end in task_ends(first, "Wait for /health")])
        figures["readiness_lag_s"] = lags
        log(f"4. readiness lag per start: {lags}")

        reruns = []
        for i in range(args.repeat):
            again = playbook(site_only, "site.yml", run_id)
            reruns.append({"wall": round(again["wall"], 1), "changed": changed(again), "tasks": tasks_run(again)})
            log(f"2. no-op rerun {i + 1}: {reruns[-1]}")
        figures["rerun"] = reruns
        figures["rerun_s"] = statistics.median(r["wall"] for r in reruns)
        figures["rerun_changed"] = max(sum(r["changed"].values()) for r in reruns)
        figures["rerun_tasks"] = reruns[0]["tasks"]

        if args.peer_rounds:
            log(f"5. the peer on perf-site-1: ours vs vllm bench sweep serve, {args.peer_rounds} pair(s)")
            got = peer.measure("perf-site-1:8310", NUM_PROMPTS, args.peer_rounds, converge=False, keep=True,
                               command=figures["command"])
            figures.update(peer_ours_s=got["ours_s"], peer_s=got["peer_s"], peer_ratio=got["ratio"])
            log(f"   ours {got['ours_s']} s, peer {got['peer_s']} s: ratio {got['ratio']}")

        if not args.skip_scaling:
            converge = ["--tags", "provision,vllm,models,service"]
            log("3. converging 1 fresh host (provision, install, models, units)")
            single = playbook(one, "site.yml", f"perf1-{stamp}", *converge)
            log(f"   1 host: {single['wall']:.1f} s; converging 4 fresh hosts")
            quad = playbook(four, "site.yml", f"perf4-{stamp}", *converge)
            figures["converge_1_s"], figures["converge_4_s"] = round(single["wall"], 1), round(quad["wall"], 1)
            figures["scaling_ratio"] = round(quad["wall"] / single["wall"], 3)
            # The host-side work that 4 hosts on this machine's cores do at once (hardware-bound).
            for label, report in (("1", single), ("4", quad)):
                figures[f"controller_cpu_{label}_s"] = report["controller_cpu"]
                figures[f"pip_install_{label}_s"] = round(task_seconds(report, "Pip install") + task_seconds(report, "venv's bytecode"), 1)
                figures[f"apt_{label}_s"] = task_seconds(report, "OS packages the venv needs")  # started, then waited for
                figures[f"models_{label}_s"] = task_seconds(report, "Generate tiny target/draft models")
            log(f"   4 hosts: {figures['converge_4_s']} s, ratio {figures['scaling_ratio']}; pip install "
                f"{figures['pip_install_1_s']} s -> {figures['pip_install_4_s']} s")
    finally:
        if not args.keep:
            log("removing the perf-* hosts")
            for inv in created:
                subprocess.run(["ansible-playbook", "-i", str(inv), str(ROOT / "playbooks/teardown.yml")], cwd=ROOT,
                               env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")),
                               capture_output=True, stdin=subprocess.DEVNULL)
        save_figures(figures, f"figures-{stamp}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
