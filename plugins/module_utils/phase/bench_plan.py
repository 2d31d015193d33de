"""The order a host benchmarks in and what a rerun does with the results already there: the plan (every profile
interleaved by round), the controller's copies judged (pending, kept aside), the host's copies reconciled, each
result's problems against this step's identity. The decision itself is bench_state.decide's."""
from __future__ import annotations

import json
import os
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.phase import bench_state
from ansible_collections.eagle3.trn2.plugins.module_utils.results_layout import COMPLETIONS, result_name


def _expected(identity: dict[str, Any], item: dict[str, Any], config_sha256: dict[str, str] | None = None) -> dict:
    out = dict(identity, profile=item["name"], round=item["round"])
    if config_sha256 is not None:
        out["config_sha256"] = config_sha256[item["name"]]
    return out


def eagle3_result_problems(text: str | None, identity: dict[str, Any], item: dict[str, Any],
                           config_sha256: dict[str, str] | None = None) -> list[str]:
    return bench_state.result_problems(text, _expected(identity, item, config_sha256))


def _judge(text: str | None, identity: dict[str, Any], item: dict[str, Any],
           config_sha256: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The state of one copy of a result (absent, valid, invalid) for bench_state.decide, and its problems."""
    if text is None:
        return "absent", []
    problems = eagle3_result_problems(text, identity, item, config_sha256)
    return ("invalid" if problems else "valid"), problems


def eagle3_bench_pending(plan: list[dict[str, Any]], local_dir: str, identity: dict[str, Any]) -> dict[str, Any]:
    pending, quarantine = [], []
    for item in plan:
        path = os.path.join(local_dir, item["result"])
        text = None
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        state, problems = _judge(text, identity, item)
        decision = bench_state.decide("controller", {"file": state, "round": item["round"]})
        if decision["quarantine"]:
            quarantine.append({"name": item["result"], "reason": "; ".join(problems)})
        if not decision["done"]:
            pending.append(item)
    return {"pending": pending, "quarantine": quarantine}


def eagle3_bench_reconcile(pending: list[dict[str, Any]], probe: dict[str, Any], identity: dict[str, Any],
                           config_sha256: dict[str, str], local_dir: str) -> dict[str, Any]:
    adopt, quarantine, run, unpaired = [], [], [], []
    files = probe.get("files") or {}
    for item in pending:
        found = files.get(item["result"])
        state, problems = _judge(None if found is None else found["text"], identity, item, config_sha256)
        completions = os.path.isfile(os.path.join(local_dir, item["name"] + COMPLETIONS))
        decision = bench_state.decide("host", {"file": state, "round": item["round"], "completions": completions})
        if decision["quarantine"]:
            quarantine.append({"name": item["result"], "reason": "; ".join(problems)})
        if decision["adopt"]:
            # The result's own times: the file is written when the client ends; it measured `duration` seconds.
            end = round(float(found["mtime"]), 1)
            start = round(end - float(json.loads(found["text"])["duration"]), 1)
            adopt.append({"item": item, "text": found["text"],
                          "times": {"bench_start": start, "bench_end": end, "adopted": True}})
        if decision["run"]:
            run.append(item)
            if state == "valid":  # a valid copy without the completions taken with it: benchmarked again, said so
                unpaired.append(item["key"])
    return {"adopt": adopt, "quarantine": quarantine, "run": run, "unpaired": unpaired}


def eagle3_bench_plan(profiles: list[dict[str, Any]], rounds: int = 1) -> list[dict[str, Any]]:
    """Every (round, profile) a host benchmarks, interleaved so that drift over time hits every profile alike."""
    return [dict(p, round=r, result=result_name(p["name"], r), key=result_name(p["name"], r)[: -len(".json")])
            for r in range(1, int(rounds) + 1) for p in profiles]
