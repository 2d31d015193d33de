"""The trained rehearsal pair (`eagle3_rehearsal_pair: trained`: drafts that accept as real ones do), judged on its real
runs as fetched (no derivation): tests/fixtures/README.md names each run, its command and date.

- trained: k=3, the rehearsal's benchmark (50 sonnet prompts 512/128, temperature 0);
- trained-sweep: the same host with k 2/3/4;
- trained-weak: the same host serving EAGLE3 with the weak draft (draft-weak/), the acceptance drill.
"""
from __future__ import annotations

import json

import pytest

from conftest import RUNS, host_of
from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import eagle3_compare, eagle3_parity
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import load_run, read_run

# The rehearsal inventory's gates (parity, acceptance, speedup enforced; reference informational).
REHEARSAL_GATES = {"reference": {"enforce": False, "tolerance": 0.30}}
REFERENCE = json.loads((RUNS.parent / "references/rehearsal-fixture-pair.json").read_text())


def results(run: str) -> dict[str, dict]:
    return load_run(RUNS / run)[host_of(run)]["results"]


def report(run: str) -> dict:
    return eagle3_report(read_run(RUNS / run), [host_of(run)], REHEARSAL_GATES, REFERENCE, run_id=run)


@pytest.mark.parametrize("run", ["trained", "trained-sweep"])
def test_partial_acceptance_falling_with_the_position(run):
    for name, data in results(run).items():
        if name == "baseline":
            assert not any(key.startswith("spec_decode_") for key in data)
            continue
        # The targets, as on trn2 (74.1 %, length 3.22, per position 86.5 / 72.5 / 63.5 %).
        assert 40.0 <= data["spec_decode_acceptance_rate"] <= 90.0, (name, data["spec_decode_acceptance_rate"])
        per_position = data["spec_decode_per_position_acceptance_rates"]
        assert all(a > b for a, b in zip(per_position, per_position[1:])), (name, per_position)
        assert data["spec_decode_acceptance_length"] > 1.5
        assert data["spec_decode_acceptance_length"] == pytest.approx(1 + sum(per_position), abs=0.01)
        assert 0 < data["spec_decode_accepted_tokens"] < data["spec_decode_draft_tokens"]


def test_k3_run_passes_every_enforced_gate():
    verdict = report("trained")["verdict"]
    assert verdict["ok"], verdict


def test_sweep_recommends_the_fastest_profile_passing_the_gates_and_the_ks_differ():
    run = report("trained-sweep")
    rows = eagle3_compare(results("trained-sweep"))
    spec = [row for row in rows if row["profile"] != "baseline"]
    assert [row["profile"] for row in spec] == ["eagle3-k2", "eagle3-k3", "eagle3-k4"]
    # Higher k drafts more and has each drafted token accepted less often; the throughputs differ.
    rates = [row["acceptance_rate"] for row in spec]
    assert rates[0] > rates[1] > rates[2], rates
    throughputs = [row["output_throughput"] for row in spec]
    assert len({round(t) for t in throughputs}) == 3, throughputs
    gates = run["summary"]["gates"]
    passing = [row for row in spec
               if all(g["ok"] or not g["enforced"] for g in gates if g["profile"] in (row["profile"], None))]
    assert passing, gates
    sweep = run["summary"]["sweep"][host_of("trained-sweep")]
    assert sweep["winner"] == max(passing, key=lambda row: row["output_throughput"])["profile"], sweep
    assert sweep["best_acceptance"] == "eagle3-k2"


def test_weak_draft_fails_the_acceptance_gate_with_the_tutorials_advice():
    data = results("trained-weak")["eagle3"]
    assert data["spec_decode_acceptance_rate"] < 30.0, data["spec_decode_acceptance_rate"]
    run = report("trained-weak")
    assert not run["verdict"]["ok"]
    failing = [g for g in run["verdict"]["failing"] if g["gate"] == "acceptance"]
    assert len(failing) == 1 and failing[0]["profile"] == "eagle3" and failing[0]["value"] < 30, failing
    assert "stop tuning" in failing[0]["message"]


@pytest.mark.parametrize("run", ["trained", "trained-sweep", "trained-weak"])
def test_greedy_text_is_real_and_unchanged_by_speculation(run):
    completions = load_run(RUNS / run)[host_of(run)]["completions"]
    base = completions["baseline"]["completions"]
    # Real text: words, not one repeated character (the agreeing pair writes "!!!!").
    assert all(len(set(text.split())) >= 3 for text in base), base
    # Greedy speculation is lossless: every profile's text equals the baseline's, weak draft or not.
    assert eagle3_parity(completions) == []
