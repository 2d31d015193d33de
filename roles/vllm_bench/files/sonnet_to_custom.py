#!/usr/bin/env python3
"""Build the `custom` dataset equivalent of `vllm bench serve --dataset-name sonnet`.

vLLM >= 0.32 no longer ships the sonnet dataset. This writes a JSONL file for
`--dataset-name custom` whose prompts are made exactly as vLLM 0.29's SonnetDataset.sample
makes them (vllm/benchmarks/datasets/datasets.py): the base instruction, the first poem lines
as a shared prefix of `prefix_len` tokens, then random poem lines up to `input_len` tokens
including the chat template; prompts whose templated length exceeds `input_len` are redrawn.
`--dataset-name custom` applies the same chat template, and `--custom-output-len` sets the
output length, so the requests match the sonnet ones.

usage: sonnet_to_custom.py SONNET_TXT TOKENIZER OUT_JSONL NUM_PROMPTS INPUT_LEN OUTPUT_LEN
                           [PREFIX_LEN=200] [SEED=0]
Prints one JSON line: {"path", "prompts", "mean_prompt_len", "sha256"}.
"""
import hashlib
import json
import os
import random
import sys

BASE_PROMPT = "Pick as many lines as you can from these poem lines:\n"


def templated(tokenizer, text):
    return tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                         add_generation_prompt=True, tokenize=False)


def build(lines, tokenizer, num_prompts, input_len, prefix_len, rng):
    avg_len = sum(len(tokenizer(line).input_ids) for line in lines) / len(lines)
    base_offset = len(tokenizer(templated(tokenizer, BASE_PROMPT)).input_ids)
    if input_len <= base_offset:
        raise SystemExit(f"input_len {input_len} must be higher than the base prompt length ({base_offset})")
    num_input_lines = max(round((input_len - base_offset) / avg_len), 1)
    num_prefix_lines = max(round((prefix_len - base_offset) / avg_len), 0)
    prefix = lines[:num_prefix_lines]
    prompts, lengths, attempts = [], [], 0
    while len(prompts) < num_prompts:
        attempts += 1
        if attempts > 100 * num_prompts:
            raise SystemExit(f"could not draw {num_prompts} prompts of at most {input_len} tokens from the text")
        prompt = BASE_PROMPT + "".join(prefix + rng.choices(lines, k=num_input_lines - num_prefix_lines))
        length = len(tokenizer(templated(tokenizer, prompt)).input_ids)
        if length <= input_len:
            prompts.append(prompt)
            lengths.append(length)
    return prompts, lengths


def main(argv):
    if len(argv) not in (7, 8, 9):
        raise SystemExit(__doc__)
    source, tokenizer_id, out = argv[1:4]
    num_prompts, input_len, output_len = (int(v) for v in argv[4:7])
    prefix_len = int(argv[7]) if len(argv) > 7 else 200
    seed = int(argv[8]) if len(argv) > 8 else 0
    from transformers import AutoTokenizer  # the venv's, as the benchmark client uses it

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_id)
    with open(source, encoding="utf-8") as handle:
        lines = handle.readlines()
    prompts, lengths = build(lines, tokenizer, num_prompts, input_len, prefix_len, random.Random(seed))
    body = "".join(json.dumps({"prompt": p, "output_tokens": output_len}) + "\n" for p in prompts)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(body)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    print(json.dumps({"path": out, "prompts": len(prompts), "mean_prompt_len": round(sum(lengths) / len(lengths), 1),
                      "sha256": hashlib.sha256(body.encode()).hexdigest()}))


if __name__ == "__main__":
    main(sys.argv)
