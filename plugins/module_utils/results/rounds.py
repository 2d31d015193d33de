"""Rounds of one run (repeated, so a decision does not rest on one sample): a profile benchmarked in several interleaved
rounds, pooled for the gates and given its intervals (plugins/module_utils/results/intervals.py) for the report.

Files. Round 1 is <profile>.json, as with one round; round r >= 2 is <profile>.round<r>.json (results_layout.py).
Every round's file is validated on its own (result_checks.py) before any pooling.

Pooling. A profile's figures are the geometric means over its rounds (FIGURES: throughputs, latencies, acceptance
rate and length, per-position rates; all positive quantities, intervals.center: the arithmetic mean where a round is 0);
its counters and workload stay its round 1's, which every other round ran alike (the validator checks each round's
workload against the host's baseline). Each figure's interval is a t interval on the logs (intervals.positive_interval,
so never below 0), and so is each position's rate's. The speedup and the TPOT ratio are paired by round: the
geometric mean of the per-round ratios (the ratio of the pooled figures), with a t interval on their logs
(intervals.ratio_interval). With one round there is no interval, and the report says the decision rests on one
sample.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results import intervals as _iv
from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number

# The figures of a `vllm bench serve` result that a round measures (means over rounds); the rest are its workload
# and counters, the same in every round.
FIGURES = ("output_throughput", "request_throughput", "total_token_throughput",
           "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
           "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
           "spec_decode_acceptance_rate", "spec_decode_acceptance_length")
POSITIONS = "spec_decode_per_position_acceptance_rates"

# The figures the report gives an interval, as its rows name them (compare.py drops "spec_decode_").
SHOWN = {"output_throughput": "output_throughput", "median_tpot_ms": "median_tpot_ms",
         "median_ttft_ms": "median_ttft_ms", "acceptance_rate": "spec_decode_acceptance_rate",
         "acceptance_length": "spec_decode_acceptance_length"}

_K = re.compile(r"-k([0-9]+)$")


def k_of(profile: str) -> int | None:
    """num_speculative_tokens of a profile named <method>-k<N> (profiles.py names them so), else None."""
    found = _K.search(profile)
    return int(found.group(1)) if found else None


def series(docs: Sequence[Mapping[str, Any]], key: str) -> list[float] | None:
    """The key's value in every round, or None when a round lacks it as a number."""
    values = [d.get(key) for d in docs]
    return [float(v) for v in values] if values and all(is_number(v) for v in values) else None


def pooled(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One result with each FIGURE its geometric mean over the rounds (intervals.center; docs in round order; round 1
    gives the rest)."""
    out = dict(docs[0])
    if len(docs) < 2:
        return out
    for key in FIGURES:
        values = series(docs, key)
        if values is not None:
            out[key] = _iv.center(values)
    columns = position_series(docs)
    if columns is not None:
        out[POSITIONS] = [_iv.center(col) for col in columns]
    out["rounds"] = len(docs)
    return out


def position_series(docs: Sequence[Mapping[str, Any]]) -> list[list[float]] | None:
    """Per draft position, its rate in every round ([[round 1, round 2, ...] of position 1, ...]), or None when the
    rounds do not all give the same number of rates (or give none)."""
    positions = [d.get(POSITIONS) for d in docs]
    if not positions or not all(isinstance(p, list) and p and len(p) == len(positions[0])
                                and all(is_number(x) and x >= 0 for x in p) for p in positions):
        return None
    return [[float(x) for x in col] for col in zip(*positions)]


def host_rounds(entry: Mapping[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """({profile: [round 1, round 2, ...]}, problems) of one host as the eagle3_run lookup read it (round 1 in
    `results`, rounds >= 2 in `rounds`). Every profile must have every round 1..N, N the highest round any file of the
    host has or the rounds its manifest asked for (parameters.rounds), whichever is more; a profile whose round 1 is
    missing or unusable has no rounds."""
    results = entry.get("results") or {}
    later = entry.get("rounds") or {}
    numbers = {p: sorted(later.get(p) or {}) for p in results}
    parameters = (entry.get("manifest") or {}).get("parameters") if isinstance(entry.get("manifest"), Mapping) else None
    asked = parameters.get("rounds") if isinstance(parameters, Mapping) else None
    asked = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else 1
    most = max([asked, 1] + [r for v in later.values() for r in (v or {})])
    problems = []
    out: dict[str, list[dict[str, Any]]] = {}
    for profile in sorted(results):
        have = [1] + numbers[profile]
        if have != list(range(1, most + 1)):
            missing = sorted(set(range(1, most + 1)) - set(have))
            problems.append(f"{profile} has round(s) {', '.join(map(str, have))} of {most}: round(s) "
                            f"{', '.join(map(str, missing))} missing or unusable")
            continue
        out[profile] = [results[profile]] + [later[profile][r] for r in numbers[profile]]
    orphans = sorted(p for p in later if p not in results)
    problems += [f"{p} has later rounds but no usable round 1 ({p}.json)" for p in orphans]
    return out, problems


def _interval_of(values: list[float] | None) -> dict[str, Any] | None:
    return _iv.positive_interval(values) if values and min(values) >= 0 else None


def with_intervals(rows: list[dict[str, Any]], docs: Mapping[str, Sequence[Mapping[str, Any]]],
                   baseline: str) -> list[dict[str, Any]]:
    """The compare rows of one host (from the pooled results) with, per row: rounds, intervals {figure: {mean, low,
    high, n, scale}} (intervals.positive_interval: the geometric mean, a log-scale interval), position_intervals (one
    such interval per draft position of the rates as fractions, position 1 first; [] without per-position rates),
    speedup_interval and tpot_ratio_interval (paired by round with the baseline; speedup and tpot_ratio become their
    geometric means), and `decision`: what `best`, the sweep and the speedup gate rest on (the speedup's
    lower bound with rounds > 1, else the value) and per_round {figure: [round 1, round 2, ...]}."""
    base = docs.get(baseline) or []
    out = []
    for row in rows:
        row = dict(row)
        own = docs.get(row["profile"]) or []
        row["rounds"] = len(own)
        row["per_round"] = {name: series(own, key) for name, key in SHOWN.items()}
        row["intervals"] = {name: _interval_of(values) for name, values in row["per_round"].items()}
        columns = position_series(own) if own else None
        row["position_intervals"] = [_iv.positive_interval(col) for col in columns] if columns else []
        for ratio, key in (("speedup", "output_throughput"), ("tpot_ratio", "median_tpot_ms")):
            a, b = series(own, key), series(base, key)
            interval = None
            if a and b and len(a) == len(b) and min(a + b) > 0:
                interval = _iv.ratio_interval(a, b)
                row[ratio] = interval["ratio"] if len(a) > 1 else row[ratio]
            row[f"{ratio}_interval"] = interval
        speedup = row["speedup_interval"]
        row["speedup_low"] = speedup["low"] if speedup else None
        row["speedup_high"] = speedup["high"] if speedup else None
        row["decision"] = _iv.lower_bound(speedup) if speedup else None
        out.append(row)
    return out


def one_sample(rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> bool:
    """Whether every decision of the run rests on one round (no row with rounds > 1)."""
    return not any((r.get("rounds") or 1) > 1 for host_rows in rows.values() for r in host_rows)


def choose(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """intervals.choose over the named rows: the highest lower bound of the speedup; a tie goes to the smaller k."""
    by_name = {r["profile"]: r for r in rows}
    candidates = []
    for name in names:
        row = by_name[name]
        k = k_of(name)
        candidates.append({"name": name, "k": k if k is not None else 10 ** 6, "speedup": row["speedup_interval"],
                           "rounds": {"output_throughput": row["per_round"]["output_throughput"]}})
    return _iv.choose(candidates)


def fleet_intervals(rows: Mapping[str, Sequence[Mapping[str, Any]]], baseline: str) -> dict[str, dict[str, Any]]:
    """Per profile, over the hosts (each host one sample of its mean): {figure: interval} and the speedup paired by
    host (each host's speedup over its own baseline). One host: no interval."""
    out: dict[str, dict[str, Any]] = {}
    profiles = sorted({r["profile"] for host_rows in rows.values() for r in host_rows},
                      key=lambda p: (p != baseline, p))
    for profile in profiles:
        own = {h: r for h, host_rows in rows.items() for r in host_rows if r["profile"] == profile}
        entry: dict[str, Any] = {"hosts": len(own)}
        for name in SHOWN:
            values = [r[name] for r in own.values() if is_number(r.get(name))]
            entry[name] = (_iv.positive_interval(values) if values and len(values) == len(own) and min(values) >= 0
                           else None)
        base = {h: r for h, host_rows in rows.items() for r in host_rows if r["profile"] == baseline}
        pairs = [(r["output_throughput"], base[h]["output_throughput"]) for h, r in sorted(own.items())
                 if h in base and is_number(r.get("output_throughput")) and is_number(base[h].get("output_throughput"))
                 and r["output_throughput"] > 0 and base[h]["output_throughput"] > 0]
        entry["speedup"] = (_iv.ratio_interval([a for a, _ in pairs], [b for _, b in pairs])
                            if pairs and len(pairs) == len(own) else None)
        out[profile] = entry
    return out


def shown(value: Any, interval: Mapping[str, Any] | None, spec: str = ".2f", suffix: str = "") -> str:
    """"2.01x [1.88, 2.15]", or "2.01x" without an interval, "-" without a value."""
    if not is_number(value):
        return "-"
    text = f"{format(value, spec)}{suffix}"
    if interval and interval.get("low") is not None and interval.get("high") is not None:
        text += f" [{format(interval['low'], spec)}, {format(interval['high'], spec)}]"
    return text


def bounds(interval: Mapping[str, Any] | None) -> list[float | None]:
    """[low, high] of an interval, [None, None] without one (a report.csv cell pair)."""
    return [interval.get("low"), interval.get("high")] if interval else [None, None]
