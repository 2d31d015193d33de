"""eagle3_run_stats: the verdict summary results_export publishes with set_stats (pure, no file access)."""
from __future__ import annotations

from ansible_collections.eagle3.trn2.plugins.module_utils.report.run_stats import eagle3_run_stats

ROW = {"profile": "eagle3", "output_throughput": 2338.56922, "speedup": 1.3147952, "acceptance_rate": 100.0,
       "acceptance_length": 4, "median_tpot_ms": 0.6918, "p99_ttft_ms": 32.0}
BASE = {"profile": "baseline", "output_throughput": 1778.6566, "speedup": 1.0, "acceptance_rate": None,
        "acceptance_length": None, "median_tpot_ms": 0.9196}
VERDICT = {"ok": True, "status": "complete", "run_id": "r1", "failing": [], "reasons": [], "failed_hosts": {}}
SUMMARY = {"run_id": "r1", "hosts": {"h1": [BASE, ROW]}, "sweep": {"h1": {"winner": "eagle3"}}, "failed_hosts": {}}


def test_ok_run_per_host_and_profile():
    stats = eagle3_run_stats(VERDICT, SUMMARY, "/results/r1/")
    assert stats["verdict"] == "OK" and stats["ok"] is True and stats["status"] == "complete" and stats["run_id"] == "r1"
    assert stats["hosts"] == {"h1": {
        "baseline": {"output_throughput": 1778.657, "speedup": 1.0, "acceptance_rate": None, "acceptance_length": None,
                     "median_tpot_ms": 0.92},
        "eagle3": {"output_throughput": 2338.569, "speedup": 1.315, "acceptance_rate": 100.0, "acceptance_length": 4.0,
                   "median_tpot_ms": 0.692}}}
    assert stats["recommended"] == {"h1": "eagle3"}
    assert stats["reports"]["report.html"] == "/results/r1/report.html" and len(stats["reports"]) == 5


def test_failing_gates_are_named_with_their_host():
    verdict = dict(VERDICT, ok=False, failing=[{"gate": "acceptance", "host": "h1", "message": "eagle3: acceptance 2.0 %"}],
                   reasons=["no gate was checked"], failed_hosts={"h2": "no results"})
    stats = eagle3_run_stats(verdict, SUMMARY, "/r")
    assert stats["verdict"] == "FAILED" and stats["ok"] is False
    assert stats["failing"] == ["h1: eagle3: acceptance 2.0 %"]
    assert stats["reasons"] == ["no gate was checked"] and stats["failed_hosts"] == {"h2": "no results"}


def test_a_report_that_failed_or_never_ran_is_not_ok():
    failed = eagle3_run_stats({"ok": False, "status": "report failed", "run_id": "r1"}, {}, "/r/r1")
    assert failed["verdict"] == "FAILED" and failed["status"] == "report failed" and failed["hosts"] == {}
    # ok true but not complete is never OK
    assert eagle3_run_stats({"ok": True, "status": "in progress"}, {}, "/r/r1")["verdict"] == "FAILED"
    missing = eagle3_run_stats({}, {}, "/results/r9", present=["rehearsal-1/baseline.json"])
    assert missing["status"] == "no verdict.json" and missing["run_id"] == "r9" and missing["reports"] == {}


def test_reports_only_lists_present_files():
    stats = eagle3_run_stats(VERDICT, SUMMARY, "/r/r1", present=["verdict.json", "h1/eagle3.json", "report.html"])
    assert stats["reports"] == {"report.html": "/r/r1/report.html", "verdict.json": "/r/r1/verdict.json"}
