"""The timeline's filter, each start's start-to-ready; the fleet's timeline is plugins/module_utils/report/timeline.py."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.timeline import eagle3_starts


DOCUMENTATION = r"""
  name: timeline
  short_description: EAGLE3 fleet timeline (per-host phases, overlapping benchmark windows, straggler)
  description:
    - eagle3_timeline (plugins/module_utils/report/timeline.py, Python that eagle3_report calls, with eagle3_timeline_lines, not filters) takes a dict of host name to timeline.json data (or None) and returns C(hosts) (per host its profiles
      in start order with times in seconds from the fleet's first start), C(overlaps) (pairs of benchmark
      windows on different hosts that overlapped, with the seconds they shared), C(overlapped), C(span_s) per
      host, C(fleet_s), C(straggler) and C(rows) for the chart.
    - C(eagle3_starts) takes one host's timeline profiles and returns, per start, C(start_to_ready_s), C(compile_cache)
      and C(compile_metrics) (the manifest's C(starts)).
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_starts": eagle3_starts}
