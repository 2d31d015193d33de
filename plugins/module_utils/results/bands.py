"""Acceptance bands (a draft can fall below what it is known to give while staying above 30 %): what acceptance a
(target, draft, dataset, temperature, k, engine) is known to give, and the gate that holds a run to it.

Acceptance is the stable signal and the early one: a wrong draft, or a target implementation that is off, shows first
as acceptance leaving its band (a draft falling from 74 % to 45 % passes a 30 % floor). A band entry:

    key:      {target, draft, dataset, temperature, k, vllm, plugin}   (temperature null = the tool's default)
    acceptance_length, per_position: [fractions], acceptance_rate (percent, optional)
    rtol:     relative tolerance on the length and each position (vLLM's own CI: 0.05)
    evidence: where the numbers come from (a run id and manifest, a document, a file and line)

The gate (`band_verdict`): the run's acceptance length and every per-position rate within rtol of the band's,
relatively, as vLLM's tests/v1/spec_decode/test_acceptance_length.py holds them; it names the position that fell out.
Enforced where a band exists for the run's exact key; informational where only a near key does (the same target,
draft and dataset, another k, temperature or engine version); skipped with the reason where there is none. The
throughput reference is matched by the same key (`match`), so it never compares unlike models.

Live traffic is not sonnet: a band recorded from a Prometheus window (`bands_from_prometheus`) has the dataset "live"
(`live_key`: the clients' own prompts and sampling, so temperature null), the same entry format, and evidence naming the
Prometheus URL, the window, the query time and the hosts. It never gates a benchmark (another dataset, never near a
sonnet key); it sets the serving alert's threshold (`alert_bands`): below the band's lower edge, else the 30 % floor.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results.rounds import k_of

KEY = ("target", "draft", "dataset", "temperature", "k", "vllm", "plugin")
NEAR = ("target", "draft", "dataset")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b))
    return a == b


def match(entries: Sequence[Mapping], key: Mapping) -> tuple[str, Mapping | None, str]:
    """("exact" | "near" | "none", the entry, why). A near entry differs from the key only outside target, draft and
    dataset; the nearest is the one with the fewest differing fields, the same k first."""
    exact = [e for e in entries if all(_same(e["key"].get(f), key.get(f)) for f in KEY)]
    if exact:
        return "exact", exact[0], "a band for this exact key"
    near = [e for e in entries if all(_same(e["key"].get(f), key.get(f)) for f in NEAR)]
    if near:
        def distance(entry: Mapping) -> tuple[int, int]:
            differ = [f for f in KEY if not _same(entry["key"].get(f), key.get(f))]
            return len(differ), 0 if "k" not in differ else 1
        best = min(near, key=distance)
        differ = [f"{f} {best['key'].get(f)!r} (this run: {key.get(f)!r})" for f in KEY
                  if not _same(best["key"].get(f), key.get(f))]
        return "near", best, "only a near band: it differs in " + ", ".join(differ)
    return "none", None, (f"no band for target {key.get('target')}, draft {key.get('draft')}, dataset "
                          f"{key.get('dataset')}")


def band_verdict(entry: Mapping, length: Any, per_position: Any) -> dict:
    """{"ok", "message", "position"} of a run's acceptance length and per-position rates against a band entry."""
    rtol = float(entry.get("rtol", 0.05))
    want_length, want_positions = float(entry["acceptance_length"]), [float(p) for p in entry["per_position"]]
    if not isinstance(length, (int, float)) or isinstance(length, bool) or not math.isfinite(length):
        return {"ok": False, "position": None, "message": f"no acceptance length to hold to the band ({length!r})"}
    problems, fell = [], None
    error = abs(length - want_length) / want_length
    if error > rtol:
        problems.append(f"acceptance length {length:.3f} is {error:.1%} from the band's {want_length:.3f}")
    rates = list(per_position) if isinstance(per_position, Sequence) and not isinstance(per_position, str) else []
    if len(rates) != len(want_positions):
        problems.append(f"{len(rates)} per-position rates against the band's {len(want_positions)}")
    else:
        for position, (got, want) in enumerate(zip(rates, want_positions), start=1):
            if want > 0 and abs(float(got) - want) / want > rtol:
                fell = fell or position
                problems.append(f"position {position} accepts {float(got):.1%} against the band's {want:.1%} "
                                f"({abs(float(got) - want) / want:.1%} off)")
    if problems:
        return {"ok": False, "position": fell,
                "message": "; ".join(problems) + f" (tolerance {rtol:.0%}, relative)"}
    return {"ok": True, "position": None,
            "message": f"acceptance length {length:.3f} and every position within {rtol:.0%} of the band "
                       f"({want_length:.3f}; {', '.join(f'{p:.1%}' for p in want_positions)})"}


def acceptance_band_gate(entries: Sequence[Mapping], key: Mapping, length: Any, per_position: Any) -> dict:
    """The acceptance_band gate of one profile: {"ok", "enforced", "skipped", "message", "position", "evidence"}."""
    kind, entry, why = match(entries, key)
    if entry is None:
        return {"ok": True, "enforced": False, "skipped": True, "message": f"skipped: {why}", "position": None,
                "evidence": None}
    verdict = band_verdict(entry, length, per_position)
    enforced = kind == "exact"
    prefix = "" if enforced else f"informational, {why}: "
    return {"ok": verdict["ok"] or not enforced, "enforced": enforced, "skipped": False, "position": verdict["position"],
            "message": prefix + verdict["message"], "evidence": entry.get("evidence")}


def band_problems(entries: Any, name: str) -> list[str]:
    """What a list of bands cannot be, beyond each entry's shape (a band that
    contradicts itself would gate nothing): one rate per speculative position (as many
    as the key's k), an acceptance length of 1 + the sum of the per-position rates and an acceptance rate of their mean
    (vLLM's own definitions, within the rounding a recorded band carries), one band per key."""
    out: list[str] = []
    seen: dict[tuple, int] = {}
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        key, positions = (entry.get("key"), entry.get("per_position")) if isinstance(entry, Mapping) else (None, None)
        if not isinstance(key, Mapping) or not isinstance(positions, list) or not all(
                isinstance(p, (int, float)) and not isinstance(p, bool) for p in positions) or not positions:
            continue  # the schema refuses the shape
        where, k, total = f"{name}[{index}]", key.get("k"), sum(positions)
        length, rate = entry.get("acceptance_length"), entry.get("acceptance_rate")
        if isinstance(k, int) and len(positions) != k:
            out.append(f"{where}.per_position has {len(positions)} rates but its key's k is {k}: one rate per "
                       "speculative position.")
        if isinstance(length, (int, float)) and abs(length - (1 + total)) > 0.01 + 0.001 * len(positions):
            out.append(f"{where}.acceptance_length {length} is not 1 + the sum of its per_position rates "
                       f"({1 + total:.4g}), as vLLM defines it.")
        if isinstance(rate, (int, float)) and abs(rate - 100 * total / len(positions)) > 0.5:
            out.append(f"{where}.acceptance_rate {rate} is not the mean of its per_position rates "
                       f"({100 * total / len(positions):.4g} %), as vLLM defines it.")
        ident = tuple(str(key.get(field)) for field in KEY)
        if ident in seen:
            out.append(f"{where}.key is {name}[{seen[ident]}]'s too: one band per key.")
        seen.setdefault(ident, index)
    return out


def band_from_run(key: Mapping, result: Mapping, evidence: Mapping, rtol: float = 0.05) -> dict:
    """A band entry from a passing run's EAGLE3 result (the bench JSON's own spec-decode figures)."""
    positions = result.get("spec_decode_per_position_acceptance_rates")
    length = result.get("spec_decode_acceptance_length")
    if not isinstance(positions, list) or not positions or not isinstance(length, (int, float)):
        raise ValueError("the result has no spec-decode acceptance figures to record a band from")
    return {"key": {f: key.get(f) for f in KEY}, "acceptance_length": round(float(length), 4),
            "per_position": [round(float(p), 4) for p in positions],
            **({"acceptance_rate": round(float(result["spec_decode_acceptance_rate"]), 2)}
               if isinstance(result.get("spec_decode_acceptance_rate"), (int, float)) else {}),
            "rtol": rtol, "evidence": dict(evidence)}


def bands_from_run(hosts: Mapping, key: Mapping, evidence: Mapping, rtol: float = 0.05) -> list[dict]:
    """One band per speculative profile of a run ({host: {"results": {profile: bench JSON}}}), its figures the mean
    over the hosts that ran it; k is the number of positions the results report."""
    by_profile: dict[str, list[Mapping]] = {}
    for entry in hosts.values():
        for profile, result in sorted((entry.get("results") or {}).items()):
            if isinstance(result, Mapping) and isinstance(result.get("spec_decode_per_position_acceptance_rates"), list):
                by_profile.setdefault(profile, []).append(result)
    out = []
    for profile, results in sorted(by_profile.items()):
        k = len(results[0]["spec_decode_per_position_acceptance_rates"])
        if any(len(r["spec_decode_per_position_acceptance_rates"]) != k for r in results):
            raise ValueError(f"{profile}: the hosts report different numbers of positions")
        out.append(band_from_run(dict(key, k=k), _mean(results), dict(evidence, profile=profile, hosts=len(results)),
                                 rtol))
    return out


def _mean(results: Sequence[Mapping]) -> dict:
    """The mean spec-decode figures of results with the same number of positions (one per host)."""
    k = len(results[0]["spec_decode_per_position_acceptance_rates"])
    return {
        "spec_decode_per_position_acceptance_rates": [
            sum(float(r["spec_decode_per_position_acceptance_rates"][i]) for r in results) / len(results)
            for i in range(k)],
        "spec_decode_acceptance_length": sum(float(r["spec_decode_acceptance_length"]) for r in results) / len(results),
        "spec_decode_acceptance_rate": sum(float(r.get("spec_decode_acceptance_rate", 0.0)) for r in results)
        / len(results)}


def bands_merged(existing: Sequence[Mapping], new: Sequence[Mapping]) -> list[dict]:
    """The existing bands with every band of the same key replaced by the new one, the new ones of other keys added."""
    keys = [tuple(str(b["key"].get(f)) for f in KEY) for b in new]
    kept = [dict(b) for b in existing if tuple(str(b["key"].get(f)) for f in KEY) not in keys]
    return kept + [dict(b) for b in new]


# --- Live traffic (a draft that fits the benchmark may not fit real prompts) --------------------------------------
# A band from a Prometheus window, and the serving alert's threshold.
LIVE_DATASET = "live"
# vLLM's spec-decode counters (vllm/v1/spec_decode/metrics.py), the ones the monitoring role's recording rules divide;
# position is vLLM's label, 0 for the first draft token.
LIVE_COUNTERS = {
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
    "drafted": "vllm:spec_decode_num_draft_tokens_total",
    "drafts": "vllm:spec_decode_num_drafts_total",
    "positions": "vllm:spec_decode_num_accepted_tokens_per_pos_total",
}
LIVE_JOB = "eagle3-vllm"  # the monitoring role's scrape job (roles/monitoring/templates/prometheus.yml.j2)


def live_key(key: Mapping, k: int) -> dict:
    """The band key of live traffic served with `key`'s models and engine at k: dataset "live", temperature null (the
    clients' own sampling)."""
    return dict({f: key.get(f) for f in KEY}, dataset=LIVE_DATASET, temperature=None, k=k)


def live_queries(window: str) -> dict[str, str]:
    """The PromQL of each counter's increase over `window` per serving host and profile (per position too): the same
    arithmetic as the recording rules and the benchmark's spec_decode_* keys, weighted by the window's traffic (a mean
    of the rules' 5-minute ratios would weigh a quiet 5 minutes like a busy one)."""
    if not re.fullmatch(r"[1-9][0-9]*(ms|s|m|h|d|w|y)", str(window)):
        raise ValueError(f"the band's window must be a Prometheus duration such as 1h or 1d (got {window!r})")
    by = {"positions": "host, profile, position"}
    return {name: f'sum by ({by.get(name, "host, profile")}) (increase({metric}{{job="{LIVE_JOB}"}}[{window}]))'
            for name, metric in LIVE_COUNTERS.items()}


def _vector(name: str, answer: Any) -> list[tuple[dict, float, float]]:
    """[(labels, value, timestamp)] of an instant query's answer as Prometheus's HTTP API gives it:
    {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...}, "value": [ts, "0.74"]}]}}.
    A value that is not finite (NaN: no traffic in a divisor) is left out."""
    if not isinstance(answer, Mapping) or answer.get("status") != "success":
        error = answer.get("error") if isinstance(answer, Mapping) else None
        raise ValueError(f"Prometheus did not answer the {name} query: {error if error else repr(answer)}")
    data = answer.get("data") or {}
    if data.get("resultType") != "vector":
        raise ValueError(f"the {name} query gave a {data.get('resultType')!r}, not an instant vector")
    out = []
    for row in data.get("result") or []:
        ts, text = row["value"]
        value = float(text)
        if math.isfinite(value):
            out.append((dict(row.get("metric") or {}), value, float(ts)))
    return out


def live_results(answers: Mapping[str, Any], hosts: Sequence[str] = ()) -> tuple[dict, float | None]:
    """({host: {"results": {profile: spec-decode figures}}}, the query time) from the answers of `live_queries`, for
    `hosts` (all when empty); a (host, profile) without drafts in the window has no figures."""
    rows = {name: _vector(name, answers.get(name)) for name in LIVE_COUNTERS}
    times = [ts for series in rows.values() for _, _, ts in series]
    wanted = set(hosts)

    def by_pair(name: str) -> dict[tuple[str, str], float]:
        return {(m.get("host", ""), m.get("profile", "")): v for m, v, _ in rows[name]
                if not wanted or m.get("host") in wanted}

    accepted, drafted, drafts = by_pair("accepted"), by_pair("drafted"), by_pair("drafts")
    positions: dict[tuple[str, str], dict[int, float]] = {}
    for metric, value, _ in rows["positions"]:
        if (not wanted or metric.get("host") in wanted) and str(metric.get("position", "")).isdigit():
            positions.setdefault((metric.get("host", ""), metric.get("profile", "")), {})[int(metric["position"])] = value
    hosts_out: dict[str, dict] = {}
    for pair in sorted(drafts):
        per = positions.get(pair, {})
        if drafts[pair] <= 0 or drafted.get(pair, 0) <= 0 or not per or sorted(per) != list(range(len(per))):
            continue
        host, profile = pair
        hosts_out.setdefault(host, {"results": {}})["results"][profile] = {
            "spec_decode_acceptance_rate": 100.0 * accepted.get(pair, 0.0) / drafted[pair],
            "spec_decode_acceptance_length": 1.0 + accepted.get(pair, 0.0) / drafts[pair],
            "spec_decode_per_position_acceptance_rates": [per[i] / drafts[pair] for i in range(len(per))],
            "drafts": drafts[pair], "draft_tokens": drafted[pair]}
    return hosts_out, (max(times) if times else None)


def bands_from_prometheus(answers: Mapping[str, Any], key: Mapping, evidence: Mapping, hosts: Sequence[str] = (),
                          rtol: float = 0.10) -> list[dict]:
    """One live band per k served in the window (the mean figures over the hosts and profiles that served it), the
    same entry as `bands_from_run`, with the evidence given (the Prometheus URL, the window) plus the query time, the
    hosts, the profiles and the drafts counted. Refused when no host drafted in the window."""
    results, when = live_results(answers, hosts)
    by_k: dict[int, list[tuple[str, str, dict]]] = {}
    for host, entry in sorted(results.items()):
        for profile, figures in sorted(entry["results"].items()):
            by_k.setdefault(len(figures["spec_decode_per_position_acceptance_rates"]), []).append((host, profile, figures))
    if not by_k:
        raise ValueError(f"no speculative traffic from {', '.join(hosts) if hosts else 'any host'} in the window "
                         f"{evidence.get('window', '')}: nothing to record a live band from")
    queried = datetime.fromtimestamp(when, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None
    out = []
    for k, served in sorted(by_k.items()):
        figures = [f for _, _, f in served]
        proof = dict(evidence, source="prometheus", queried=queried, hosts=sorted({h for h, _, _ in served}),
                     profiles=sorted({p for _, p, _ in served}), drafts=round(sum(f["drafts"] for f in figures)),
                     draft_tokens=round(sum(f["draft_tokens"] for f in figures)))
        out.append(band_from_run(live_key(key, k), _mean(figures), proof, rtol))
    return out


def _k_of(profile: str, profiles: Sequence[Mapping]) -> int | None:
    """A served profile's k: from the run's profiles (eagle3_profiles) by name, else its "-k<N>" suffix; None for the
    baseline."""
    for p in profiles:
        if p.get("name") == profile and isinstance(p.get("speculative_config"), Mapping):
            return int(p["speculative_config"]["num_speculative_tokens"])
    return k_of(profile)


def alert_edges(entry: Mapping) -> dict:
    """The lower edges of a band, as fractions: its acceptance rate and each position's, less the band's tolerance
    (relative, as the gate holds them)."""
    rtol = float(entry.get("rtol", 0.05))
    positions = [float(p) for p in entry["per_position"]]
    rate = (float(entry["acceptance_rate"]) / 100 if entry.get("acceptance_rate") is not None
            else sum(positions) / len(positions))
    return {"rate_min": round(rate * (1 - rtol), 4), "position_min": [round(p * (1 - rtol), 4) for p in positions]}


def alert_bands(targets: Sequence[Mapping], entries: Sequence[Mapping], key: Mapping,
                profiles: Sequence[Mapping] = ()) -> list[dict]:
    """The serving alert's band for each profile the targets serve (the monitoring role's monitoring_acceptance_bands):
    {profile, rate_min, position_min, source} where a live band exists for the exact key (`key`'s models and engine,
    the profile's k); a profile without one is left out, and the alert holds it to the floor."""
    out = []
    for profile in sorted({t.get("profile") for t in targets if t.get("profile")}):
        k = _k_of(profile, profiles)
        if k is None:
            continue
        kind, entry, _ = match(entries, live_key(key, k))
        if kind != "exact" or entry is None:
            continue
        proof = entry.get("evidence") or {}
        hosts = proof.get("hosts")
        where = " ".join(f"{word} {value}" for word, value in (
            ("from", proof.get("url")), ("over", proof.get("window")), ("to", proof.get("queried")),
            ("on hosts", ", ".join(map(str, hosts)) if isinstance(hosts, list) else hosts), ("run", proof.get("run_id")))
            if value)
        rate = (float(entry["acceptance_rate"]) if entry.get("acceptance_rate") is not None
                else 100 * sum(entry["per_position"]) / len(entry["per_position"]))
        out.append(dict(alert_edges(entry), profile=profile, source=(
            f"the live band of k={k} ({rate:.1f} % less its {100 * float(entry.get('rtol', 0.05)):g} % tolerance), "
            f"recorded {where or 'without evidence'}")))
    return out
