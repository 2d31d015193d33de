"""`vllm bench serve` results compared: per-profile rows against the baseline, the text table, greedy-completion
parity and its rule, the k-sweep recommendation and the fleet aggregate (what the report engine builds on).

Pure functions over plain dicts/lists, tested with pytest (tests/) on result JSON from real rehearsal runs.
"""
from __future__ import annotations

from typing import Any, Iterable

from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number as _is_number, median
from ansible_collections.eagle3.trn2.plugins.module_utils.results.rounds import choose as choose_round


BASELINE = "baseline"


METRICS = ("output_throughput", "median_tpot_ms", "median_ttft_ms")


SPEC_KEYS = (
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
)


ROW_KEYS = ("completed", "failed", "num_prompts", "total_output_tokens", "p99_ttft_ms", "p99_tpot_ms")


def _ratio(new: float | None, old: float | None) -> float | None:
    if new is None or old in (None, 0):
        return None
    return new / old


def _first_ms(data: dict[str, Any], key: str) -> float | None:
    """First request's value of a per-request list in seconds (kept with --save-detailed), in ms."""
    values = data.get(key)
    if isinstance(values, list) and values and _is_number(values[0]):
        return 1000.0 * values[0]
    return None


def eagle3_compare(results: dict[str, dict[str, Any]], baseline: str = BASELINE,
                   price: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per profile (baseline first): the tutorial's metrics and the ratios to baseline.

    speedup = output_throughput / baseline's; tpot_ratio = median_tpot_ms / baseline's.
    Acceptance rate is in percent (as vllm bench writes it); per-position rates are fractions.
    With price {"usd_per_hour": ...}: cost_per_1m = USD per 1M output tokens at the measured
    throughput, saving = 1 - cost / baseline's cost.
    """
    base = results.get(baseline, {})
    hourly = (price or {}).get("usd_per_hour")
    rows = []
    for name in sorted(results, key=lambda n: (n != baseline, n)):
        data = results[name]
        row: dict[str, Any] = {"profile": name}
        for key in METRICS + ROW_KEYS:
            row[key] = data.get(key)
        for key in SPEC_KEYS:
            row[key.replace("spec_decode_", "")] = data.get(key)
        row["per_position_acceptance_pct"] = [100.0 * r for r in row["per_position_acceptance_rates"] or []
                                              if _is_number(r)]
        row["first_ttft_ms"] = _first_ms(data, "ttfts")
        row["first_latency_ms"] = _first_ms(data, "latencies")
        row["speedup"] = _ratio(data.get("output_throughput"), base.get("output_throughput"))
        row["tpot_ratio"] = _ratio(data.get("median_tpot_ms"), base.get("median_tpot_ms"))
        throughput = data.get("output_throughput")
        row["cost_per_1m"] = (float(hourly) / (throughput * 3600) * 1e6
                              if _is_number(hourly) and _is_number(throughput) and throughput > 0 else None)
        rows.append(row)
    base_cost = rows[0]["cost_per_1m"] if rows and rows[0]["profile"] == baseline else None
    for row in rows:
        row["saving"] = (1 - row["cost_per_1m"] / base_cost
                         if row["cost_per_1m"] is not None and base_cost and row["profile"] != baseline else None)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def eagle3_table(rows: list[dict[str, Any]]) -> list[str]:
    """Fixed-width text table of eagle3_compare rows."""
    header = (f"{'profile':<14}{'out tok/s':>11}{'TPOT ms':>9}{'p99':>8}{'TTFT ms':>9}{'p99':>8}"
              f"{'speedup':>9}{'accept %':>10}{'length':>8}")
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['profile']:<14}{_fmt(row['output_throughput'], '.1f'):>11}"
            f"{_fmt(row['median_tpot_ms'], '.2f'):>9}{_fmt(row.get('p99_tpot_ms'), '.2f'):>8}"
            f"{_fmt(row['median_ttft_ms'], '.2f'):>9}{_fmt(row.get('p99_ttft_ms'), '.2f'):>8}"
            f"{_fmt(row['speedup'], '.2f'):>9}{_fmt(row['acceptance_rate'], '.1f'):>10}"
            f"{_fmt(row['acceptance_length'], '.2f'):>8}"
        )
    return lines


def _problem(profile: str, message: str, prompt: Any = None, expected: Any = None, got: Any = None,
             kind: str = "evidence", index: int | None = None) -> dict[str, Any]:
    return {"profile": profile, "prompt": prompt, "baseline": expected, "got": got, "message": message,
            "kind": kind, "index": index, "tolerated": False}


def _divergence(expected: Any, actual: Any) -> str:
    """Where two texts first differ: a lossless decoder never diverges; where it does, say where."""
    if not (isinstance(expected, str) and isinstance(actual, str)):
        return ""
    at = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
    return f" from character {at} of {len(expected)} (identical before: {expected[max(0, at - 24):at]!r})"


def _listed(data: dict[str, Any], name: str, baseline: str) -> str | None:
    """Why a completions file cannot be compared prompt by prompt (None when it can)."""
    prompts, texts = data.get("prompts"), data.get("completions")
    if not isinstance(prompts, list) or not isinstance(texts, list):
        return f"{name}: the completions file has no prompts and completions lists"
    if len(texts) != len(prompts):
        return (f"{name}: {len(texts)} completions kept for {len(prompts)} prompts (an incomplete file: "
                f"nothing to compare with {baseline}'s prompt by prompt)")
    return None


def eagle3_parity(completions: dict[str, dict[str, Any]], baseline: str = BASELINE,
                  profiles: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Every difference of the greedy completions of every other profile from the baseline's, prompt by prompt.

    `completions` maps profile -> {"prompts": [...], "completions": [...], "smoke_test": {...}} (the
    *.completions.json files). Each problem has a `kind`: "evidence" (no baseline completions, none kept for a
    profile in `profiles`, other prompts than the baseline's, a completions list shorter or longer than its
    prompts), "mismatch" (one prompt's text differs; `index` is its position) or "smoke" (the tutorial's smoke
    test, compared when the baseline's file records one). How many mismatches a profile may have is the
    parity gate's rule (eagle3_parity_rule); this lists them all.
    """
    want = completions.get(baseline)
    if not want or not want.get("prompts"):
        return [_problem(baseline, f"no greedy completions kept from the {baseline} profile to compare with")]
    broken = _listed(want, baseline, baseline)
    if broken:
        return [_problem(baseline, broken)]
    problems = []
    names = sorted(set(profiles or []) | set(completions))
    for name in names:
        if name == baseline:
            continue
        got = completions.get(name)
        if not got or not got.get("completions"):
            problems.append(_problem(name, f"{name}: no greedy completions kept to compare with {baseline}'s"))
            continue
        if got.get("prompts") != want["prompts"]:
            problems.append(_problem(name, f"{name}: greedy completions were kept for other prompts than {baseline}'s"))
            continue
        broken = _listed(got, name, baseline)
        if broken:
            problems.append(_problem(name, broken))
            continue
        for i, prompt in enumerate(want["prompts"]):
            expected, actual = want["completions"][i], got["completions"][i]
            if actual != expected or not isinstance(expected, str):
                problems.append(_problem(
                    name, f"{name}: greedy output differs from {baseline} for prompt {prompt!r}"
                          f"{_divergence(expected, actual)}: expected {expected!r}, got {actual!r}",
                    prompt, expected, actual, "mismatch", i))
        smoke = (want.get("smoke_test") or {}).get("text")
        if smoke is not None:
            theirs = (got.get("smoke_test") or {}).get("text")
            if theirs != smoke:
                prompt = want["smoke_test"].get("prompt")
                problems.append(_problem(
                    name, f"{name}: the tutorial's smoke test differs from {baseline}'s (/v1/completions, "
                          f"{prompt!r}){_divergence(smoke, theirs)}: expected {smoke!r}, got {theirs!r}",
                    prompt, smoke, theirs, "smoke"))
    return problems


def _required(rate: float, total: int) -> int:
    """The fewest identical prompts of `total` that make at least `rate` percent (integers: no float jitter)."""
    hundredths = round(rate * 100)
    return -(-hundredths * total // 10000)


def eagle3_parity_rule(completions: dict[str, dict[str, Any]], baseline: str = BASELINE,
                       profiles: Iterable[str] | None = None,
                       rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parity gate's judgement: {"profiles": [one verdict per profile], "problems": [every difference]}.

    `rule` is the parity gate's settings: `min_match_rate` (percent, a floor: at least that share of the
    prompts not in `exact_prompts` identical; 100, the default, is every prompt) and `exact_prompts` (prompts
    that must be identical whatever the share, and must have been sent). The tutorial's smoke test, when the
    baseline's file records it, must be identical too.

    The share follows vLLM's own correctness test of EAGLE (vllm-project/vllm tests/v1/e2e/test_spec_decode.py
    at 0130080b3dec7ade06a538659d1ebb98a55f1b24, test_eagle_correctness: `assert matches > int(0.6 *
    len(ref_outputs))`, "expect at least 60% of the prompts to match exactly"): speculative decoding is lossless
    only up to the hardware's numerics, and a near-tie may flip a token where the k+1-token verify graph differs
    from the one-token decode. With its 100 prompts, "more than 60" is at least 61: min_match_rate 61.

    A verdict: {"profile", "ok", "matched", "total", "required", "compared", "rule", "message"}; each problem
    of kind "mismatch" gets `tolerated` (true: within the rule, shown but not failing).
    """
    rule = rule or {}
    rate = float(rule.get("min_match_rate", 100.0))
    exact = [p for p in (rule.get("exact_prompts") or []) if isinstance(p, str)]
    problems = eagle3_parity(completions, baseline, profiles)
    want = completions.get(baseline) or {}
    prompts = want.get("prompts") if isinstance(want.get("prompts"), list) else []
    pinned = {i for i, p in enumerate(prompts) if p in exact}
    compared = len(prompts) - len(pinned)
    required = _required(rate, compared)
    smoke = (want.get("smoke_test") or {}).get("text") is not None
    musts = ", ".join(repr(p) for p in exact) + (" and the smoke test" if smoke else "")
    text = (f"every prompt{' and the smoke test' if smoke else ''} identical" if rate >= 100 else
            f"{musts + ' identical, and ' if musts else ''}at least {rate:g} % of the "
            f"{'other ' if pinned else ''}{compared} identical, i.e. {required}")
    verdicts = []
    names = [n for n in sorted(set(profiles or []) | set(completions)) if n != baseline]
    evidence = [p for p in problems if p["kind"] == "evidence"]
    for p in evidence:
        if p["profile"] == baseline:  # nothing to compare with: the baseline's problem, for every profile
            verdicts.append({"profile": baseline, "ok": False, "matched": None, "total": None, "required": None,
                             "compared": None, "rule": text, "message": p["message"]})
            return {"profiles": verdicts, "problems": problems}
    for name in names:
        own = [p for p in problems if p["profile"] == name]
        verdict = {"profile": name, "ok": False, "matched": None, "total": len(prompts), "required": required,
                   "compared": compared, "rule": text}
        broken = [p["message"] for p in own if p["kind"] == "evidence"]
        if broken:
            verdicts.append(dict(verdict, message="; ".join(broken)))
            continue
        wrong = {p["index"] for p in own if p["kind"] == "mismatch"}
        missing = [p for p in exact if p not in prompts]
        pinned_wrong = sorted(wrong & pinned)
        share_ok = compared - len(wrong - pinned) >= required
        smoke_wrong = [p for p in own if p["kind"] == "smoke"]
        matched = len(prompts) - len(wrong)
        reasons = ([f"{prompts[i]!r} differs: it must be identical whatever the share" for i in pinned_wrong]
                   + (["the smoke test differs: it must be identical whatever the share"] if smoke_wrong else [])
                   + [f"{p!r} (exact_prompts) was not sent: nothing to hold it to" for p in missing]
                   + ([] if share_ok else [f"{compared - len(wrong - pinned)} of the {'other ' if pinned else ''}"
                                           f"{compared} identical, fewer than {required}"]))
        for p in own:
            p["tolerated"] = p["kind"] == "mismatch" and p["index"] not in pinned and share_ok and not reasons
        verdicts.append(dict(verdict, ok=not reasons, matched=matched,
                             message=f"{name}: {matched} of {len(prompts)} prompts identical to the {baseline}'s "
                                     f"(rule: {text})" + ("; " + "; ".join(reasons) if reasons else "")))
    return {"profiles": verdicts, "problems": problems}


def eagle3_sweep(rows: list[dict[str, Any]], baseline: str = BASELINE,
                 failing: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The tutorial's rule: recommend the highest output_throughput, not the highest acceptance; with rounds > 1, the
    highest lower bound of the speedup, a tie going to the smaller k (`decided_by` says which, `tied_with` the ties).

    Only a profile that passes every enforced gate (`failing` maps a profile to its failures) is
    recommended; when none does, `winner` is None and `why` says what each one failed.
    """
    failing = failing or {}
    spec = [r for r in rows if r["profile"] != baseline and r.get("output_throughput") is not None]
    passing = [r for r in spec if not failing.get(r["profile"])]
    rejected = {r["profile"]: failing[r["profile"]] for r in spec if failing.get(r["profile"])}
    accepted = [r for r in passing if r.get("acceptance_rate") is not None]
    # Among equal acceptance rates prefer the faster profile: "differs" then means a real trade-off.
    best = max(accepted, key=lambda r: (r["acceptance_rate"], r["output_throughput"])) if accepted else None
    sweep: dict[str, Any] = {"winner": None, "winner_output_throughput": None, "winner_speedup": None,
                             "best_acceptance": best["profile"] if best else None,
                             "best_acceptance_rate": best["acceptance_rate"] if best else None,
                             "differs": False, "profiles": len(spec), "rejected": rejected, "why": None,
                             "winner_speedup_low": None, "tied_with": [], "decided_by": None}
    if not spec:
        sweep["why"] = "no speculative profile has results"
    elif not passing:
        sweep["why"] = "no speculative profile passes every enforced gate: " + "; ".join(
            f"{name}: {reasons[0]}" for name, reasons in sorted(rejected.items()))
    elif any((r.get("rounds") or 1) > 1 and r.get("speedup_interval") for r in passing):
        # rounds > 1: the highest lower bound of the speedup; a tie (paired throughput ratio containing 1) goes to the
        # smaller k (plugins/module_utils/results/intervals.py)
        choice = choose_round(passing, [r["profile"] for r in passing if r.get("speedup_interval")])
        winner = next(r for r in passing if r["profile"] == choice["name"])
        sweep.update(winner=winner["profile"], winner_output_throughput=winner["output_throughput"],
                     winner_speedup=winner.get("speedup"), winner_speedup_low=winner.get("speedup_low"),
                     tied_with=choice["tied_with"], decided_by=choice["why"],
                     differs=best is not None and best["profile"] != winner["profile"])
    else:
        winner = max(passing, key=lambda r: r["output_throughput"])
        sweep.update(winner=winner["profile"], winner_output_throughput=winner["output_throughput"],
                     winner_speedup=winner.get("speedup"),
                     decided_by="the highest output throughput, from one round: the decision rests on one sample",
                     differs=best is not None and best["profile"] != winner["profile"])
    return sweep


def eagle3_fleet(hosts: dict[str, list[dict[str, Any]]], outlier_tolerance: float = 0.10) -> dict[str, Any]:
    """Per profile across hosts: median/min/max of the tutorial's metrics, and outlier hosts.

    A host is an outlier for a profile when its output_throughput is more than `outlier_tolerance`
    (a fraction) below the median of the *other* hosts of that profile: with two hosts, the slower
    one is measured against the faster one (a fleet median would include the slow host itself).
    """
    by_profile: dict[str, dict[str, dict[str, Any]]] = {}
    for host, rows in hosts.items():
        for row in rows:
            by_profile.setdefault(row["profile"], {})[host] = row
    profiles = {}
    for profile, per_host in sorted(by_profile.items(), key=lambda kv: (kv[0] != BASELINE, kv[0])):
        stats: dict[str, Any] = {"hosts": len(per_host)}
        for metric in METRICS + ("p99_ttft_ms", "p99_tpot_ms", "speedup", "acceptance_rate", "acceptance_length",
                                 "cost_per_1m", "saving"):
            values = [r[metric] for r in per_host.values() if r.get(metric) is not None]
            stats[metric] = ({"median": median(values), "min": min(values), "max": max(values)}
                             if values else None)
        outliers = []
        for host, row in sorted(per_host.items()):
            value = row.get("output_throughput")
            others = [r["output_throughput"] for h, r in per_host.items()
                      if h != host and r.get("output_throughput") is not None]
            if value is None or not others:
                continue
            reference = median(others)
            if reference > 0 and value < reference * (1 - outlier_tolerance):
                outliers.append({"host": host, "output_throughput": value, "others_median": reference,
                                 "below_median": 1 - value / reference})
        stats["outliers"] = outliers
        profiles[profile] = stats
    return profiles
