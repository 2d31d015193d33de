"""The vLLM effective-configuration filters: server options rendered so they reach the engine, its effective
configuration read back and compared (plugins/module_utils/server/vllm_effective.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_effective import (vllm_config_mismatches,
                                                                                        vllm_effective_config,
                                                                                        vllm_serve_options)

DOCUMENTATION = r"""
  name: vllm_effective
  short_description: vLLM server options in, effective engine configuration out
  description:
    - C(vllm_serve_options) renders server options for C(vllm serve --config) so booleans reach the engine.
    - C(vllm_effective_config) reads the engine's effective configuration from a startup log.
    - C(vllm_config_mismatches) lists where the effective configuration differs from the rendered config.
"""


class FilterModule:
    """vLLM effective-configuration filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "vllm_serve_options": vllm_serve_options,
            "vllm_effective_config": vllm_effective_config,
            "vllm_config_mismatches": vllm_config_mismatches,
        }
