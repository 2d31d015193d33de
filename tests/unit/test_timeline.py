"""The fleet timeline filter (plugins/module_utils/report/timeline.py) on hand-made timelines; the real run's is in test_report_render."""
from __future__ import annotations

from ansible_collections.eagle3.trn2.plugins.module_utils.report.timeline import eagle3_timeline, eagle3_timeline_lines


def host(exclusive: bool, **profiles: tuple[float, float, float, float, float]) -> dict:
    keys = ("start", "ready", "bench_start", "bench_end", "stop")
    return {"exclusive_window": exclusive, "profiles": {p: dict(zip(keys, t)) for p, t in profiles.items()}}


def test_overlapping_windows_are_found_with_the_shared_seconds():
    t = eagle3_timeline({"a": host(False, baseline=(100, 140, 150, 200, 205)),
                         "b": host(False, baseline=(100, 150, 170, 230, 232))})
    assert t["overlapped"] and t["overlaps"] == [{"a": "a baseline", "b": "b baseline", "seconds": 30.0}]
    assert t["fleet_s"] == 132.0 and t["span_s"] == {"a": 105.0, "b": 132.0} and t["straggler"] == "b"
    assert t["exclusive_window"] is False
    assert "benchmark windows overlapped (in parallel): a baseline / b baseline 30.0 s" in eagle3_timeline_lines(t)


def test_back_to_back_windows_do_not_overlap_and_the_chart_rows_are_relative():
    t = eagle3_timeline({"a": host(True, baseline=(0, 40, 45, 60, 62), eagle3=(63, 100, 105, 120, 121)),
                         "b": host(True, baseline=(5, 50, 60, 80, 81))})
    assert not t["overlapped"] and t["overlaps"] == []
    assert t["exclusive_window"] is True
    rows = {r["label"]: r["segments"] for r in t["rows"]}
    assert rows["b baseline"] == [{"phase": "starting", "from": 5.0, "to": 50.0}, {"phase": "checks", "from": 50.0, "to": 60.0},
                                  {"phase": "benchmark", "from": 60.0, "to": 80.0}, {"phase": "stopping", "from": 80.0, "to": 81.0}]
    assert [r["profile"] for r in t["hosts"]["a"]] == ["baseline", "eagle3"]
    assert eagle3_timeline_lines(t)[-1] == "benchmark windows did not overlap (one at a time (eagle3_bench_exclusive_window))"


def test_windows_on_one_host_never_count_and_a_failed_profile_has_no_window():
    t = eagle3_timeline({"a": {"exclusive_window": False, "profiles": {
        "baseline": {"start": 0, "ready": 10, "bench_start": 10, "bench_end": 30, "stop": 31},
        "eagle3": {"start": 20, "stop": 25, "failed": True}}}, "b": None})
    assert t["overlaps"] == [] and t["missing"] == ["b"]
    failed = [r for r in t["rows"] if r["failed"]]
    assert failed == [{"label": "a eagle3", "host": "a", "failed": True, "segments": []}]


def test_no_timeline_at_all():
    t = eagle3_timeline({"a": None})
    assert t["hosts"] == {} and not t["overlapped"] and eagle3_timeline_lines(t) == ["timeline: none recorded"]


def test_the_compile_cache_of_each_start_is_listed_with_its_start_time():
    canary = host(True, baseline=(0, 100, 105, 120, 121), eagle3=(122, 220, 225, 240, 241))
    peer = host(True, baseline=(101, 141, 145, 160, 161), eagle3=(221, 262, 265, 280, 281))
    for data, state in ((canary, "cold"), (peer, "shipped")):
        for profile in data["profiles"].values():
            profile["compile_cache"] = state
    lines = eagle3_timeline_lines(eagle3_timeline({"canary": canary, "peer": peer}))
    assert lines[-1] == ("compile cache per start (start to ready): cold 2 (canary baseline 100 s, canary eagle3 98 s); "
                         "shipped 2 (peer baseline 40 s, peer eagle3 41 s)")
