"""The paths of a run's files on the controller, as filters (plugins/module_utils/results_layout.py holds the layout)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results_layout import path_of

DOCUMENTATION = r"""
  name: results
  short_description: The paths of a run's files on the controller
  description:
    - C(eagle3_results_path(results_dir, run_id, what, host, profile)) gives the path of a part of a run (run, run.json,
      verdict.json and the other report files, host, result, completions, manifest, failure, timeline), by the one
      layout in plugins/module_utils/results_layout.py.
"""


class FilterModule:
    """Results layout filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_results_path": path_of}
