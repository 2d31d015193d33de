"""Acceptance bands as filters (plugins/module_utils/bands.py): the gate of a profile, bands recorded from a run, and
a band file's entries updated."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.bands import bands_from_run, bands_merged

DOCUMENTATION = r"""
  name: bands
  short_description: Acceptance bands recorded from a run
  description:
    - C(eagle3_bands_from_run) makes one band per speculative profile of a run (the hosts' mean figures).
    - C(eagle3_bands_merged) replaces the bands of the same key in a list and adds the others.
"""


class FilterModule:
    """Acceptance band filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_bands_from_run": bands_from_run, "eagle3_bands_merged": bands_merged}
