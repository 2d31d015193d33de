"""The prompts of the parity check: the tutorial's counting prompt and vLLM's own spec-decode test prompts.

vLLM judges speculative decoding on 100 generated chat prompts (vllm-project/vllm
tests/v1/e2e/test_spec_decode.py at commit 0130080b3dec7ade06a538659d1ebb98a55f1b24, `get_test_prompts`,
used by `test_eagle_correctness`): `random.seed(0)`, `random.choices(["repeat", "sentence"], k=num_prompts)`, then
per prompt `random.choice(["test", "temp", "hello", "where"])`. The texts here are vLLM's with their whitespace
normalised (vLLM's are triple-quoted with newlines and indentation; here one line, single spaces). A private
`random.Random(0)` draws the same sequence as the module-level functions after `random.seed(0)`, and leaves the
interpreter's random state alone.
"""
from __future__ import annotations

import random

VLLM_SOURCE = ("vllm-project/vllm tests/v1/e2e/test_spec_decode.py at 0130080b3dec7ade06a538659d1ebb98a55f1b24 "
               "(get_test_prompts, test_eagle_correctness)")

# The tutorial's counting prompt: it must match exactly whatever the share (the parity gate's exact_prompts).
COUNTING_PROMPT = "Count from 1 to 10, separated by commas."

KINDS = ("repeat", "sentence")
WORDS = ("test", "temp", "hello", "where")
TEXTS = {
    "repeat": ("please repeat the word '{word}' 10 times. give no other output than the word at least ten times "
               "in a row, in lowercase with spaces between each word and without quotes."),
    "sentence": ("please give a ten-word sentence that uses the word {word} at least once. give no other output "
                 "than that simple sentence without quotes."),
}


def vllm_test_prompts(count: int = 100, seed: int = 0) -> list[str]:
    """vLLM's get_test_prompts(mm_enabled=False, num_prompts=count) as one-line texts (100: test_eagle_correctness's)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"the number of generated prompts must be a whole number >= 0 (got {count!r})")
    rng = random.Random(seed)
    kinds = rng.choices(KINDS, k=count)
    return [TEXTS[kind].format(word=rng.choice(WORDS)) for kind in kinds]
