"""Acceptance bands (issue 37, item 4): what acceptance a (target, draft, dataset, temperature, k, engine) is known to
give, and the gate that holds a run to it.

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
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

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


def band_from_run(key: Mapping, result: Mapping, evidence: Mapping, rtol: float = 0.05) -> dict:
    """A band entry from a passing run's EAGLE3 result (the bench JSON's own spec-decode figures)."""
    positions = result.get("spec_decode_per_position_acceptance_rates")
    length = result.get("spec_decode_acceptance_length")
    if not isinstance(positions, list) or not positions or not isinstance(length, (int, float)):
        raise ValueError("the result has no spec-decode acceptance figures to record a band from")
    return {"key": {f: key.get(f) for f in KEY}, "acceptance_length": round(float(length), 4),
            "per_position": [round(float(p), 4) for p in positions],
            "acceptance_rate": round(float(result.get("spec_decode_acceptance_rate", 0.0)), 2), "rtol": rtol,
            "evidence": dict(evidence)}


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
        mean = {
            "spec_decode_per_position_acceptance_rates": [
                sum(float(r["spec_decode_per_position_acceptance_rates"][i]) for r in results) / len(results)
                for i in range(k)],
            "spec_decode_acceptance_length": sum(float(r["spec_decode_acceptance_length"]) for r in results) / len(results),
            "spec_decode_acceptance_rate": sum(float(r.get("spec_decode_acceptance_rate", 0.0)) for r in results)
            / len(results)}
        out.append(band_from_run(dict(key, k=k), mean, dict(evidence, profile=profile, hosts=len(results)), rtol))
    return out


def bands_merged(existing: Sequence[Mapping], new: Sequence[Mapping]) -> list[dict]:
    """The existing bands with every band of the same key replaced by the new one, the new ones of other keys added."""
    keys = [tuple(str(b["key"].get(f)) for f in KEY) for b in new]
    kept = [dict(b) for b in existing if tuple(str(b["key"].get(f)) for f in KEY) not in keys]
    return kept + [dict(b) for b in new]
