"""The fleet's compile cache manifest on the controller (one per run and profile): written by the canary's announcements
(plugins/action/compile_cache_state.py and compile_cache_plan.py, in the task's own worker) and read by the other
hosts' wait (`wait`, run by roles/compile_cache/files/compile_cache_ctl.py). Plain Python, no Ansible import: the ctl
script imports it with the collection's plugins/module_utils on its path.

The canary host (the first host of the benchmark play) compiles each profile itself and announces it:
{"state": "compiling", "canary": HOST, "key": KEY, "material": {...}} with the ansible-playbook process that runs it
(PID and start time, as the window lock records its owner), and later "shipped" (with the archive's name and size),
"empty" (nothing in the cache to ship) or "failed" (the profile failed on the canary). Every write replaces the file
atomically (a temporary file renamed over it).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

try:  # as a collection module_utils (the action plugin)
    from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import write_atomic
    from ansible_collections.eagle3.trn2.plugins.module_utils.playbook_process import alive, controller
except ImportError:  # as a script's neighbour (compile_cache_ctl.py puts this directory on sys.path)
    from controller_io import write_atomic  # type: ignore[no-redef]
    from playbook_process import alive, controller  # type: ignore[no-redef]


def read_manifest(manifest: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(manifest).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def set_state(manifest: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Merge `fields` into the manifest with its owner (the ansible-playbook process that runs this) and the time;
    the file is replaced atomically by controller_io's write_atomic, as the controller's other records are."""
    manifest = Path(manifest)
    data = dict(read_manifest(manifest) or {})
    data.update(fields)
    data.update(owner=controller(), updated=round(time.time(), 1))
    manifest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(manifest), json.dumps(data, indent=1, sort_keys=True), 0o644)
    return data


FINISHED = ("shipped", "empty", "failed")


def _failed_since(failure: Path, data: dict[str, Any] | None) -> bool:
    try:
        failed_at = failure.stat().st_mtime
    except OSError:
        return False
    return data is None or failed_at >= float(data.get("updated", 0))


def wait(manifest: Path, profile: str, window: float, deadline: float, failure: Path) -> dict[str, Any]:
    began = time.monotonic()
    while True:
        data = read_manifest(manifest)
        state = (data or {}).get("state")
        if state not in FINISHED and _failed_since(failure, data):
            state = "failed"
        if data is not None and state not in FINISHED and not alive(data.get("owner") or {}):
            state = "gone"
        if state not in FINISHED and state != "gone" and time.time() >= deadline:
            state = "timeout"
        if state in FINISHED or state in ("gone", "timeout"):
            data = data or {}
            waited = round(time.monotonic() - began, 1)
            return {"done": True, "state": state, "key": data.get("key"), "material": data.get("material"),
                    "canary": data.get("canary"), "archive": data.get("archive"), "waited": waited,
                    "progress": f"compile cache of {profile}: the canary {data.get('canary')} is done ({state})"}
        if time.monotonic() - began >= window:
            break
        time.sleep(1)
    waited = round(time.monotonic() - began, 1)
    if data is None:
        what = "the canary has not started it yet"
    else:
        what = f"the canary {data.get('canary')} compiles it since {time.time() - float(data.get('updated', time.time())):.0f} s"
    return {"done": False, "state": state, "waited": waited, "canary": (data or {}).get("canary"),
            "progress": f"waiting for the compile cache of {profile}: {what}"}
