"""Where a host's compile cache of a profile comes from, decided on the controller before the profile's start:

- `local`: the host holds the cache of the key already (its mark under the cache root);
- `ship`: the controller holds the archive of the key (the canary published it, in this run or, with the archive on the
  controller, an earlier one), or S3 does (an earlier run's upload, from another controller): copied or downloaded and
  applied (unpacked only when the archive's own key is the host's);
- `refused`: the canary shipped a cache of another key (the message names the parts that differ): the host compiles;
- `cold`: the host compiles (it is the canary, or the canary shipped nothing, or the wait ended).

Pure functions; the action compile_cache_plan and the filters eagle3_compile_cache_decide and
eagle3_compile_cache_applied call them.
"""
from __future__ import annotations

from typing import Any

from .key import eagle3_compile_cache_diff, eagle3_compile_cache_parts


def looks_in_s3(bucket: str, here: bool, on_controller: bool) -> bool:
    """S3 is asked only for a key neither this host nor the controller holds."""
    return bool(bucket) and not here and not on_controller


def deadline(now: float, wait: int, is_canary: bool, here: bool, on_controller: bool, s3_sha256: str) -> int:
    """Until when the host waits for the canary's cache (epoch seconds); 0, no look, when it does not wait: it is the
    canary, or the cache is here, on the controller or in S3. With wait 0 the deadline is now: one look at the
    canary's manifest (a cache shipped under another key is still refused by name)."""
    if is_canary or here or on_controller or s3_sha256:
        return 0
    return int(now) + int(wait)


def decide(plan: dict[str, Any], waited: dict[str, Any] | None, canary: str, wait: int) -> dict[str, Any]:
    """The outcome before any apply: {state, key, reason[, canary, canary_key]}. `plan` is compile_cache_plan's
    result, `waited` the canary wait's last answer ({} when the host did not wait)."""
    key, waited = plan["key"], waited or {}
    if plan["here"]:
        return {"state": "local", "key": key, "reason": "this host already holds it"}
    if plan["on_controller"] or (waited.get("state") == "shipped" and waited.get("key") == key):
        return {"state": "ship", "key": key, "reason": "on the controller"}
    if plan["s3_sha256"]:
        return {"state": "ship", "key": key, "reason": "in S3 from an earlier run, not on this controller"}
    if waited.get("state") == "shipped":
        differs = "; ".join(eagle3_compile_cache_diff(plan["material"], waited.get("material")))
        return {"state": "refused", "key": key, "canary": waited.get("canary"), "canary_key": waited.get("key"),
                "reason": f"the canary {waited.get('canary')} compiled key {waited.get('key')}, this host needs {key}; "
                          f"differs in: {differs}"}
    if plan["is_canary"]:
        reason = "this host is the canary"
    elif int(wait) == 0 and waited.get("state") == "timeout":
        reason = (f"no cache of this key on the controller yet, and hosts do not wait for the canary {canary} "
                  "(compile_cache_wait 0, eagle3_compile_cache_wait)")
    else:
        reason = f"the canary {waited.get('canary') or '?'} shipped nothing ({waited.get('state') or 'unknown'})"
    if plan["looked_in_s3"]:
        reason += f"; {plan['s3_reason']}"
    return {"state": "cold", "key": key, "reason": reason}


def settled(outcome: dict[str, Any], plan: dict[str, Any], unpacked: dict[str, Any] | None, via: str, hit_only: bool,
            accelerator: str, root: str) -> dict[str, Any]:
    """The outcome after the apply: a shipped archive unpacked, or refused by its own key (`unpacked`, the probe's
    answer; None when nothing was shipped), and the start mode: cache-hit-only on a later neuron host holding the cache
    (a miss fails the start at once, naming the key's parts, instead of a silent compile of many minutes); the canary
    and a host without the cache compile as usual."""
    if unpacked is not None:
        outcome = dict(outcome, state="shipped" if unpacked.get("used") else "refused", canary=unpacked.get("canary"),
                       files=unpacked.get("files"), bytes=unpacked.get("bytes"),
                       reason=unpacked.get("reason") or outcome.get("reason"), via=via)
    hit = (bool(hit_only) and accelerator == "neuron" and not plan["is_canary"]
           and outcome.get("state") in ("shipped", "local"))
    return dict(outcome, hit_only=hit, root=root, **({"parts": eagle3_compile_cache_parts(plan["material"])} if hit else {}))


def said(outcome: dict[str, Any], profile: str) -> str:
    """The line the play shows for a profile's compile cache."""
    state = outcome.get("state")
    what = {
        "local": "already on this host, used as it is",
        "shipped": (f"shipped from the canary {outcome.get('canary') or '?'} through {outcome.get('via') or 'the controller'}"
                    f" and applied ({outcome.get('files') or 0} files, {outcome.get('bytes') or 0} bytes): no compile here"),
        "refused": f"REFUSED, this host compiles it itself: {outcome.get('reason')}",
        "cold": f"compiled on this host at its start: {outcome.get('reason')}",
    }.get(state, f"{state}: {outcome.get('reason')}")
    hit = "; starts in cache-hit-only mode (a miss fails the start)" if outcome.get("hit_only") else ""
    return f"compile cache of {profile} (key {outcome.get('key')}, {outcome.get('root')}): {what}{hit}"
