"""The verdict summary of a reported run as a filter (plugins/module_utils/report/run_stats.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.run_stats import eagle3_run_stats

DOCUMENTATION = r"""
  name: run_stats
  short_description: the verdict summary of a run (overall verdict, per host and profile numbers, report paths)
  description:
    - "C(eagle3_run_stats(verdict, summary, run_dir, present)) condenses a run's verdict.json and summary.json into
      the keys run_id, verdict, ok, status, failing, reasons, failed_hosts, hosts, recommended and reports."
    - "C(hosts) maps each host to its profiles and each profile to output_throughput, speedup, acceptance_rate,
      acceptance_length and median_tpot_ms, rounded to 3 decimals (null where the profile has none, e.g. the
      baseline's acceptance)."
    - "C(verdict) is OK only when verdict.json says ok with status complete, FAILED otherwise; C(status) says why
      (complete, report failed, in progress, or no verdict.json)."
    - "C(reports) maps report.html, report.md, report.csv, summary.json and verdict.json to their paths under
      run_dir; with C(present) (the run directory's relative file paths) only the files that exist."
"""


class FilterModule:
    """Run summary filter."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_run_stats": eagle3_run_stats}
