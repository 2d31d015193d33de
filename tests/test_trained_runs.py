"""The trained rehearsal pair (issue 13), judged on its real runs as fetched (no derivation).

tests/fixtures/runs/trained: `scripts/rehearse.sh -e eagle3_run_id=trained3` (k=3, 50 sonnet prompts
512/128, temperature 0); tests/fixtures/runs/trained-sweep: the same host afterwards with
`-e eagle3_run_id=trainedsweep -e '{"eagle3_num_speculative_tokens": [2, 3, 4]}'` (2026-11-30/12-01).
"""
from __future__ import annotations

import pytest
from conftest import RUNS

from ansible_collections.eagle3.trn2.plugins.filter.compare import eagle3_compare, eagle3_parity, eagle3_sweep
from ansible_collections.eagle3.trn2.plugins.lookup.eagle3_run import load_run

HOST = "rehearsal-1"


def results(run: str) -> dict[str, dict]:
    return load_run(RUNS / run)[HOST]["results"]


@pytest.mark.parametrize("run", ["trained", "trained-sweep"])
def test_partial_acceptance_falling_with_the_position(run):
    for name, data in results(run).items():
        if name == "baseline":
            assert not any(key.startswith("spec_decode_") for key in data)
            continue
        assert 40.0 <= data["spec_decode_acceptance_rate"] <= 90.0, (name, data["spec_decode_acceptance_rate"])
        per_position = data["spec_decode_per_position_acceptance_rates"]
        assert all(a > b for a, b in zip(per_position, per_position[1:])), (name, per_position)
        assert data["spec_decode_acceptance_length"] > 1.5


def test_sweep_recommends_the_fastest_passing_profile_and_the_ks_differ():
    rows = eagle3_compare(results("trained-sweep"))
    spec = [row for row in rows if row["profile"] != "baseline"]
    assert [row["profile"] for row in spec] == ["eagle3-k2", "eagle3-k3", "eagle3-k4"]
    # Higher k drafts more and has each drafted token accepted less often; throughputs differ.
    rates = [row["acceptance_rate"] for row in spec]
    assert rates[0] > rates[1] > rates[2]
    throughputs = [row["output_throughput"] for row in spec]
    assert len({round(t) for t in throughputs}) == 3
    sweep = eagle3_sweep(rows)
    fastest = max(spec, key=lambda row: row["output_throughput"])
    assert sweep["winner"] == fastest["profile"]
    # The tutorial's rule: the highest throughput, not the highest acceptance (here they differ).
    assert sweep["best_acceptance"] == "eagle3-k2" and sweep["differs"] is (fastest["profile"] != "eagle3-k2")


@pytest.mark.parametrize("run", ["trained", "trained-sweep"])
def test_greedy_text_is_real_and_unchanged_by_speculation(run):
    loaded = load_run(RUNS / run)[HOST]
    completions = loaded["completions"]
    base = completions["baseline"]["completions"]
    # Real text: varied words, not one repeated character (the former pair wrote "!!!!").
    assert all(len(set(text.split())) >= 3 for text in base), base
    assert eagle3_parity(completions) == []
