"""Where a run's files are on the controller, in one place, so every reader agrees: the eagle3_run lookup reads by it,
scripts/perf finds a run's files by it, and the filter eagle3.trn2.eagle3_results_path gives the same paths to YAML.

    <results_dir>/<run_id>/run.json                  the run's host list, written when the run starts
    <results_dir>/<run_id>/serving.json              what each host serves after the run (vllm_serving's record)
    <results_dir>/<run_id>/.bench-window.lock        the benchmark window's lock (vllm_bench_exclusive_window)
    <results_dir>/<run_id>/{verdict,summary}.json    the report's verdict and summary; report.{md,csv,html}
    <results_dir>/<run_id>/compile-cache/<profile>.json   the run's compile-cache manifest of a profile (not a host)
    <results_dir>/<run_id>/quarantine/<host>/<file>.<stamp>[.why.json]   an invalid result kept aside, and why
    <results_dir>/<run_id>/<host>/<profile>.json     a profile's `vllm bench serve --save-result` file (round 1)
    <results_dir>/<run_id>/<host>/<profile>.round<r>.json   round r >= 2 of it (eagle3_bench_rounds)
    <results_dir>/<run_id>/<host>/<profile>.completions.json   its parity completions
    <results_dir>/<run_id>/<host>/{manifest,failure,timeline}.json   the host's manifest, failure, timeline
"""
from __future__ import annotations

import re
from pathlib import Path

RUN_FILE = "run.json"
# The run's own files besides run.json and the report's (each at <results_dir>/<run_id>/<name>).
RUN_OWN = ("serving.json", ".bench-window.lock")
REPORT_FILES = ("verdict.json", "summary.json", "report.md", "report.csv", "report.html")
RUN_DIRS = frozenset({"compile-cache", "quarantine"})
HOST_FILES = {"manifest.json": "manifest", "failure.json": "failure", "timeline.json": "timeline"}
COMPLETIONS = ".completions.json"
# Profile names are [a-z][a-z0-9_]*(-k[0-9]+)? (the settings schema): no dot, so the round suffix is unambiguous.
_ROUND = re.compile(r"^(?P<profile>[^.]+)\.round(?P<round>[0-9]+)\.json$")


def result_name(profile: str, round_no: int = 1) -> str:
    """The file name of a profile's result in a round: <profile>.json for round 1, <profile>.round<r>.json after."""
    return f"{profile}.json" if int(round_no) == 1 else f"{profile}.round{int(round_no)}.json"


def run_dir(results_dir: str | Path, run_id: str) -> Path:
    return Path(results_dir) / run_id


def host_dir(results_dir: str | Path, run_id: str, host: str) -> Path:
    return run_dir(results_dir, run_id) / host


def result_file(results_dir: str | Path, run_id: str, host: str, profile: str, round_no: int = 1) -> Path:
    return host_dir(results_dir, run_id, host) / result_name(profile, round_no)


def host_dirs(run: str | Path) -> list[Path]:
    """A run directory's host directories (the run's own directories, compile-cache/, left out)."""
    root = Path(run)
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name not in RUN_DIRS) if root.is_dir() else []


def classify(name: str) -> tuple[str, str | None, int]:
    """What a file of a host directory is: ("manifest" | "failure" | "timeline", None, 1), ("completions", profile, 1)
    or ("result", profile, round)."""
    if name in HOST_FILES:
        return HOST_FILES[name], None, 1
    if name.endswith(COMPLETIONS):
        return "completions", name[: -len(COMPLETIONS)], 1
    found = _ROUND.match(name)
    if found and int(found.group("round")) >= 2:
        return "result", found.group("profile"), int(found.group("round"))
    return "result", name[: -len(".json")] if name.endswith(".json") else name, 1


def path_of(results_dir: str, run_id: str, what: str = "run", host: str = "", profile: str = "",
            round_no: int = 1) -> str:
    """The path of a part of a run, by name: run, run.json, verdict.json (any report file), serving.json,
    .bench-window.lock, compile-cache (a profile's manifest), quarantine (a host's invalid results kept aside), host,
    result (of a round), completions, manifest, failure, timeline."""
    if what == "run":
        return str(run_dir(results_dir, run_id))
    if what == RUN_FILE or what in REPORT_FILES or what in RUN_OWN:
        return str(run_dir(results_dir, run_id) / what)
    if what == "host":
        return str(host_dir(results_dir, run_id, host))
    if what == "quarantine":
        return str(run_dir(results_dir, run_id) / "quarantine" / host)
    if what == "compile-cache":
        return str(run_dir(results_dir, run_id) / "compile-cache" / f"{profile}.json")
    if what == "result":
        return str(result_file(results_dir, run_id, host, profile, round_no))
    if what == "completions":
        return str(host_dir(results_dir, run_id, host) / f"{profile}{COMPLETIONS}")
    if what in HOST_FILES.values():
        return str(host_dir(results_dir, run_id, host) / f"{what}.json")
    raise ValueError(f"no such part of a run: {what!r}")
