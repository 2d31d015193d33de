"""scripts/perf/perf.py: the readiness-lag arithmetic on the JSON callback's report shape."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("perf", ROOT / "scripts/perf/perf.py")
perf = importlib.util.module_from_spec(SPEC)
sys.modules["perf"] = perf
SPEC.loader.exec_module(perf)


def task(name, start, end, hosts=("h1",)):
    return {"task": {"name": name, "duration": {"start": start, "end": end}}, "hosts": {h: {} for h in hosts}}


REPORT = {"plays": [{"tasks": [
    task("vllm_bench : Start vllm-baseline.service", "2026-11-30T03:20:00.000000Z", "2026-11-30T03:20:00.300000Z"),
    task("vllm_bench : Wait for /health (a retry line every window) {{ x }}", "2026-11-30T03:20:00.300000Z",
         "2026-11-30T03:20:41.250000Z"),
    task("vllm_bench : Wait for /health (a retry line every window) {{ x }}", "2026-11-30T03:21:10.000000Z",
         "2026-11-30T03:21:50.500000Z"),
]}]}


def test_task_ends_match_role_prefixed_names():
    ends = perf.task_ends(REPORT, "Wait for /health")
    assert [h for h, _ in ends] == ["h1", "h1"]
    assert ends[1][1] - ends[0][1] == 69.25
    assert perf.task_seconds(REPORT, "Start vllm-baseline") == 0.3


def test_lag_is_measured_from_the_latest_startup_before_each_end():
    ends = [e for _, e in perf.task_ends(REPORT, "Wait for /health")]
    starts = [ends[0] - 0.4, ends[1] - 1.1, ends[1] + 5]  # the last one is after: ignored
    assert perf.readiness_lags(starts, ends) == [0.4, 1.1]
    assert perf.readiness_lags([], ends) == []
