"""The report templates' filters: strict JSON, Markdown and CSV text, intervals, and the helpers of the charts. The
report engine and the charts' helpers are plugins/module_utils/report/engine.py."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.output import csv_cell, json_text, md
from ansible_collections.eagle3.trn2.plugins.module_utils.results import rounds as _rounds
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import (eagle3_bar_layout, eagle3_chart_item,
                                                                                eagle3_position_items,
                                                                                eagle3_spread_item)


DOCUMENTATION = r"""
  name: report
  short_description: EAGLE3 run report and chart helpers
  description:
    - The report engine, eagle3_report (plugins/module_utils/report/engine.py, a Python function, not a filter), compares, checks parity, aggregates and
      gates one run; the action eagle3.trn2.run_report runs it with named options.
    - C(eagle3_chart_item), C(eagle3_position_items) and C(eagle3_spread_item) shape rows for the report's charts;
      C(eagle3_bar_layout) places a bar chart's bars, error bars, bands, floor and labels so that every text is
      inside the chart's box.
    - "C(eagle3_json) writes strict JSON (no NaN or Infinity, null with the reason under C(nulls)); C(eagle3_md) and
      C(eagle3_csv) escape a string for report.md and report.csv (report.html uses Jinja's C(e))."
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_json": json_text, "eagle3_md": md, "eagle3_csv": csv_cell,
                "eagle3_with_interval": _rounds.shown, "eagle3_bounds": _rounds.bounds,
                "eagle3_chart_item": eagle3_chart_item,
                "eagle3_position_items": eagle3_position_items, "eagle3_spread_item": eagle3_spread_item,
                "eagle3_bar_layout": eagle3_bar_layout}
