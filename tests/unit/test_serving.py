"""The serving plan (which profile serves where after the benchmark) on runs from real rehearsal runs, and the
API key guard the serving unit loads (roles/vllm_service/files/eagle3_api_guard.py) as vLLM's ASGI app sees it."""
from __future__ import annotations

import asyncio
import json

import pytest

from conftest import ROOT, RUNS, host_of, load_file
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run

GATES = {"reference": {"enforce": False, "tolerance": 0.30}}
REFERENCE = json.loads((RUNS.parent / "references/rehearsal-fixture-pair.json").read_text())


def plan_of(run_dir, hosts, serve, gates=GATES):
    report = eagle3_report(read_run(run_dir), hosts, gates, REFERENCE, serve=serve)
    assert report["verdict"]["serving"] == report["summary"]["serving"]
    return report


def test_best_serves_the_passing_speculative_profile():
    report = plan_of(RUNS / "agree", ["rehearsal-1"], "best")
    plan = report["verdict"]["serving"]
    assert report["verdict"]["ok"], report["lines"]
    assert plan["profile"] == "eagle3" and plan["hosts"] == {"rehearsal-1": {"profile": "eagle3", "why": plan["why"]}}
    assert "serving rehearsal-1: eagle3" in report["lines"]


def test_best_falls_back_to_the_baseline_when_speculation_fails_a_gate():
    report = plan_of(RUNS / "random", ["rehearsal-1"], "best")
    assert not report["verdict"]["ok"]
    assert report["verdict"]["serving"]["hosts"]["rehearsal-1"]["profile"] == "baseline"


def test_a_named_profile_that_failed_a_gate_never_serves():
    plan = plan_of(RUNS / "random", ["rehearsal-1"], "eagle3")["verdict"]["serving"]
    entry = plan["hosts"]["rehearsal-1"]
    assert entry["profile"] is None
    assert "failed an enforced gate" in entry["why"] and "acceptance" in entry["why"]


def test_best_of_a_sweep_is_the_fastest_profile_passing_every_gate():
    host = host_of("trained-sweep")
    report = plan_of(RUNS / "trained-sweep", [host], "best")
    plan, sweep = report["verdict"]["serving"], report["summary"]["sweep"][host]
    rows = {r["profile"]: r for r in report["summary"]["hosts"][host]}
    assert plan["profile"] == sweep["winner"]
    assert rows[plan["profile"]]["output_throughput"] == max(r["output_throughput"] for r in rows.values())


def test_best_is_one_profile_for_the_whole_fleet(run_copy):
    # a passes with eagle3, b fails it (the random draft): the fleet serves what passes everywhere, the baseline.
    run = run_copy(a="agree/rehearsal-1", b="random/rehearsal-1")
    report = plan_of(run, ["a", "b"], "best")
    assert {h: e["profile"] for h, e in report["verdict"]["serving"]["hosts"].items()} == {"a": "baseline", "b": "baseline"}
    both = plan_of(run_copy(c="agree/rehearsal-1"), ["a", "c"], "best")
    assert {h: e["profile"] for h, e in both["verdict"]["serving"]["hosts"].items()} == {"a": "eagle3", "c": "eagle3"}


def test_a_failed_host_serves_nothing_and_says_why():
    plan = plan_of(RUNS / "agree", ["rehearsal-1", "rehearsal-2"], "best")["verdict"]["serving"]
    assert plan["hosts"]["rehearsal-1"]["profile"] == "eagle3"
    assert plan["hosts"]["rehearsal-2"] == {"profile": None, "why": "the host failed: no results fetched (host failed "
                                            "before benchmarking or was unreachable)"}


def test_none_serves_nothing():
    report = plan_of(RUNS / "agree", ["rehearsal-1"], "none")
    assert report["verdict"]["serving"]["hosts"]["rehearsal-1"]["profile"] is None
    assert not [line for line in report["lines"] if line.startswith("serving")]


# The guard, loaded as the serving unit loads it (vllm serve --middleware eagle3_api_guard.RequireApiKey).
def load_guard():
    return load_file(ROOT / "roles/vllm_service/files/eagle3_api_guard.py")


def call(app, path, method="POST", headers=()):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "root_path": "",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers]}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"]


async def inner(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


KEY = "serving-key-0123456789"


@pytest.mark.parametrize("path", ["/invocations", "/tokenize", "/v1/models", "/v1/completions", "/version", "/"])
def test_guard_refuses_every_inference_path_without_the_key(monkeypatch, path):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    app = load_guard().RequireApiKey(inner)
    assert call(app, path) == 401
    assert call(app, path, headers=[("Authorization", "Bearer wrong-key-0123456789")]) == 401
    assert call(app, path, headers=[("Authorization", f"Basic {KEY}")]) == 401
    assert call(app, path, headers=[("Authorization", f"Bearer {KEY}")]) == 200


@pytest.mark.parametrize("path", ["/health", "/ping", "/metrics"])
def test_guard_leaves_liveness_and_metrics_open(monkeypatch, path):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    assert call(load_guard().RequireApiKey(inner), path, method="GET") == 200


def test_guard_refuses_to_start_without_a_key(monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="VLLM_API_KEY is empty"):
        load_guard().RequireApiKey(inner)


# Prometheus's targets (the monitoring role's monitoring_targets) from a plan made on real runs.
def test_the_monitor_scrapes_every_host_that_serves_and_no_other():
    from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import eagle3_serving_targets
    plan = plan_of(RUNS / "agree", ["rehearsal-1", "rehearsal-2"], "best")["verdict"]["serving"]
    addresses = {"rehearsal-1": "127.0.0.1:8000", "rehearsal-2": "127.0.0.1:8001"}
    assert eagle3_serving_targets(plan, addresses) == [
        {"host": "rehearsal-1", "address": "127.0.0.1:8000", "profile": "eagle3"}]  # rehearsal-2 failed: not served
    assert eagle3_serving_targets(plan_of(RUNS / "agree", ["rehearsal-1"], "none")["verdict"]["serving"], addresses) == []
    assert eagle3_serving_targets(None, addresses) == []
    with pytest.raises(ValueError, match="rehearsal-1 serves eagle3 but has no monitor address"):
        eagle3_serving_targets(plan, {})


def test_a_serving_record_is_scraped_for_its_serving_hosts_only():
    # serving.json's shape (playbooks/tasks/serving_record.yml): a host the run did not check serving is null.
    from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import eagle3_serving_targets
    record = {"run_id": "roll-k2", "mode": "roll", "hosts": {
        "rehearsal-1": {"profile": "eagle3", "unit": "vllm-serve.service", "url": "http://127.0.0.1:8000",
                        "listen": "127.0.0.1:8000"},
        "rehearsal-2": None}}
    addresses = {"rehearsal-1": "127.0.0.1:8000", "rehearsal-2": "127.0.0.1:8001"}
    assert eagle3_serving_targets(record, addresses) == [
        {"host": "rehearsal-1", "address": "127.0.0.1:8000", "profile": "eagle3"}]
