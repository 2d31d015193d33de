"""The parity prompts: vLLM's own spec-decode test prompts, generated deterministically, the counting prompt first.

vllm-project/vllm tests/v1/e2e/test_spec_decode.py at 0130080b3dec7ade06a538659d1ebb98a55f1b24, get_test_prompts
(the 100 prompts test_eagle_correctness judges); the values pinned below were drawn from that function (its texts
with whitespace normalised) on 2026-12-03.
"""
from __future__ import annotations

import random

import pytest
import yaml

from ansible_collections.eagle3.trn2.plugins.filter.prompts import eagle3_vllm_test_prompts
from ansible_collections.eagle3.trn2.plugins.module_utils.report.parity_prompts import (COUNTING_PROMPT, TEXTS, WORDS,
                                                                                        vllm_test_prompts)
from conftest import ROOT

REPEAT = ("please repeat the word '{}' 10 times. give no other output than the word at least ten times in a row, "
          "in lowercase with spaces between each word and without quotes.")
SENTENCE = ("please give a ten-word sentence that uses the word {} at least once. give no other output than that "
            "simple sentence without quotes.")


def test_a_hundred_prompts_of_the_two_kinds_as_vllm_draws_them():
    prompts = vllm_test_prompts()
    assert len(prompts) == 100
    assert prompts[:3] == [SENTENCE.format("hello"), SENTENCE.format("temp"), REPEAT.format("temp")]
    kinds = [("repeat" if p.startswith("please repeat") else "sentence") for p in prompts]
    assert kinds.count("repeat") == 37 and kinds.count("sentence") == 63
    every = {t.format(word=w) for t in TEXTS.values() for w in WORDS}
    assert set(prompts) <= every and all("\n" not in p and "  " not in p for p in prompts)
    # vLLM's own texts, whitespace normalised
    assert TEXTS == {"repeat": REPEAT.replace("'{}'", "'{word}'"), "sentence": SENTENCE.replace("{}", "{word}")}


def test_deterministic_and_the_interpreters_random_state_left_alone():
    random.seed(1234)
    expected = [random.random() for _ in range(3)]
    random.seed(1234)
    first = vllm_test_prompts(100)
    assert [random.random() for _ in range(3)] == expected
    assert vllm_test_prompts(100) == first == eagle3_vllm_test_prompts(100) == eagle3_vllm_test_prompts("100")
    # Another count is vLLM's get_test_prompts(num_prompts=n): its own draw, not a prefix of the 100.
    assert len(vllm_test_prompts(2)) == 2 and vllm_test_prompts(0) == []


@pytest.mark.parametrize("count", [-1, True, 2.5, "many"])
def test_a_bad_count_is_refused(count):
    with pytest.raises(ValueError, match="whole number"):
        eagle3_vllm_test_prompts(count)


def test_the_counting_prompt_is_sent_first():
    """The role's prompt set: its fixed prompts (the counting prompt) then the generated ones, as the task sends them."""
    defaults = yaml.safe_load((ROOT / "roles/vllm_bench/defaults/main.yml").read_text())
    (task,) = [t for t in yaml.safe_load((ROOT / "roles/vllm_bench/tasks/profile_bench.yml").read_text())
               if "eagle3.trn2.greedy_completions" in t]
    # Round 1 sends them (with the smoke test); a later round only the smoke test: greedy output is the same.
    assert task["eagle3.trn2.greedy_completions"]["prompts"] == (
        "{{ (vllm_bench_prompts + (vllm_bench_generated_prompts | eagle3.trn2.eagle3_vllm_test_prompts))"
        " if __vllm_bench_profile.round == 1 else [] }}")
    prompts = defaults["vllm_bench_prompts"] + eagle3_vllm_test_prompts(100)  # on neuron (below)
    assert prompts[0] == COUNTING_PROMPT and len(prompts) == 101
    # The project: vLLM's 100 at 10 tokens on neuron, 2 at 32 tokens in the CPU rehearsal (exact anyway).
    roles = yaml.safe_load((ROOT / "roles/vllm_bench/defaults/main.yml").read_text())
    assert roles["vllm_bench_generated_prompts"] == "{{ 100 if eagle3_accelerator == 'neuron' else 2 }}"
    assert roles["vllm_bench_prompt_max_tokens"] == "{{ 10 if eagle3_accelerator == 'neuron' else 32 }}"
