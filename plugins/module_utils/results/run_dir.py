"""One run directory on the controller read as the vllm_bench role fetched it (the lookup eagle3.trn2.eagle3_run and
the report read it through here): each host's results, rounds, completions, manifest, failure and timeline, every
unusable file listed with its reason instead of failing, and the run's run.json."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as layout
from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number as _is_number


MANIFEST_KEYS = ("run_id", "started", "finished", "project_revision", "deployed", "instance", "parameters", "sha256")


# A file is a `vllm bench serve` result only with these numeric keys.
RESULT_KEYS = ("completed", "failed", "num_prompts", "total_output_tokens", "output_throughput",
               "median_tpot_ms", "median_ttft_ms")


def _read_json(path: Path) -> tuple[Any, str | None]:
    """(data, None) or (None, why the file is unusable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({exc.strerror if isinstance(exc, OSError) else exc})"
    if not text.strip():
        return None, "empty file"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"truncated or invalid JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"a JSON {type(data).__name__}, not an object"
    return data, None


def _foreign(kind: str, data: dict[str, Any]) -> str | None:
    """Why a JSON object is not what its file name says, or None."""
    if kind == "result":
        bad = [k for k in RESULT_KEYS if not _is_number(data.get(k))]
        return (f"not a vllm bench serve result (no numeric {', '.join(bad)})" if bad else None)
    if kind == "completions":
        if not isinstance(data.get("prompts"), list) or not isinstance(data.get("completions"), list):
            return "not a completions file (no prompts and completions lists)"
    if kind == "timeline":
        profiles = data.get("profiles")
        if not isinstance(profiles, dict) or not all(isinstance(v, dict) for v in profiles.values()):
            return "not a timeline (no profiles object)"
        return None
    if kind == "manifest":
        deployed = data.get("deployed")
        missing = [k for k in MANIFEST_KEYS if k not in data]
        missing += [f"deployed.{k}" for k in ("os", "kernel", "python", "pip", "deb")
                    if not isinstance(deployed, dict) or k not in deployed]
        missing += [k for k in ("parameters", "sha256") if not isinstance(data.get(k), dict)]
        return f"not a run manifest (no {', '.join(sorted(set(missing)))})" if missing else None
    return None


def load_run(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Read <run_dir>/<host>/*.json as fetched by the vllm_bench role.

    Per host: results {profile: bench JSON of round 1}, rounds {profile: {round >= 2: bench JSON}} (eagle3_bench_rounds),
    completions {profile: ...}, manifest, failure, timeline, and
    bad_files [{"file", "reason"}] for every file that is unreadable, empty, truncated, not an
    object or not what its name says. A result still being fetched (*.json.part) is not read.
    """
    hosts: dict[str, dict[str, Any]] = {}
    # compile-cache/: the run's own compile-cache manifests, not a host's results (plugins/module_utils/results_layout.py).
    for host_dir in layout.host_dirs(run_dir):
        entry: dict[str, Any] = {"results": {}, "rounds": {}, "completions": {}, "manifest": None, "failure": None,
                                 "timeline": None, "bad_files": []}
        for path in sorted(host_dir.glob("*.json")):
            kind, key, round_no = layout.classify(path.name)
            data, why = _read_json(path)
            why = why or _foreign(kind, data)
            if why:
                entry["bad_files"].append({"file": f"{host_dir.name}/{path.name}", "reason": why})
            elif kind == "result" and round_no > 1:
                entry["rounds"].setdefault(key, {})[round_no] = data
            elif kind == "result":
                entry["results"][key] = data
            elif kind == "completions":
                entry["completions"][key] = data
            else:
                entry[kind] = data
        hosts[host_dir.name] = entry
    return hosts


def read_run(run_dir: str | Path) -> dict[str, Any]:
    """The run's host directories (load_run) and its run.json (the host list written when the run started)."""
    path = Path(run_dir) / layout.RUN_FILE
    data, why = _read_json(path) if path.exists() else (None, None)
    return {"hosts": load_run(run_dir), "run_json": {"exists": path.exists(), "data": data, "why": why}}
