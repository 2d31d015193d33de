"""The models fit what they are served with (plugins/module_utils/server/model_fit.py; refused before a host is paid for): the
speculative method describes the draft's checkpoint and max-model-len is within the target's own limit, by vLLM 0.29.0's
own rules. The role's refusals from the hub's config.json are in tests/integration/test_gated_access.py; the rehearsal's pair passes
in molecule default (model_assets' fit.yml on the host)."""
from __future__ import annotations

import json

from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT
from ansible_collections.eagle3.trn2.plugins.module_utils.server import model_fit as F

HUB = ROOT / "tests/fixtures/hub"
TARGET = json.loads((HUB / "llama-3.1-8b-instruct.json").read_text())
SPECULATOR = json.loads((HUB / "speculator-eagle3.json").read_text())
# One config.json per kind of draft checkpoint, each as its publisher writes it (the keys vLLM reads to tell them).
DRAFTS = {
    "eagle3": [SPECULATOR,  # RedHatAI's speculators format
               {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"},  # yuhuili/EAGLE3-LLaMA3.1, the rehearsal's
               {"architectures": ["Eagle3LlamaForCausalLM"], "model_type": "llama"}],
    "eagle": [{"architectures": ["LlamaForCausalLM"], "model_type": "eagle"},
              {"speculators_model_type": "eagle", "architectures": ["EagleSpeculator"]}],
    "medusa": [{"architectures": ["MedusaModel"], "model_type": "medusa"}],
    "mlp_speculator": [{"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator"}],
    "model": [TARGET, {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}],
}


@hsettings(max_examples=120, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(F.METHOD_KIND)), st.sampled_from(sorted(DRAFTS)), st.data())
def test_a_method_is_refused_exactly_when_the_draft_is_of_another_kind(method, kind, data):
    draft = data.draw(st.sampled_from(DRAFTS[kind]))
    found = F.fit_problems("t", TARGET, "d", draft, method, 0)
    assert bool(found) == (F.METHOD_KIND[method] != kind), (method, kind, found)
    for line in found:
        assert line.startswith(f"eagle3_speculative_method {method} does not fit the draft d")


def test_methods_without_a_draft_checkpoint_and_unknown_configs_are_not_judged():
    assert F.fit_problems("t", TARGET, "d", DRAFTS["model"][0], "ngram", 0) == []
    assert F.fit_problems("t", None, "d", None, "eagle3", 10 ** 8) == []
    assert F.fit_problems("t", {}, "d", {}, "medusa", 4096) == []


@hsettings(max_examples=120, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(F.LENGTH_KEYS), st.integers(min_value=1, max_value=1 << 20), min_size=1),
       st.integers(min_value=1, max_value=1 << 21))
def test_max_model_len_is_refused_exactly_above_the_targets_own_limit(lengths, asked):
    limit = lengths.get("model_max_length") or min(lengths.values())
    found = F.fit_problems("t", {"architectures": ["LlamaForCausalLM"], **lengths}, "d", SPECULATOR, "eagle3", asked)
    assert bool(found) == (asked > limit), (lengths, asked, found)
    if found:
        assert found[0].startswith(f"eagle3_server_options.max-model-len {asked} exceeds the target model t's own "
                                   f"limit {limit}")


def test_llama_31s_own_limit_and_a_scaled_rope_left_to_vllm():
    assert F.max_length(TARGET) == (131072, "max_position_embeddings")
    assert F.fit_problems("t", TARGET, "d", SPECULATOR, "eagle3", 131072) == []
    yarn = dict(TARGET, rope_scaling={"rope_type": "yarn", "factor": 4.0})
    assert F.max_length(yarn)[0] is None and F.fit_problems("t", yarn, "d", SPECULATOR, "eagle3", 500000) == []

