"""The gates' filter, their settings; the gates and the verdict are plugins/module_utils/report/gates.py."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.gates import eagle3_gate_settings


DOCUMENTATION = r"""
  name: gates
  short_description: EAGLE3 benchmark gates' settings
  description:
    - C(eagle3_gate_settings) gives every gate's settings, the defaults with per-gate overrides applied.
    - Beside it, plugins/module_utils/report/gates.py holds Python that eagle3_report (report/engine.py) calls, not filters;
      eagle3_gates judges a run against floors and a reference; eagle3_verdict sums up; eagle3_shown formats a value
      and its threshold at a precision that shows the comparison.
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_gate_settings": eagle3_gate_settings}
