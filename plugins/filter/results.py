"""The paths of a run's files on the controller, as filters (plugins/module_utils/results_layout.py holds the layout)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results_layout import path_of
from ansible_collections.eagle3.trn2.plugins.module_utils.phase.bench_plan import (eagle3_bench_pending,
                                                                                   eagle3_bench_plan,
                                                                                   eagle3_bench_reconcile,
                                                                                   eagle3_result_problems)

DOCUMENTATION = r"""
  name: results
  short_description: The paths of a run's files on the controller, and the order a host benchmarks in
  description:
    - C(eagle3_results_path(results_dir, run_id, what, host, profile, round)) gives the path of a part of a run (run,
      run.json, verdict.json and the other report files, host, result, completions, manifest, failure, timeline), by
      the one layout in plugins/module_utils/results_layout.py.
    - C(eagle3_bench_plan(profiles, rounds)) lists what a host benchmarks, in order, interleaved (round 1 of every
      profile, then round 2 of every profile, ...), each profile with its C(round), its result file's name C(result)
      (the layout's) and the C(key) its timeline is kept under (the result's name without .json).
    - C(eagle3_bench_pending(plan, local_dir, identity)) judges the controller's copy of each planned result
      (plugins/module_utils/phase/bench_state.py, phase controller) and returns the pending items and the invalid files to
      keep aside, each with its reason.
    - C(eagle3_bench_reconcile(pending, probe, identity, config_sha256, local_dir)) judges the host's copy of each
      pending result that the reconcile probe read (phase host) and returns the results to adopt (with their own
      times), the files to keep aside, the items to benchmark, and the keys of those among them whose valid host copy
      is not adopted because the round-1 greedy completions taken with it are not on the controller.
    - C(eagle3_result_problems(text, identity, item, config_sha256)) lists every reason a result's text is not this
      step's done result (none when it is).
"""


class FilterModule:
    """Results layout filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_results_path": path_of, "eagle3_bench_plan": eagle3_bench_plan,
                "eagle3_bench_pending": eagle3_bench_pending, "eagle3_bench_reconcile": eagle3_bench_reconcile,
                "eagle3_result_problems": eagle3_result_problems}
