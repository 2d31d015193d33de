"""Intervals for few rounds (a decision on one round cannot say how far to trust it): the mean of a figure and the
speedup of one profile over another, each with a 95 % interval, and the decisions that rest on them.

Method. A round benchmarks every profile once, interleaved (baseline, eagle3-k2, eagle3-k3, ..., then again), so drift
over time hits every profile of a round alike. The speedup of profile A over B is a ratio paired by round: its
interval is Student's t interval of the mean of the log ratios ln(A_i / B_i) over the n rounds, taken back with exp
(a geometric mean ratio). With n >= 2 rounds it has n - 1 degrees of freedom; a bootstrap over 3 rounds alone is
degenerate (27 resamples, of which many repeat one round), which is why it is not used. A figure's own interval is on
the same log scale: every figure the report gives an interval (throughput, TPOT, TTFT, acceptance rate and
length, a position's rate) is a positive quantity, so its estimate is the geometric mean over the rounds and its
interval the t interval of the mean of the logs, taken back with exp: inside (0, inf), never "[-4.52, 32.45] ms" from
rounds of 22.5, 10.5 and 8.9 ms, and the pooled throughputs' ratio is the paired speedup itself. A figure with a zero
in some round (a draft position never accepted) has no logarithm: its arithmetic mean and t interval, the lower bound
clipped at 0. With one round there is no interval: the decision rests on one sample, and the report says so.

Decisions:
- a gate on a speedup, `best` and the sweep's recommendation use the interval's lower bound (one round: the value);
- two profiles are tied when the interval of the paired ratio of one over the other contains 1; a tie goes to the
  smaller k, the cheaper one to serve.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

LEVEL = 0.95


def _t_pdf(x: float, df: int) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf(x: float, df: int) -> float:
    """Student's t CDF by Simpson's rule over [0, |x|] (the density is smooth there; 2000 panels: |error| < 1e-9)."""
    steps, upper = 2000, abs(x)
    h = upper / steps
    total = _t_pdf(0.0, df) + _t_pdf(upper, df)
    total += sum((4 if i % 2 else 2) * _t_pdf(i * h, df) for i in range(1, steps))
    half = total * h / 3
    return 0.5 + half if x >= 0 else 0.5 - half


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The p quantile (p > 0.5) of Student's t with df degrees of freedom, by bisection on its CDF."""
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def _finite(values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    if not out or not all(math.isfinite(v) for v in out):
        raise ValueError(f"an interval needs finite numbers (got {list(values)!r})")
    return out


def mean_interval(values: Sequence[float], level: float = LEVEL) -> dict:
    """{"mean", "low", "high", "n"}: low/high None with one value (no interval from one sample)."""
    xs = _finite(values)
    n, mean = len(xs), sum(xs) / len(xs)
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def center(values: Sequence[float]) -> float:
    """The estimate of a positive quantity over rounds: the geometric mean; the arithmetic mean when a value is 0 (or
    not finite: the validator refuses those first)."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("no values to pool")
    if all(math.isfinite(x) for x in xs) and min(xs) > 0:
        return math.exp(sum(math.log(x) for x in xs) / len(xs))
    return sum(xs) / len(xs)


def positive_interval(values: Sequence[float], level: float = LEVEL) -> dict:
    """{"mean", "low", "high", "n", "scale"} of a positive quantity: "mean" is its geometric mean and the interval
    Student's t on the mean of the logs, taken back with exp (scale "log"), inside (0, inf) and holding the mean. With
    a zero among the values (scale "linear"): the arithmetic mean and its t interval, the lower bound clipped at 0.
    low/high None with one value. A negative value is refused."""
    xs = _finite(values)
    if min(xs) < 0:
        raise ValueError(f"a positive quantity cannot be negative (got {list(values)!r})")
    if min(xs) > 0:
        logs = mean_interval([math.log(x) for x in xs], level)
        return {"mean": math.exp(logs["mean"]), "n": logs["n"], "scale": "log",
                "low": None if logs["low"] is None else math.exp(logs["low"]),
                "high": None if logs["high"] is None else math.exp(logs["high"])}
    linear = mean_interval(xs, level)
    if linear["low"] is not None:
        linear["low"] = max(0.0, linear["low"])
    return dict(linear, scale="linear")


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float], level: float = LEVEL) -> dict:
    """The paired ratio numerator/denominator over rounds: {"ratio" (geometric mean), "low", "high", "n"}."""
    a, b = _finite(numerators), _finite(denominators)
    if len(a) != len(b):
        raise ValueError(f"paired by round: {len(a)} rounds against {len(b)}")
    if min(a + b) <= 0:
        raise ValueError("a ratio needs positive figures")
    logs = mean_interval([math.log(x / y) for x, y in zip(a, b)], level)
    return {"ratio": math.exp(logs["mean"]), "n": logs["n"],
            "low": None if logs["low"] is None else math.exp(logs["low"]),
            "high": None if logs["high"] is None else math.exp(logs["high"])}


def lower_bound(interval: dict) -> float:
    """What a decision rests on: the interval's lower bound, or the value itself with one round."""
    return interval["ratio"] if interval["low"] is None else interval["low"]


def tied(interval: dict) -> bool:
    """Two profiles are tied when the interval of their paired ratio contains 1 (never with one round)."""
    return interval["low"] is not None and interval["low"] <= 1.0 <= interval["high"]


def choose(candidates: Sequence[dict]) -> dict:
    """The profile to serve among candidates [{"name", "k", "speedup": interval, "rounds": {"output_throughput":
    [...]}}]: the highest lower bound of its speedup; a candidate tied with it (paired ratio of their throughputs
    containing 1) and of smaller k wins instead, the cheaper to serve. Returns {"name", "tied_with": [...], "why"}."""
    if not candidates:
        raise ValueError("nothing to choose from")
    ranked = sorted(candidates, key=lambda c: (-lower_bound(c["speedup"]), c["k"]))
    best = ranked[0]
    ties = [c for c in ranked[1:] if tied(ratio_interval(c["rounds"]["output_throughput"],
                                                         best["rounds"]["output_throughput"]))]
    pick = min([best] + ties, key=lambda c: c["k"])
    one = best["speedup"]["low"] is None
    why = ("the highest speedup, from one round: the decision rests on one sample" if one else
           f"the highest lower bound of the speedup ({lower_bound(best['speedup']):.2f}x)")
    if ties:
        others = [c["name"] for c in [best] + ties if c is not pick]
        why = (f"tied with {', '.join(others)} (the interval of their paired throughput ratio contains 1): "
               f"the smallest k of them, the cheapest to serve")
    return {"name": pick["name"], "tied_with": [c["name"] for c in [best] + ties if c is not pick], "why": why}
