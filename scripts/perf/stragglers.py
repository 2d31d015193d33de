#!/usr/bin/env python3
"""Cross-step stragglers (docs/performance.md): does a fleet finish as fast as its slowest host?

Two converged rehearsal hosts A and B. A systemd drop-in (added here, removed at the end) delays host A's
baseline start and host B's EAGLE3 start by D seconds each (ExecStartPre=/bin/sleep D; the units are
Type=exec, so the start waits for it). Then, in one invocation:
  fleet: playbooks/benchmark.yml on A and B together (wall time);
  alone: the same on A alone, then on B alone (--limit; each host's own time);
  ratio = fleet / max(alone A, alone B); goal <= 1.1. A lock-step (linear) play pays both delays on both
  hosts: about base + 2D against base + D.
With --checkout DIR the playbooks of another checkout run (e.g. an export of main, to show the lock step).
With --own-cores each host's container is pinned to its own CPUs for the whole measurement (podman update
--cpuset-cpus: A the first half of the machine's CPUs, B the second; all CPUs again at the end), as the hosts of a real
fleet each have their own machine, and the benchmark windows may overlap (eagle3_bench_exclusive_window false): the
ratio then measures the play's scheduling alone, not two hosts taking turns on shared cores. The alone runs are made
with the same pinning, so a host has the same CPUs alone and in the fleet.
Each benchmark run has its own run id; the results land in EAGLE3_RESULTS_DIR (default artifacts/perf/results).

usage: scripts/perf.sh --stragglers [--hosts NAME:PORT,NAME:PORT] [--delay D] [--prompts N]
                                    [--checkout DIR] [--no-converge] [--keep] [--alone-from FIGURES.json]
                                    [--extra JSON] [--own-cores]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lab  # noqa: E402  (same directory: inventory(), run_book(), remove_pair(), machine(), log(), save_figures())

DROPIN = "eagle3-straggler.conf"


def dropin(host: str, unit: str, delay: int | None) -> None:
    """Add (delay) or remove (None) the ExecStartPre sleep drop-in of a unit on a podman host."""
    path = f"/etc/systemd/system/{unit}.d/{DROPIN}"
    script = (f"mkdir -p /etc/systemd/system/{unit}.d && printf '[Service]\\nExecStartPre=/bin/sleep {delay}\\n' > {path}"
              if delay is not None else f"rm -f {path}")
    subprocess.run(["podman", "exec", host, "sh", "-c", script + " && systemctl daemon-reload"], check=True)


def pin(host: str, cpus: str) -> None:
    """Pin a running podman host to CPUs (the kernel moves its processes; new ones inherit the set)."""
    subprocess.run(["podman", "update", "--cpuset-cpus", cpus, host], check=True, capture_output=True, text=True)


def own_cores(a: str, b: str) -> dict[str, str]:
    """A the first half of the CPUs this process may use, B the second half."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("--own-cores needs at least 2 CPUs")
    half = len(cpus) // 2
    return {a: ",".join(map(str, cpus[:half])), b: ",".join(map(str, cpus[half:]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="perf-straggler-1:8341,perf-straggler-2:8342",
                        help="two rehearsal hosts NAME:SERVER_PORT (sshd on SERVER_PORT - 6000)")
    parser.add_argument("--delay", type=int, default=90, help="seconds added to A's baseline and B's EAGLE3 start")
    parser.add_argument("--prompts", type=int, default=10, help="eagle3_bench_num_prompts (small: the delays matter)")
    parser.add_argument("--checkout", type=Path, default=lab.ROOT, help="the checkout whose playbooks run")
    parser.add_argument("--no-converge", action="store_true", help="the hosts are converged already")
    parser.add_argument("--keep", action="store_true", help="keep the hosts (default: teardown at the end)")
    parser.add_argument("--alone-from", type=Path, help="take the alone times from an earlier figures JSON of the same "
                        "hosts and delay instead of measuring them (e.g. to show another checkout's fleet time)")
    parser.add_argument("--extra", default="{}", help="extra variables (JSON) for every benchmark run, e.g. "
                        "'{\"compile_cache_wait\": 1800}' to have the hosts wait for the canary's compile")
    parser.add_argument("--own-cores", action="store_true", help="pin each host to its own half of the CPUs and let "
                        "the benchmark windows overlap (as on a real fleet); default: the hosts share every CPU and take "
                        "turns for their benchmark windows (the rehearsal inventory's eagle3_bench_exclusive_window)")
    args = parser.parse_args()
    (a, a_port), (b, b_port) = [(n, int(p)) for n, p in (h.split(":") for h in args.hosts.split(","))]
    root = args.checkout.resolve()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results = Path(os.environ.get("EAGLE3_RESULTS_DIR", lab.OUT / "results"))
    results.mkdir(parents=True, exist_ok=True)
    work = lab.OUT / f"stragglers-{stamp}"
    pair = lab.inventory(work / "pair", {a: a_port, b: b_port})
    figures: dict = {"date": stamp, "machine": lab.machine(), "checkout": str(root),
                     "revision": subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                                capture_output=True, text=True).stdout.strip() or "(not a git checkout)",
                     "command": "scripts/perf.sh --stragglers " + " ".join(sys.argv[1:]), "delay_s": args.delay,
                     "prompts": args.prompts, "hosts": [a, b], "extra": json.loads(args.extra)}
    cpusets = own_cores(a, b) if args.own_cores else {}
    figures["cpusets"] = cpusets or "shared"
    window = {"eagle3_bench_exclusive_window": False} if cpusets else {}
    bench = ["-e", json.dumps({"eagle3_bench_num_prompts": args.prompts, **window, **json.loads(args.extra)})]
    try:
        if not args.no_converge:
            lab.log(f"converging {a} and {b} (provision, install, models, units)")
            wall, rc, tail = lab.run_book(root, pair, "site.yml", f"strag-conv-{stamp}", results,
                                      "--tags", "provision,vllm,models,service")
            if rc:
                sys.exit(f"converge failed (rc {rc}):\n{tail}")
        for host, cpus in cpusets.items():
            lab.log(f"pinning {host} to CPUs {cpus} (podman update --cpuset-cpus)")
            pin(host, cpus)
        lab.log(f"delaying {a}'s baseline start and {b}'s eagle3 start by {args.delay} s (drop-ins)")
        dropin(a, "vllm-baseline.service", args.delay)
        dropin(b, "vllm-eagle3.service", args.delay)
        figures["load_before"] = os.getloadavg()
        # localhost too: the run id is fixed on the controller (playbooks/run_id.yml).
        runs = [("fleet", []), ("alone_" + a, ["--limit", f"{a},localhost"]), ("alone_" + b, ["--limit", f"{b},localhost"])]
        if args.alone_from:
            earlier = json.loads(args.alone_from.read_text())
            if (earlier["hosts"] != [a, b] or earlier["delay_s"] != args.delay or earlier["prompts"] != args.prompts
                    or earlier.get("cpusets", "shared") != figures["cpusets"]):
                sys.exit(f"{args.alone_from} measured other hosts, delay, prompts or CPU pinning")
            for host in (a, b):
                figures[f"alone_{host}_s"] = earlier[f"alone_{host}_s"]
            figures["alone_from"] = str(args.alone_from)
            runs = runs[:1]
        for label, limit in runs:
            run_id = f"strag-{label.replace('_', '-')}-{stamp}"
            lab.log(f"{label}: playbooks/benchmark.yml {' '.join(limit)} (run {run_id})")
            wall, rc, tail = lab.run_book(root, pair, "playbooks/benchmark.yml", run_id, results, *bench, *limit)
            figures[f"{label}_s"], figures[f"{label}_rc"] = round(wall, 1), rc
            lab.log(f"   {wall:.1f} s, rc {rc}, load {os.getloadavg()[0]:.2f}")
            # A failed profile ends its host (the play's rc stays 0; the report fails the run): no figure from it.
            failed = sorted(str(f) for f in (results / run_id).glob("*/failure.json"))
            if rc or failed:
                sys.exit(f"{label} failed (rc {rc}, {failed or 'no failure.json'}):\n{tail}")
        figures["load_after"] = os.getloadavg()
        slowest = max(figures[f"alone_{a}_s"], figures[f"alone_{b}_s"])
        figures["ratio"] = round(figures["fleet_s"] / slowest, 3)
        figures["goal"] = 1.1
        figures["ok"] = figures["ratio"] <= 1.1
        lab.log(f"fleet {figures['fleet_s']} s / slowest host alone {slowest} s = {figures['ratio']} (goal <= 1.1)")
    finally:
        for host, unit in ((a, "vllm-baseline.service"), (b, "vllm-eagle3.service")):
            try:
                dropin(host, unit, None)
            except subprocess.CalledProcessError as exc:
                lab.log(f"could not remove the drop-in of {unit} on {host}: {exc}")
        for host in cpusets:
            try:
                pin(host, ",".join(map(str, sorted(os.sched_getaffinity(0)))))
            except subprocess.CalledProcessError as exc:
                lab.log(f"could not unpin {host}: {exc.stderr}")
        if not args.keep:
            lab.remove_pair(root, pair, [a, b], f"strag-down-{stamp}", results)
        lab.save_figures(figures, f"stragglers-{stamp}")
    return 0 if figures.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
