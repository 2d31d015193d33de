"""Whether a (round, profile) benchmark is done, and what a rerun does about it (so a resumed run neither repeats a
valid benchmark nor trusts an invalid one).

A result counts as done only when its file validates: the report's own checks of one file (result_checks.file_problems:
shape, finite numbers, its own counters, every request completed and none failed) plus its identity, the values
vllm_bench passed as `--metadata` (this run, host, profile, round, and the sha256 of the server config it was
measured with). Never by an exit status or a file's existence.

`decide(phase, state)` is the one decision, for both places a result can be:
- phase "controller" (before any host call; the eagle3_bench_pending filter): the controller's copy is valid -> done;
  invalid -> quarantined on the controller (kept with its reason, never read as a result) and still pending; absent ->
  pending.
- phase "host" (after the host's reconcile probe stopped every benchmark client still running, so nothing measures a
  server the rerun is about to stop; the eagle3_bench_reconcile filter): the host's copy is valid and, in round 1,
  the greedy completions taken with it are on the controller -> adopted (its timeline from the file itself); invalid
  -> quarantined on the host; otherwise (absent, or valid without its completions) -> benchmarked again.

The host's quarantine is <host results dir>/<run>/quarantine/, the controller's <results>/<run>/quarantine/<host>/:
each file kept as <name>.<UTC stamp> beside <name>.<UTC stamp>.why.json ({"file", "reason", "phase", "when"}).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks import file_problems

PHASES = ("controller", "host")
FILE_STATES = ("absent", "valid", "invalid")
# The identity keys a result carries as --metadata (vllm_bench) and their names in the messages.
IDENTITY = ("run_id", "host", "profile", "round", "config_sha256")


def identity_problems(data: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The file's --metadata identity against what this step expects (a key absent from `expected` is not checked)."""
    out = []
    for key in IDENTITY:
        if key not in expected:
            continue
        want, got = str(expected[key]), data.get(key)
        if got is None:
            out.append(f"{key} not recorded (vllm_bench passes --metadata {key}={want}): not a result of this step")
        elif str(got) != want:
            out.append(f"{key} {got!r} is not this step's {want!r}")
    return out


def result_problems(text: str | None, expected: Mapping[str, Any]) -> list[str]:
    """Every reason a result file's text is not a done result of the step `expected` names (empty: done)."""
    if text is None:
        return ["no file"]
    if not text.strip():
        return ["empty file"]
    try:
        data = json.loads(text)
    except ValueError as exc:
        return [f"truncated or invalid JSON ({exc})"]
    # file_problems names requests that failed first: the cause an operator needs (a server that died under the client).
    return file_problems(data) + (identity_problems(data, expected) if isinstance(data, Mapping) else [])


def decide(phase: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """What to do with one (round, profile) of one host.

    state: {"file": "absent" | "valid" | "invalid", "round": int, "completions": bool (host phase: the round's greedy
    completions are on the controller)}. Returns {"done": bool, "quarantine": bool, "adopt": bool, "run": bool}:
    done -- nothing more to do; quarantine -- move the file aside with its reason first; adopt (host phase) -- bring
    the host's valid file to the controller as this step's result; run -- start the server and benchmark.
    """
    if phase not in PHASES:
        raise ValueError(f"decide: phase must be one of {PHASES} (got {phase!r})")
    file = state.get("file")
    if file not in FILE_STATES:
        raise ValueError(f"decide: file must be one of {FILE_STATES} (got {file!r})")
    quarantine = file == "invalid"
    if phase == "controller":
        done = file == "valid"
        return {"done": done, "quarantine": quarantine, "adopt": False, "run": False}
    # Round 1's completions are the parity check's evidence: a result without them is benchmarked again with them.
    adopt = file == "valid" and (int(state.get("round", 1)) > 1 or bool(state.get("completions")))
    return {"done": adopt, "quarantine": quarantine, "adopt": adopt, "run": not adopt}

