"""Filter giving the parity check's generated prompts (vLLM's own spec-decode test prompts).

The texts and their source are in plugins/module_utils/report/parity_prompts.py; tested with pytest (tests/).
"""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.report.parity_prompts import vllm_test_prompts


DOCUMENTATION = r"""
  name: prompts
  short_description: vLLM's spec-decode test prompts for the parity check
  description:
    - C(eagle3_vllm_test_prompts) gives N prompts as vLLM's get_test_prompts(mm_enabled=False, num_prompts=N) draws
      them (vllm-project/vllm tests/v1/e2e/test_spec_decode.py at 0130080b3dec7ade06a538659d1ebb98a55f1b24, seed 0,
      whitespace normalised); 100 is the set test_eagle_correctness judges. Deterministic; the interpreter's random
      state is left alone.
"""


def eagle3_vllm_test_prompts(count: Any) -> list[str]:
    """`count` vLLM-style prompts ("repeat"/"sentence", seed 0); a numeric string is accepted (Jinja)."""
    if isinstance(count, str) and count.strip().isdigit():
        count = int(count)
    return vllm_test_prompts(count)


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_vllm_test_prompts": eagle3_vllm_test_prompts}
