"""The sonnet -> custom JSONL builder (roles/vllm_bench/files/sonnet_to_custom.py).

The equivalence with vLLM's own SonnetDataset is checked on the rehearsal host, where vLLM is
installed (molecule/default: test_custom_prompts_equal_vllm_sonnet_prompts); here its rules run
against a whitespace tokenizer.
"""
from __future__ import annotations

import json
import random
import sys
import types

import pytest

from conftest import ROOT, load_file

builder = load_file(ROOT / "roles/vllm_bench/files/sonnet_to_custom.py")


class WordTokenizer:
    """One token per whitespace-separated word; a chat template of three extra tokens."""

    class _Ids:
        def __init__(self, text):
            self.input_ids = text.split()

    def __call__(self, text):
        return self._Ids(text)

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return "<bos> <user> " + messages[0]["content"] + " <assistant>"


LINES = [f"line {i} of the poem here\n" for i in range(40)]  # 6 tokens each


def templated_len(prompt):
    tok = WordTokenizer()
    return len(tok(tok.apply_chat_template([{"role": "user", "content": prompt}], True, False)).input_ids)


def test_prompts_follow_the_sonnet_rules():
    prompts, lengths = builder.build(LINES, WordTokenizer(), 7, 62, 20, random.Random(0))
    assert len(prompts) == 7 == len(lengths)
    base_offset = len(builder.BASE_PROMPT.split()) + 3  # 11 words + template
    prefix_lines = round((20 - base_offset) / 6)  # 1
    input_lines = round((62 - base_offset) / 6)  # 8
    for prompt, length in zip(prompts, lengths):
        assert prompt.startswith(builder.BASE_PROMPT + "".join(LINES[:prefix_lines]))
        assert prompt.count("\n") == 1 + input_lines
        assert length == templated_len(prompt) == base_offset + 6 * input_lines <= 62


def test_same_seed_same_prompts_other_seed_other_prompts():
    first = builder.build(LINES, WordTokenizer(), 5, 62, 20, random.Random(0))[0]
    assert builder.build(LINES, WordTokenizer(), 5, 62, 20, random.Random(0))[0] == first
    assert builder.build(LINES, WordTokenizer(), 5, 62, 20, random.Random(1))[0] != first


def test_input_len_below_the_base_prompt_is_refused():
    with pytest.raises(SystemExit, match="must be higher than the base prompt length"):
        builder.build(LINES, WordTokenizer(), 1, 5, 0, random.Random(0))


def test_lengths_that_never_fit_are_refused_not_looped_on():
    # 8 lines of 6 tokens + 14 = 62 tokens, always over 60: vLLM would loop forever.
    with pytest.raises(SystemExit, match="could not draw 3 prompts of at most 60 tokens"):
        builder.build(LINES, WordTokenizer(), 3, 60, 20, random.Random(0))


def test_main_writes_jsonl_with_the_output_length(tmp_path, monkeypatch, capsys):
    fake = types.ModuleType("transformers")
    fake.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda name: WordTokenizer())
    monkeypatch.setitem(sys.modules, "transformers", fake)
    source = tmp_path / "sonnet.txt"
    source.write_text("".join(LINES))
    out = tmp_path / "custom.jsonl"
    builder.main(["x", str(source), "tok", str(out), "4", "62", "128", "20"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and {row["output_tokens"] for row in rows} == {128}
    report = json.loads(capsys.readouterr().out)
    assert report["prompts"] == 4 and report["path"] == str(out) and len(report["sha256"]) == 64
    assert oct(out.stat().st_mode & 0o777) == "0o644"
