#!/usr/bin/env python3
"""Build the rehearsal's tiny models and benchmark text, offline and deterministically.

Writes, under --out:
  dataset/sonnet.txt   poem-like lines (the vLLM wheels do not ship sonnet.txt)
  target/              LlamaForCausalLM + a byte-level BPE tokenizer with a chat template
  draft/               an EAGLE3 head (LlamaForCausalLMEagle3) for that target
  manifest.json        parameters and file checksums (written last: its presence means complete)

--agree zeroes the final norm of both models, so every logit is 0 and greedy decoding picks
token 0 in both: EAGLE3 acceptance is 100 % at temperature 0. Without it the weights are random
and acceptance is near 0 %. Both are deterministic for a given --seed.

Sizes (docs/performance.md, "Speedup margin"): on the CPU build with enforce-eager a decode
step costs a fixed ~3 ms (scheduling, sampling) plus ~0.6 ms per target layer, and each EAGLE3
draft pass ~3.4 ms, whatever the width; a 512-token prefill costs 0.2-0.6 s and grows with width
and depth. A narrow, deep target (hidden 64 = 2 heads of 32, the CPU attention's minimum head
size; 24 layers) makes the target's forward pass most of a decode step while the prefill stays
small, so speculation pays as it does on trn2: about 2x at full acceptance, where the former
3-layer, hidden-128 target measured 0.9x-1.4x (noise decided the gate). 32 layers gained
nothing (the longer prefill ate the gain). float32, because CPUs without AVX512-BF16 run
bfloat16 matmuls through a slow fallback.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
from pathlib import Path

WORDS = (
    "summer winter rose time love beauty eye heart night day youth age truth fair sweet "
    "glass face world death life verse song star sun moon praise tongue hand hour earth "
    "shadow light spring field bud flower grace pride gold brow blood breath grave sky "
    "thou thy thee doth hath shall might still yet ever never more most than when where"
).split()
VERBS = "shines fades grows sings sleeps burns turns wakes bends keeps gives takes lends hides".split()
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
SPECIAL = ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]


def poem_lines(seed: int, count: int) -> list[str]:
    """Return `count` deterministic poem-like lines, each ending in a newline."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 8))]
        words.insert(rng.randint(1, len(words) - 1), rng.choice(VERBS))
        line = " ".join(words)
        lines.append(line[0].upper() + line[1:] + rng.choice([",", ".", ";", ""]) + "\n")
    return lines


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_tokenizer(text_file: Path, vocab_size: int, out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([str(text_file)], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    # Added after training so that id 0 is an ordinary byte token, not a special one.
    fast.add_special_tokens({"bos_token": SPECIAL[0], "eos_token": SPECIAL[1],
                             "additional_special_tokens": SPECIAL[2:]})
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 4096
    fast.save_pretrained(out)
    return fast


def llama_config(vocab: int, hidden: int, layers: int, fast, dtype: str) -> dict:
    heads = hidden // 32  # vLLM's CPU attention needs head_dim >= 32
    return {
        "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": hidden * 2,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
        "head_dim": 32, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "tie_word_embeddings": False,
        "bos_token_id": fast.bos_token_id, "eos_token_id": fast.eos_token_id,
        "torch_dtype": dtype,
    }


def build_target(out: Path, cfg: dict, agree: bool) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM(LlamaConfig(**cfg)).to(getattr(torch, cfg["torch_dtype"]))
    if agree:
        with torch.no_grad():
            model.model.norm.weight.zero_()
    model.save_pretrained(out, safe_serialization=True)


def build_draft(out: Path, cfg: dict, aux_layers: list[int], agree: bool) -> None:
    import torch
    from safetensors.torch import save_file

    hidden, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    dtype = getattr(torch, cfg["torch_dtype"])
    attn = cfg["num_attention_heads"] * cfg["head_dim"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape) * 0.02).to(dtype)

    def ones(size: int) -> torch.Tensor:
        return torch.ones(size, dtype=dtype)

    weights = {
        "midlayer.self_attn.q_proj.weight": rand(attn, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": rand(kv, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": rand(kv, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": rand(hidden, attn),
        "midlayer.mlp.gate_proj.weight": rand(inter, hidden),
        "midlayer.mlp.up_proj.weight": rand(inter, hidden),
        "midlayer.mlp.down_proj.weight": rand(hidden, inter),
        "midlayer.input_layernorm.weight": ones(hidden),
        "midlayer.post_attention_layernorm.weight": ones(hidden),
        "midlayer.hidden_norm.weight": ones(hidden),
        "fc.weight": rand(hidden, len(aux_layers) * hidden),
        "norm.weight": torch.zeros(hidden, dtype=dtype) if agree else ones(hidden),
        "lm_head.weight": rand(vocab, hidden),
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    draft_cfg = dict(cfg, num_hidden_layers=1, architectures=["LlamaForCausalLMEagle3"],
                     model_type="llama", draft_vocab_size=vocab, target_hidden_size=hidden,
                     eagle_config={"eagle_aux_hidden_state_layer_ids": aux_layers,
                                   "use_aux_hidden_state": True})
    (out / "config.json").write_text(json.dumps(draft_cfg, indent=2, sort_keys=True) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--agree", action="store_true")
    parser.add_argument("--vocab-size", type=int, default=1024)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--target-layers", type=int, default=24)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--dataset-lines", type=int, default=600)
    args = parser.parse_args()

    import torch

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    dataset = args.out / "dataset" / "sonnet.txt"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("".join(poem_lines(args.seed, args.dataset_lines)))

    fast = build_tokenizer(dataset, args.vocab_size, args.out / "target")
    cfg = llama_config(len(fast), args.hidden_size, args.target_layers, fast, args.dtype)
    build_target(args.out / "target", dict(cfg, architectures=["LlamaForCausalLM"]), args.agree)
    # Low, middle and high layers, as EAGLE3 heads use them (Llama 3.1 8B's speculator: 2, 16, 29 of 32).
    layers = args.target_layers
    aux_layers = sorted({min(2, layers - 1), layers // 2, max(layers - 3, 0)})
    build_draft(args.out / "draft", cfg, aux_layers, args.agree)

    for path in args.out.rglob("*"):  # world-readable: the service user loads them, root owns them
        path.chmod(0o755 if path.is_dir() else 0o644)
    files = sorted(p for p in args.out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "seed": args.seed, "agree": args.agree, "vocab_size": len(fast),
        "hidden_size": args.hidden_size, "target_layers": args.target_layers, "dtype": args.dtype,
        "files": {str(p.relative_to(args.out)): sha256(p) for p in files},
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (args.out / "manifest.json").chmod(0o644)
    print(json.dumps({"out": str(args.out), "files": len(files), "agree": args.agree}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
