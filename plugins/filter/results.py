"""The paths of a run's files on the controller, as filters (plugins/module_utils/results_layout.py holds the layout)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results_layout import path_of, result_name

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
"""


def eagle3_bench_plan(profiles: list[dict[str, Any]], rounds: int = 1) -> list[dict[str, Any]]:
    """Every (round, profile) a host benchmarks, interleaved so that drift over time hits every profile alike."""
    if int(rounds) < 1:
        raise ValueError(f"eagle3_bench_plan: rounds must be at least 1 (got {rounds!r})")
    return [dict(p, round=r, result=result_name(p["name"], r), key=result_name(p["name"], r)[: -len(".json")])
            for r in range(1, int(rounds) + 1) for p in profiles]


class FilterModule:
    """Results layout filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_results_path": path_of, "eagle3_bench_plan": eagle3_bench_plan}
