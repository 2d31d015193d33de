"""The fleet's timeline from each host's timeline.json (written by the vllm_bench role): per host and profile
its start, ready, benchmark start and end and stop; the benchmark windows that overlapped across hosts;
each host's span and the straggler; and the rows of the report's timeline chart.

Pure: the files are read by plugins/module_utils/results/run_dir.py (the lookup eagle3_run).
"""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number as _is_number


EVENTS = ("start", "ready", "bench_start", "bench_end", "stop")
# Chart segments: (name, from, to).
SEGMENTS = (("starting", "start", "ready"), ("checks", "ready", "bench_start"),
            ("benchmark", "bench_start", "bench_end"), ("stopping", "bench_end", "stop"))


def _windows(hosts: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, float, float]]:
    return [(host, p["profile"], p["bench_start"], p["bench_end"]) for host, profiles in hosts.items()
            for p in profiles if _is_number(p.get("bench_start")) and _is_number(p.get("bench_end"))]


def eagle3_timeline(timelines: dict[str, Any], exclusive: bool | None = None) -> dict[str, Any]:
    """The fleet's timeline; hosts without a (valid) timeline are listed in `missing`."""
    hosts: dict[str, list[dict[str, Any]]] = {}
    missing, flags = [], set()
    for host in sorted(timelines):
        data = timelines[host]
        profiles = data.get("profiles") if isinstance(data, dict) else None
        if not isinstance(profiles, dict) or not profiles:
            missing.append(host)
            continue
        flags.add(bool(data.get("exclusive_window")))
        rows = [dict({k: float(v[k]) for k in EVENTS if _is_number(v.get(k))}, profile=name,
                     failed=bool(v.get("failed")), window_wait_s=v.get("window_wait_s"),
                     compile_cache=v.get("compile_cache") if isinstance(v.get("compile_cache"), str) else None,
                     compile_metrics={k: m for k, m in (v.get("compile_metrics") or {}).items() if _is_number(m)}
                     if isinstance(v.get("compile_metrics"), dict) else {})
                for name, v in profiles.items() if isinstance(v, dict)]
        hosts[host] = sorted(rows, key=lambda r: r.get("start", r.get("stop", 0.0)))
    stamps = [r[k] for rows in hosts.values() for r in rows for k in EVENTS if k in r]
    if not stamps:
        return {"hosts": {}, "missing": missing, "overlaps": [], "overlapped": False, "span_s": {}, "fleet_s": None,
                "straggler": None, "exclusive_window": exclusive, "rows": [], "t0": None}
    t0 = min(stamps)
    windows = _windows(hosts)
    overlaps = []
    for i, (h1, p1, s1, e1) in enumerate(windows):
        for h2, p2, s2, e2 in windows[i + 1:]:
            shared = min(e1, e2) - max(s1, s2)
            if h1 != h2 and shared > 0:
                overlaps.append({"a": f"{h1} {p1}", "b": f"{h2} {p2}", "seconds": round(shared, 1)})
    span = {h: round(max(r[k] for r in rows for k in EVENTS if k in r) - min(r[k] for r in rows for k in EVENTS if k in r), 1)
            for h, rows in hosts.items()}
    chart = []
    for host, rows in hosts.items():
        for r in rows:
            segs = [{"phase": name, "from": round(r[a] - t0, 1), "to": round(r[b] - t0, 1)}
                    for name, a, b in SEGMENTS if a in r and b in r and r[b] >= r[a]]
            chart.append({"label": f"{host} {r['profile']}", "host": host, "failed": r["failed"], "segments": segs})
    for host, rows in hosts.items():
        for r in rows:
            r.update({f"{k}_s": round(r[k] - t0, 1) for k in EVENTS if k in r})
    if exclusive is None and flags:
        exclusive = flags == {True}
    return {"hosts": hosts, "missing": missing, "overlaps": overlaps, "overlapped": bool(overlaps), "span_s": span,
            "fleet_s": round(max(stamps) - t0, 1), "straggler": max(span, key=lambda h: span[h]) if span else None,
            "exclusive_window": exclusive, "rows": chart, "t0": t0}


def eagle3_timeline_lines(timeline: dict[str, Any]) -> list[str]:
    """The report's text lines about the timeline."""
    if not timeline.get("hosts"):
        return ["timeline: none recorded"] if timeline.get("missing") else []
    spans = ", ".join(f"{h} {s:.0f} s" for h, s in sorted(timeline["span_s"].items()))
    lines = [f"timeline: fleet {timeline['fleet_s']:.0f} s; per host {spans}; slowest {timeline['straggler']}"]
    mode = {True: "one at a time (eagle3_bench_exclusive_window)", False: "in parallel"}.get(timeline["exclusive_window"], "unknown")
    if timeline["overlapped"]:
        pairs = "; ".join(f"{o['a']} / {o['b']} {o['seconds']} s" for o in timeline["overlaps"])
        lines.append(f"{'WARNING ' if timeline['exclusive_window'] else ''}benchmark windows overlapped ({mode}): {pairs}")
    else:
        lines.append(f"benchmark windows did not overlap ({mode})")
    # Compile once per fleet (vllm_bench's compile_cache.yml): where each start's compile cache came from, and how
    # long the start took with it.
    starts: dict[str, list[str]] = {}
    for host, rows in sorted(timeline["hosts"].items()):
        for r in rows:
            if r.get("compile_cache"):
                took = f" {r['ready'] - r['start']:.0f} s" if "ready" in r and "start" in r else ""
                starts.setdefault(r["compile_cache"], []).append(f"{host} {r['profile']}{took}")
    if starts:
        order = ("cold", "shipped", "local", "refused")
        lines.append("compile cache per start (start to ready): " + "; ".join(
            f"{state} {len(starts[state])} ({', '.join(starts[state])})"
            for state in sorted(starts, key=lambda s: order.index(s) if s in order else len(order))))
    metrics = [f"{host} {r['profile']} " + ", ".join(f"{k} {m:g}" for k, m in sorted(r["compile_metrics"].items()))
               for host, rows in sorted(timeline["hosts"].items()) for r in rows if r.get("compile_metrics")]
    if metrics:
        lines.append("the engine's compile-time metrics at ready: " + "; ".join(metrics))
    return lines


def eagle3_starts(profiles: dict[str, Any]) -> dict[str, Any]:
    """Each server start of a host's timeline (its profiles, keyed as timeline.json keys them): start to ready in
    seconds (the compile on a cold trn2 start), the compile cache it started with, and the engine's compile-time
    metrics where it exposes any. The manifest's `starts`."""
    out = {}
    for key, times in sorted((profiles or {}).items()):
        if not isinstance(times, dict):
            continue
        start, ready = times.get("start"), times.get("ready")
        out[key] = {"start_to_ready_s": round(ready - start, 1) if _is_number(start) and _is_number(ready) else None,
                    "compile_cache": times.get("compile_cache"),
                    "compile_metrics": times.get("compile_metrics") or {}}
    return out
