"""Acceptance bands as filters (plugins/module_utils/results/bands.py): bands recorded from a run or from a Prometheus window,
a band file's entries updated, and the serving alert's bands."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results.bands import (
    alert_bands, bands_from_prometheus, bands_from_run, bands_merged, live_queries)

DOCUMENTATION = r"""
  name: bands
  short_description: Acceptance bands recorded from a run or from live traffic, and the serving alert's bands
  description:
    - C(eagle3_bands_from_run) makes one band per speculative profile of a run (the hosts' mean figures).
    - C(eagle3_bands_merged) replaces the bands of the same key in a list and adds the others.
    - C(eagle3_band_live_queries) gives the PromQL of each vLLM spec-decode counter's increase over a window (per
      serving host and profile), the queries a live band is made from.
    - C(eagle3_bands_from_prometheus) makes one live band per k (dataset live) from the answers of those queries
      (Prometheus's HTTP API, instant vectors), with the evidence given plus the query time, hosts and drafts.
    - C(eagle3_alert_bands) gives, for each profile the scrape targets serve, the lower edges of its live band
      (acceptance rate and per position, less the band's tolerance) and where the band comes from; a profile without
      a live band of its exact key is left out (the alert holds it to the floor).
"""


class FilterModule:
    """Acceptance band filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_bands_from_run": bands_from_run, "eagle3_bands_merged": bands_merged,
                "eagle3_band_live_queries": live_queries, "eagle3_bands_from_prometheus": bands_from_prometheus,
                "eagle3_alert_bands": alert_bands}
