"""Rounds (eagle3_bench_rounds: one round is one sample, too few to decide on): interleaved rounds pooled into means
with 95 % intervals, every round's file validated, incomplete rounds failing their host, and the decisions (speedup
gate, sweep, best) on the lower bound.

The multi-round runs here are labelled derived variants of real files: the kept trained run (tests/fixtures/runs/
trained, sweep: trained-sweep) is round 1, and round r >= 2 is that file with its measured figures (output
throughput, median TPOT and TTFT) replaced by the r-th idle pair of the rehearsal's own repeated measurements
(docs/data/speedup-trained-20261202T024400Z.json: 10 baseline/EAGLE3 pairs of the same trained pair); the counters and
workload stay the file's, which every round runs alike. The role writes these files (roles/vllm_bench,
molecule default's interrupted drill runs 2 rounds for real)."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.phase.bench_plan import eagle3_bench_plan
from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import eagle3_serving
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.results import intervals as I
from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as L
from ansible_collections.eagle3.trn2.plugins.module_utils.results import rounds as R

PAIRS = [p for p in json.loads((ROOT / "docs/data/speedup-trained-20261202T024400Z.json").read_text())["pairs"]
         if not p["busy"]]
MEASURED = ("output_throughput", "median_tpot_ms", "median_ttft_ms")
GATES = {"reference": {"enforce": False}}


def _derive(src: Path, dest: Path, round_no: int, figures: dict[str, float]) -> None:
    data = json.loads(src.read_text())
    data.update({k: figures[k] for k in MEASURED}, round=str(round_no))
    dest.write_text(json.dumps(data))


def rounds_run(tmp_path: Path, rounds: int, fixture: str = "trained", scale: dict[str, list[float]] | None = None) -> Path:
    """A copy of a kept run with rounds 2..N derived from the measured pairs (see the module's doc). `scale`:
    {profile: per-round factors on its throughput} for the sweep's ties (a labelled variant)."""
    run = tmp_path / fixture
    shutil.copytree(RUNS / fixture, run)
    (host,) = [p for p in run.iterdir() if p.is_dir()]
    profiles = sorted(p.name[: -len(".json")] for p in host.glob("*.json")
                      if p.name not in ("manifest.json", "timeline.json") and not p.name.endswith(".completions.json"))
    for r in range(1, rounds + 1):
        pair = PAIRS[r - 1]
        for profile in profiles:
            figures = dict(pair["baseline" if profile == "baseline" else "eagle3"])
            factor = (scale or {}).get(profile, [1.0] * rounds)[r - 1]
            figures["output_throughput"] *= factor
            if r == 1:
                data = json.loads((host / f"{profile}.json").read_text())
                data.update({k: figures[k] for k in MEASURED})
                (host / f"{profile}.json").write_text(json.dumps(data))
            else:
                _derive(host / f"{profile}.json", host / f"{profile}.round{r}.json", r, figures)
    return run


def report_of(run: Path, **kwargs):
    (host,) = [p.name for p in run.iterdir() if p.is_dir()]
    return eagle3_report(read_run(run), [host], kwargs.pop("gates", GATES), run_id="rounds", **kwargs), host


def test_the_plan_interleaves_rounds_and_names_each_file_by_the_layout():
    profiles = [{"name": "baseline", "unit": "vllm-baseline.service"}, {"name": "eagle3-k2", "unit": "u2"},
                {"name": "eagle3-k3", "unit": "u3"}]
    plan = eagle3_bench_plan(profiles, 3)
    assert [(p["round"], p["name"]) for p in plan] == [(r, n) for r in (1, 2, 3) for n in
                                                       ("baseline", "eagle3-k2", "eagle3-k3")]
    assert [p["result"] for p in plan[:4]] == ["baseline.json", "eagle3-k2.json", "eagle3-k3.json",
                                               "baseline.round2.json"]
    assert plan[3]["key"] == "baseline.round2" and plan[3]["unit"] == "vllm-baseline.service"
    assert eagle3_bench_plan(profiles, 1) == [dict(p, round=1, result=f"{p['name']}.json", key=p["name"])
                                              for p in profiles]
    # the plan judges nothing: rounds below 1 are the schema's to refuse (each value is checked once)
    assert eagle3_bench_plan(profiles, 0) == []
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import settings_problems
    assert settings_problems({"eagle3_bench_rounds": 0})[0].startswith("eagle3_bench_rounds must be")


def test_five_rounds_give_every_figure_and_speedup_its_interval(tmp_path):
    report, host = report_of(rounds_run(tmp_path, 5))
    rows = {r["profile"]: r for r in report["summary"]["hosts"][host]}
    assert report["verdict"]["ok"], report["lines"]
    for name, row in rows.items():
        assert row["rounds"] == 5
        for figure in ("output_throughput", "median_tpot_ms", "median_ttft_ms"):
            values = [PAIRS[i]["baseline" if name == "baseline" else "eagle3"][figure] for i in range(5)]
            interval = row["intervals"][figure]
            # the geometric mean and its log-scale interval (a positive figure's interval cannot go negative)
            geometric = math.exp(sum(math.log(v) for v in values) / 5)
            assert interval["mean"] == pytest.approx(geometric) == pytest.approx(row[figure])
            assert 0 < interval["low"] < interval["mean"] < interval["high"] and interval["n"] == 5
            assert interval["scale"] == "log"
    eagle3 = rows["eagle3"]
    logs = [math.log(PAIRS[i]["eagle3"]["output_throughput"] / PAIRS[i]["baseline"]["output_throughput"])
            for i in range(5)]
    assert eagle3["speedup"] == pytest.approx(math.exp(sum(logs) / 5))
    assert eagle3["speedup_low"] < eagle3["speedup"] < eagle3["speedup_high"]
    assert eagle3["intervals"]["acceptance_rate"]["n"] == 5
    # the pooled throughputs' ratio is the paired speedup itself (both geometric means)
    assert eagle3["output_throughput"] / rows["baseline"]["output_throughput"] == pytest.approx(eagle3["speedup"])
    assert [iv["n"] for iv in eagle3["position_intervals"]] == [5, 5, 5]
    gate = next(g for g in report["summary"]["gates"] if g["gate"] == "speedup")
    assert gate["value"] == pytest.approx(eagle3["speedup_low"]) and "over 5 rounds" in gate["message"]
    assert any(line.startswith("rounds: 5 per profile, interleaved") for line in report["lines"])
    assert R.shown(eagle3["speedup"], eagle3["speedup_interval"], ".2f", "x").count("[") == 1
    fleet = report["summary"]["fleet_intervals"]["eagle3"]
    assert fleet["hosts"] == 1 and fleet["speedup"]["low"] is None  # one host: no interval across hosts


def test_one_round_says_the_decision_rests_on_one_sample():
    report = eagle3_report(read_run(RUNS / "trained"), ["rehearsal-1"], GATES)
    assert report["summary"]["one_sample"] is True
    assert any("rests on one sample" in line for line in report["lines"])
    row = next(r for r in report["summary"]["hosts"]["rehearsal-1"] if r["profile"] == "eagle3")
    assert row["rounds"] == 1 and row["speedup_low"] is None and row["intervals"]["output_throughput"]["low"] is None


def test_the_speedup_gate_rests_on_the_lower_bound(tmp_path):
    run = rounds_run(tmp_path, 5)
    report, host = report_of(run)
    row = next(r for r in report["summary"]["hosts"][host] if r["profile"] == "eagle3")
    floor = (row["speedup_low"] + row["speedup"]) / 2  # the mean passes it, the lower bound does not
    failed, _ = report_of(run, gates=dict(GATES, speedup={"enforce": True, "min": round(floor, 2)}))
    gate = next(g for g in failed["summary"]["gates"] if g["gate"] == "speedup")
    assert not gate["ok"] and not failed["verdict"]["ok"] and "its lower bound" in gate["message"]


def test_a_missing_round_fails_its_host_by_name(tmp_path):
    run = rounds_run(tmp_path, 3)
    (host,) = [p for p in run.iterdir() if p.is_dir()]
    (host / "eagle3.round3.json").unlink()
    report, name = report_of(run)
    assert not report["verdict"]["ok"]
    assert "rounds: eagle3 has round(s) 1, 2 of 3: round(s) 3 missing or unusable" in report["verdict"]["failed_hosts"][name]


def test_rounds_are_counted_from_the_files_and_the_manifest(tmp_path):
    """A gap (round 3 without round 2) and a manifest asking for more rounds than were fetched both fail the host,
    naming the rounds missing."""
    run = rounds_run(tmp_path, 3)
    (host,) = [p for p in run.iterdir() if p.is_dir()]
    (host / "eagle3.round2.json").unlink()
    report, name = report_of(run)
    assert "eagle3 has round(s) 1, 3 of 3: round(s) 2 missing or unusable" in report["verdict"]["failed_hosts"][name]
    run = rounds_run(tmp_path / "asked", 2)
    (host,) = [p for p in run.iterdir() if p.is_dir()]
    manifest = json.loads((host / "manifest.json").read_text())
    manifest["parameters"]["rounds"] = 4
    (host / "manifest.json").write_text(json.dumps(manifest))
    report, name = report_of(run)
    assert "baseline has round(s) 1, 2 of 4: round(s) 3, 4 missing or unusable" in report["verdict"]["failed_hosts"][name]


def report_with_edited(run: Path, file: str, **change) -> tuple[dict, str, dict[str, str]]:
    """The report of `run` after `change` was written into its one host's `file`: (report, host, bad file -> reason)."""
    (host,) = [p for p in run.iterdir() if p.is_dir()]
    data = json.loads((host / file).read_text())
    (host / file).write_text(json.dumps(dict(data, **change)))
    report, name = report_of(run)
    return report, name, {b["file"]: b["reason"] for b in report["summary"]["bad_files"]}


def test_a_round_file_of_another_round_is_refused(tmp_path):
    report, name, bad = report_with_edited(rounds_run(tmp_path, 3), "baseline.round2.json", round="3")
    assert "round '3' is not the file's (baseline.round2.json is round 2)" in bad[f"{name}/baseline.round2.json"]
    assert not report["verdict"]["ok"] and "baseline has round(s) 1, 3 of 3" in report["verdict"]["failed_hosts"][name]


def test_a_round_with_another_workload_is_refused(tmp_path):
    report, name, bad = report_with_edited(rounds_run(tmp_path, 2), "eagle3.round2.json", output_len="64")
    assert "workload differs from baseline's" in bad[f"{name}/eagle3.round2.json"]


def _sweep(tmp_path, scale):
    report, host = report_of(rounds_run(tmp_path, 5, "trained-sweep", scale))
    return report["summary"]["sweep"][host], report


def test_a_tie_goes_to_the_smaller_k(tmp_path):
    # k3 measured a little faster than k2 on average, but round by round within noise: a tie, k2 is served
    noise = [1.04, 0.98, 1.05, 0.99, 1.03]
    sweep, report = _sweep(tmp_path, {"eagle3-k3": noise, "eagle3-k4": [0.8] * 5})
    assert sweep["winner"] == "eagle3-k2" and "eagle3-k3" in sweep["tied_with"]
    assert "smallest k" in sweep["decided_by"] and any("recommended eagle3-k2" in l for l in report["lines"])


def test_a_clear_win_goes_to_the_highest_lower_bound(tmp_path):
    sweep, _ = _sweep(tmp_path, {"eagle3-k3": [1.30, 1.28, 1.33, 1.31, 1.29], "eagle3-k4": [0.8] * 5})
    assert sweep["winner"] == "eagle3-k3" and sweep["tied_with"] == []
    assert "highest lower bound" in sweep["decided_by"]


def test_best_serves_on_the_lower_bound(tmp_path):
    # eagle3-k3's throughput is higher on average than eagle3-k2's but swings: its lower bound is below k2's
    swing = [1.6, 0.7, 1.6, 0.7, 1.6]
    report, host = report_of(rounds_run(tmp_path, 5, "trained-sweep", {"eagle3-k3": swing, "eagle3-k4": [0.8] * 5}),
                             serve="best")
    rows = {r["profile"]: r for r in report["summary"]["hosts"][host]}
    assert rows["eagle3-k3"]["output_throughput"] > rows["eagle3-k2"]["output_throughput"]
    assert rows["eagle3-k3"]["decision"] < rows["eagle3-k2"]["decision"]
    assert report["summary"]["serving"]["profile"] == "eagle3-k2"
    assert "lower bound of the speedup" in report["summary"]["serving"]["why"]


@hsettings(max_examples=80, deadline=None, derandomize=True)
@given(st.one_of(st.none(), st.floats(allow_nan=True), st.integers(), st.text(max_size=5)),
       st.one_of(st.none(), st.fixed_dictionaries({"low": st.floats(-1e6, 1e6), "high": st.floats(-1e6, 1e6)})),
       st.sampled_from([".1f", ".2f"]), st.sampled_from(["", "x"]))
def test_a_shown_interval_is_only_numbers(value, interval, spec, suffix):
    """report.md.j2 writes eagle3_with_interval unescaped: whatever it is given, it writes a number, its interval or
    "-", never a text (tests/unit/test_result_checks.py::test_markdown_and_csv_escape_every_expression)."""
    import re
    text = R.shown(value, interval, spec, suffix)
    number = r"-?(inf|nan|[0-9]+\.[0-9]+)"
    assert re.fullmatch(rf"-|{number}{suffix}( \[{number}, {number}\])?", text), text


POSITIVE = st.floats(min_value=1.0, max_value=1000.0, allow_nan=False)


@hsettings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(min_value=2, max_value=8).flatmap(
    lambda n: st.tuples(st.lists(POSITIVE, min_size=n, max_size=n), st.lists(POSITIVE, min_size=n, max_size=n))))
def test_pooled_rows_hold_their_rounds(pair):
    """Any rounds: each figure's mean lies within its rounds and inside its interval; the speedup is the paired
    ratio's geometric mean, inside its interval, and the decision is its lower bound; round order changes nothing."""
    base, spec = pair
    docs = {"baseline": [{"output_throughput": b, "median_tpot_ms": 1000 / b, "median_ttft_ms": 10.0} for b in base],
            "eagle3": [{"output_throughput": s, "median_tpot_ms": 1000 / s, "median_ttft_ms": 10.0} for s in spec]}
    rows = [dict(R.pooled(docs[p]), profile=p, speedup=None, tpot_ratio=None) for p in docs]
    out = {r["profile"]: r for r in R.with_intervals(rows, docs, "baseline")}
    swapped = {p: list(reversed(d)) for p, d in docs.items()}
    again = {r["profile"]: r for r in R.with_intervals(rows, swapped, "baseline")}
    for name, values in (("baseline", base), ("eagle3", spec)):
        iv = out[name]["intervals"]["output_throughput"]
        assert min(values) - 1e-9 <= iv["mean"] <= max(values) + 1e-9
        assert iv["low"] <= iv["mean"] <= iv["high"]
    row = out["eagle3"]
    assert row["speedup"] == pytest.approx(math.exp(sum(math.log(s / b) for s, b in zip(spec, base)) / len(base)))
    assert row["speedup_low"] <= row["speedup"] * (1 + 1e-12) and row["speedup"] <= row["speedup_high"] * (1 + 1e-12)
    assert row["decision"] == I.lower_bound(row["speedup_interval"])
    assert again["eagle3"]["speedup_low"] == pytest.approx(row["speedup_low"])


def test_the_real_five_round_run_reports_every_interval():
    """runs/rounds5: the rehearsal's real run with eagle3_bench_rounds 5 (tests/fixtures/README.md), as fetched."""
    run = read_run(RUNS / "rounds5")
    assert sorted(run["hosts"]["rehearsal-1"]["rounds"]["eagle3"]) == [2, 3, 4, 5]
    report = eagle3_report(run, None, GATES, run_id="rounds5")
    assert report["verdict"]["ok"], report["lines"]
    rows = {r["profile"]: r for r in report["summary"]["hosts"]["rehearsal-1"]}
    for row in rows.values():
        assert row["rounds"] == 5
        for figure in ("output_throughput", "median_tpot_ms", "median_ttft_ms"):
            interval = row["intervals"][figure]
            assert interval["n"] == 5 and interval["low"] < interval["mean"] < interval["high"]
    eagle3 = rows["eagle3"]
    assert 1.0 < eagle3["speedup_low"] < eagle3["speedup"] < eagle3["speedup_high"]
    # temperature 0: the same drafts accepted in every round, an interval of width 0
    assert eagle3["intervals"]["acceptance_rate"]["low"] == pytest.approx(eagle3["intervals"]["acceptance_rate"]["high"])
    positions = eagle3["position_intervals"]  # one per draft position, position 1 first, as fractions
    assert [iv["mean"] for iv in positions] == pytest.approx(eagle3["per_position_acceptance_rates"])
    assert all(iv["low"] == pytest.approx(iv["high"]) and iv["n"] == 5 for iv in positions)
    assert report["summary"]["sweep"]["rehearsal-1"]["winner_speedup_low"] == pytest.approx(eagle3["speedup_low"])
    # the interleaving as the role ran it: every round's baseline before its EAGLE3, round after round
    timeline = json.loads((RUNS / "rounds5/rehearsal-1/timeline.json").read_text())["profiles"]
    order = sorted(timeline, key=lambda k: timeline[k]["start"])
    assert order == [k for r in range(1, 6) for k in (L.result_name("baseline", r)[:-5], L.result_name("eagle3", r)[:-5])]
