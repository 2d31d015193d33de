"""The compile cache's filters, thin entry points of plugins/module_utils/compile_cache/ (key.py: a unit environment
file's entries and cache root, a failed start's reason; plan.py: where a host's cache comes from, after the wait and
after the apply, and the line the play shows; server/start_failure.py: the causes of a failed start read from its
journal). The key itself is made by the action compile_cache_plan."""
from __future__ import annotations

from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.key import (
    eagle3_compile_cache_failure,
    eagle3_env_file,
    eagle3_vllm_cache_root,
)
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.plan import decide, said, settled

DOCUMENTATION = r"""
  name: compile_cache
  short_description: EAGLE3 compile cache, where a host's cache comes from and a unit environment file's cache root
  description:
    - C(eagle3_compile_cache_decide(plan, waited, canary, wait)) returns the outcome before any apply (state local, ship,
      refused or cold, key, reason) from the action compile_cache_plan's result and the canary wait's last answer.
    - C(eagle3_compile_cache_settled(outcome, plan, unpacked, via, hit_only, accelerator, root)) returns the outcome
      after the apply (shipped or refused by the archive's own key) with its start mode (hit_only, root, parts).
    - C(eagle3_compile_cache_said(outcome, profile)) returns the line the play shows for a profile's compile cache.
    - C(eagle3_vllm_cache_root) returns VLLM_CACHE_ROOT as vLLM resolves it from a unit's environment file.
    - C(eagle3_env_file) returns the NAME=value entries of a unit's environment file.
    - C(eagle3_compile_cache_failure(reason, cache, journal)) returns a failed start's reason, followed, when the start
      ran in cache-hit-only mode, by what that mode means and the key's parts, and, when the start's journal lines show
      a cause the project knows a way out of (the Neuron plugin asking for on-device sampling), by the setting to add.
"""


class FilterModule:
    def filters(self):
        return {
            "eagle3_compile_cache_decide": decide,
            "eagle3_compile_cache_settled": settled,
            "eagle3_compile_cache_said": said,
            "eagle3_vllm_cache_root": eagle3_vllm_cache_root,
            "eagle3_env_file": eagle3_env_file,
            "eagle3_compile_cache_failure": eagle3_compile_cache_failure,
        }
