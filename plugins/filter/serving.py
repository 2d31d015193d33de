"""The serving filters: which profile each host serves after the run and whether it still has what was
measured (plugins/module_utils/server/serving.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import (eagle3_served_config,
                                                                                 eagle3_serving_drift,
                                                                                 eagle3_serving_now,
                                                                                 eagle3_serving_refusal,
                                                                                 eagle3_serving_targets)


DOCUMENTATION = r"""
  name: serving
  short_description: The serving plan of an EAGLE3 run (which profile serves on which host)
  description:
    - eagle3_serving (Python that eagle3_report calls, not a filter) chooses, from a run's comparison rows and the
      enforced gates' failures, the profile each host serves after the benchmark. none serves nothing; a profile name serves that profile wherever it
      passed every enforced gate; best serves, fleet-wide, the profile with the highest median output_throughput
      (with eagle3_bench_rounds > 1, the highest median lower bound of its speedup's interval) among the profiles that pass every enforced gate on every host that has results (the baseline included,
      so when no speculative profile passes everywhere the fleet serves the baseline). A profile that failed a gate,
      and a host that failed, never serve. eagle3_serving_lines (also for eagle3_report) words a plan as the verdict's lines.
    - C(eagle3_serving_targets) turns a plan into Prometheus scrape targets, one per host that serves, from each
      host's monitor address (HOST:PORT of its serving unit's /metrics).
    - C(eagle3_serving_drift) compares files as a host has them now (path -> text) with the sha256 a run's
      manifest.json recorded for them when the run benchmarked, giving one line per file that differs (for a server
      config, the keys whose values differ), is missing, or was not recorded; none when every file is as measured.
    - C(eagle3_serving_refusal) words vllm_serving's refusal from those lines, with the commands that recover.
    - C(eagle3_serving_now) gives one line per host of a serving record: its profile, method, k and config sha256.
    - C(eagle3_served_config) gives the method and k (speculative-config's method and num_speculative_tokens; null for
      the baseline) and the sha256 of a server config's text, as serving.json records them.
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_serving_now": eagle3_serving_now, "eagle3_serving_targets": eagle3_serving_targets,
                "eagle3_serving_drift": eagle3_serving_drift, "eagle3_serving_refusal": eagle3_serving_refusal, "eagle3_served_config": eagle3_served_config}
