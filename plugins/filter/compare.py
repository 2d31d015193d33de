"""The comparison's filter, the text table; the comparison itself is plugins/module_utils/report/compare.py."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import eagle3_table


DOCUMENTATION = r"""
  name: compare
  short_description: EAGLE3 benchmark comparison as text lines
  description:
    - C(eagle3_table) formats a comparison as text lines.
    - Beside it, plugins/module_utils/report/compare.py holds Python that eagle3_report (report/engine.py) calls, not filters;
      eagle3_compare compares each profile's bench result with the baseline's; eagle3_parity lists greedy completions
      that differ from the baseline's; eagle3_parity_rule judges them by the parity gate's rule (a share of identical
      prompts, some always exact); eagle3_sweep recommends the fastest speculative profile that passes every enforced
      gate; eagle3_fleet aggregates hosts per profile (median/min/max) and flags outliers.
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_table": eagle3_table}
