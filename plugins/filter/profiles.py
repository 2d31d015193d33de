"""The server profiles' filters: the profiles, their unit and config names, and the paths the roles share
(plugins/module_utils/server/profiles.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.server.profiles import (eagle3_layout, eagle3_profile_files,
                                                                                  eagle3_profiles, eagle3_serving_unit)

DOCUMENTATION = r"""
  name: profiles
  short_description: EAGLE3 server profiles and the names of their units and config files
  description:
    - C(eagle3_profiles) expands num_speculative_tokens values into server profiles (baseline first).
    - C(eagle3_profile_files) gives each profile its C(unit) (vllm-<name>.service) and C(config) (<name>.yaml)
      names, unless it already carries them.
    - C(eagle3_serving_unit) names the unit that serves the chosen profile after the benchmark (any input).
    - C(eagle3_layout) gives the paths and names several roles share (any input), declared here once. They are the
      configuration directory on the hosts and its environment files, the units' directory and name pattern, the
      serving unit, the helpers' directory on the hosts, and the collection's report templates directory on the
      controller.
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_profiles": eagle3_profiles, "eagle3_profile_files": eagle3_profile_files,
                "eagle3_serving_unit": eagle3_serving_unit, "eagle3_layout": eagle3_layout}
