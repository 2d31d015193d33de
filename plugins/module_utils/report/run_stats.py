"""The verdict summary of a reported run, small enough for set_stats (AWX shows it as the job's artifacts).

Pure: it reads nothing from disk; the results_export role hands it the run's verdict.json and summary.json
(written by bench_report) and the run directory's path.
"""
from __future__ import annotations

from typing import Any

REPORT_FILES = ("report.html", "report.md", "report.csv", "summary.json", "verdict.json")
METRICS = ("output_throughput", "speedup", "acceptance_rate", "acceptance_length", "median_tpot_ms")


def _number(value: Any) -> float | None:
    return round(float(value), 3) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _failing(gate: dict[str, Any]) -> str:
    where = gate.get("host") or ""
    return f"{where}: {gate.get('message', gate.get('gate', ''))}" if where else str(gate.get("message", gate.get("gate", "")))


def eagle3_run_stats(verdict: dict[str, Any] | None, summary: dict[str, Any] | None, run_dir: str,
                     present: list[str] | None = None) -> dict[str, Any]:
    """Summary of one run for set_stats: see DOCUMENTATION."""
    verdict = verdict if isinstance(verdict, dict) else {}
    summary = summary if isinstance(summary, dict) else {}
    status = str(verdict.get("status") or "no verdict.json")
    ok = verdict.get("ok") is True and status == "complete"
    hosts: dict[str, dict[str, dict[str, float | None]]] = {}
    for host, rows in sorted((summary.get("hosts") or {}).items()):
        hosts[host] = {str(row.get("profile")): {m: _number(row.get(m)) for m in METRICS}
                       for row in rows or [] if isinstance(row, dict)}
    run_dir = str(run_dir).rstrip("/")
    return {
        "run_id": verdict.get("run_id") or summary.get("run_id") or run_dir.rsplit("/", 1)[-1],
        "verdict": "OK" if ok else "FAILED",
        "ok": ok,
        "status": status,
        "failing": [_failing(g) for g in verdict.get("failing") or [] if isinstance(g, dict)],
        "reasons": [str(r) for r in verdict.get("reasons") or []],
        "failed_hosts": dict(verdict.get("failed_hosts") or summary.get("failed_hosts") or {}),
        "hosts": hosts,
        "recommended": {host: sweep.get("winner") for host, sweep in sorted((summary.get("sweep") or {}).items())
                        if isinstance(sweep, dict)},
        "reports": {name: f"{run_dir}/{name}" for name in REPORT_FILES if present is None or name in present},
    }
