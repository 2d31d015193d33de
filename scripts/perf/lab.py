#!/usr/bin/env python3
"""What the perf scripts (perf.py, peer.py, stragglers.py, compile_cache.py) share, imported by each and importing none
of them: the checkout's places (ROOT, OUT: artifacts/perf, the checkout's collections on sys.path), the tutorial's
prompt count, the log line, the perf inventory built from the rehearsal's, running a playbook (with the JSON callback:
playbook(); plain, from any checkout: run_book(); teardown: remove_pair()), reading the JSON callback's report
(changed, tasks_run, task_ends, task_seconds, breakdown), the machine's description and saving a run's figures.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

# The checkout these scripts are part of (scripts/perf/ is two levels down): they run from a checkout, not from an
# installed collection, and drive its playbooks, inventories and ansible.cfg.
ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("EAGLE3_ARTIFACTS", ROOT / "artifacts")) / "perf"
# The checkout's collection link, so the scripts import the project's module_utils (results_layout).
if str(ROOT / "collections") not in sys.path:
    sys.path.insert(0, str(ROOT / "collections"))
CALLS = 0
NUM_PROMPTS = 50  # the tutorial's, as in the rehearsal


def log(msg: str) -> None:
    print(f"{dt.datetime.now():%H:%M:%S} perf: {msg}", flush=True)


def inventory(path: Path, hosts: dict[str, int]) -> Path:
    """A rehearsal inventory (its group_vars, its connection settings) whose vllm_hosts are the given perf hosts and
    server ports (sshd: port - 6000) and no monitor, serving the agreeing pair (the automation's cost is measured
    against scripts/perf/tutorial-bare.sh, which serves it too, and a fresh host trains nothing). Built from
    inventories/rehearsal/hosts.yml as data, so it follows that file's groups."""
    import yaml

    path.mkdir(parents=True, exist_ok=True)
    link = path / "group_vars"
    if not link.exists():
        link.symlink_to(ROOT / "inventories/rehearsal/group_vars")
    rehearsal = yaml.safe_load((ROOT / "inventories/rehearsal/hosts.yml").read_text())
    groups = rehearsal["all"]["children"]["eagle3"]["children"]
    groups["controller"]["hosts"]["localhost"]["eagle3_rehearsal_pair"] = "agreeing"
    podman = groups["podman_hosts"]["children"]
    podman["vllm_hosts"]["hosts"] = {name: {"eagle3_port": port, "ansible_port": port - 6000,
                                            "eagle3_rehearsal_pair": "agreeing"} for name, port in hosts.items()}
    podman["monitor"]["hosts"] = {}
    (path / "hosts.yml").write_text("---\n" + yaml.safe_dump(rehearsal, sort_keys=False))
    return path


def playbook(inv: Path, book: str, run_id: str, *extra: str, results: Path | None = None) -> dict:
    """Run a playbook with the JSON callback; returns the parsed report plus wall seconds."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               EAGLE3_RUN_ID=run_id, EAGLE3_RESULTS_DIR=str(results or OUT / "results"))
    start, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), str(ROOT / book), *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the controller side (ansible-playbook, its workers, ssh clients); not the hosts'.
    controller_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    global CALLS
    CALLS += 1
    saved = OUT / f"{run_id}-{CALLS:02d}-{Path(book).stem}.json"
    saved.write_text(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"{book} on {inv.name} failed (rc {proc.returncode}); see {saved}\n"
                 + proc.stderr[-2000:])
    # The JSON report is printed whole at the end; profile_tasks' lines come before and after it.
    start_at = proc.stdout.index("\n{\n") + 1 if not proc.stdout.startswith("{") else 0
    report, _ = json.JSONDecoder().raw_decode(proc.stdout[start_at:])
    report["wall"], report["controller_cpu"] = wall, round(controller_cpu, 1)
    return report


def changed(report: dict) -> dict[str, int]:
    return {host: stats["changed"] for host, stats in report["stats"].items()}


def tasks_run(report: dict) -> dict[str, dict[str, int]]:
    """Per host, the tasks that ran (ok + changed + failed; PLAY RECAP's ok counts changed ones too) and those
    skipped."""
    return {host: {"ran": stats["ok"] + stats.get("failures", 0), "skipped": stats["skipped"]}
            for host, stats in report["stats"].items()}


def finished_tasks(report: dict, name_part: str):
    """(task, start, end as epoch seconds) of every finished task whose name contains name_part.

    The JSON callback names tasks "role : name" and records one span per task (to the last host's end).
    """
    def epoch(stamp: str) -> float:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    for play in report["plays"]:
        for task in play["tasks"]:
            span = task["task"].get("duration", {})
            if name_part in task["task"]["name"] and span.get("end"):
                yield task, epoch(span["start"]), epoch(span["end"])


def task_ends(report: dict, name_part: str) -> list[tuple[str, float]]:
    """(host, end time as epoch seconds) of every task whose name contains name_part."""
    return [(host, end) for task, _, end in finished_tasks(report, name_part) for host in task["hosts"]]


def task_seconds(report: dict, name_part: str) -> float:
    """Wall seconds of the tasks whose name contains name_part (start of the first host to end of the last)."""
    return round(sum(end - start for _, start, end in finished_tasks(report, name_part)), 1)


# Tasks the controller does in its own process: no module is started, on a host or on the controller.
IN_PROCESS = frozenset({
    "ansible.builtin.set_fact", "ansible.builtin.assert", "ansible.builtin.debug", "ansible.builtin.include_tasks",
    "ansible.builtin.include_role", "ansible.builtin.import_tasks", "ansible.builtin.validate_argument_spec",
    "ansible.builtin.set_stats", "ansible.builtin.meta", "eagle3.trn2.controller_file", "eagle3.trn2.report_files",
    "eagle3.trn2.compile_cache_state"})


def _where(result: dict, host: str) -> str:
    """host, controller or in_process: where a task's module ran (a loop's first item stands for it)."""
    if result.get("action") in IN_PROCESS:
        return "in_process"
    first = (result.get("results") or [result])[0]
    delegated = first.get("_ansible_delegated_vars") or result.get("_ansible_delegated_vars") or {}
    return "controller" if host == "localhost" or delegated.get("ansible_connection") == "local" else "host"


def breakdown(report: dict, heavy: float = 2.0) -> dict:
    """Where a run's time went, from the JSON callback's task spans: the steps of `heavy` seconds or more (the work
    itself: apt, pip, server starts, benchmarks), and the shorter tasks counted by where they ran: module calls on the
    hosts, module calls on the controller, tasks done in the controller's own process, and tasks every host skipped."""
    steps, short = [], {kind: {"tasks": 0, "s": 0.0} for kind in ("host", "controller", "in_process", "skipped")}
    for play in report["plays"]:
        for task in play["tasks"]:
            span = task["task"].get("duration", {})
            if not span.get("end"):
                continue
            seconds = (dt.datetime.fromisoformat(span["end"].replace("Z", "+00:00"))
                       - dt.datetime.fromisoformat(span["start"].replace("Z", "+00:00"))).total_seconds()
            ran = [(h, r) for h, r in task["hosts"].items() if not r.get("skipped")]
            if seconds >= heavy:
                steps.append({"task": task["task"]["name"], "s": round(seconds, 1)})
                continue
            kind = _where(ran[0][1], ran[0][0]) if ran else "skipped"
            short[kind]["tasks"] += 1
            short[kind]["s"] += seconds
    for counted in short.values():
        counted["s"] = round(counted["s"], 1)
    return {"heavy": steps, "heavy_s": round(sum(s["s"] for s in steps), 1), "short": short,
            "short_s": round(sum(c["s"] for c in short.values()), 1)}


def save_figures(figures: dict, name: str) -> Path:
    """Write a run's figures to artifacts/perf/<name>.json and print them (every perf script's last step)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return path


def machine() -> str:
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return f"{os.cpu_count()} CPUs, {mem / 1048576:.0f} GiB RAM"


def run_book(root: Path, inv: Path, book: str, run_id: str, results: Path, *extra: str) -> tuple[float, int, str]:
    """ansible-playbook from checkout `root` (its ansible.cfg and committed collection link); (wall s, rc, stdout tail)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg"), EAGLE3_RUN_ID=run_id,
               EAGLE3_RESULTS_DIR=str(results), ANSIBLE_FORCE_COLOR="0")
    start = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), str(root / book), *extra], cwd=root, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - start
    (results / f"{run_id}.log").write_text(proc.stdout + proc.stderr)
    return wall, proc.returncode, proc.stdout[-1500:]


def remove_pair(root: Path, pair: Path, hosts: list[str], run_id: str, results: Path) -> None:
    """Tear down a perf script's hosts (playbooks/teardown.yml)."""
    log(f"removing {' and '.join(hosts)}")
    run_book(root, pair, "playbooks/teardown.yml", run_id, results)
