"""The free space of a path on the controller, checked in Ansible's own process (vllm_bench's results directory):
plugins/module_utils/host/free_space.py, which vllm_bench also runs on the hosts."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.host.free_space import problem

DOCUMENTATION = r"""
  name: eagle3_free_space
  short_description: Empty when a path's file system has at least MIN MB free, else "LABEL PATH has N MB free"
  description:
    - The path, or its nearest existing parent when it does not exist yet, is measured on the controller.
"""


def eagle3_free_space(path: str, label: str, min_mb: int) -> str:
    return problem(label, path, int(min_mb))


class FilterModule:
    """Free space filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_free_space": eagle3_free_space}
