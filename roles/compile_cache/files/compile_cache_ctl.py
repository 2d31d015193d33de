"""The fleet's compile cache state on the controller, one manifest per run and profile (compile once per fleet: the
other hosts wait for, or take, what the canary compiled).

Usage: compile_cache_ctl.py wait MANIFEST PROFILE WINDOW DEADLINE CANARY_FAILURE
The canary host (the first host of the benchmark play) compiles each profile itself and announces it: the action
eagle3.trn2.compile_cache_state (plugins/module_utils/compile_cache_manifest.py) writes
{"state": "compiling", "canary": HOST, "key": KEY, "material": {...}} with the ansible-playbook process that runs it
(PID and start time, as window_lock.py records its owner), and later "shipped" (with the archive's name and size),
"empty" (nothing in the cache to ship) or "failed" (the profile failed on the canary). Every write replaces the file
atomically (a temporary file renamed over it).

The other hosts, before their first start of the profile, `wait` up to WINDOW seconds for a state other than
"compiling" and print one JSON object: "done" (the canary is finished with it: shipped, empty, failed, or gone;
or DEADLINE, epoch seconds, has passed: "timeout"; or the canary recorded a failure (CANARY_FAILURE, its
failure.json on the controller) newer than the manifest, or with no manifest: "failed"; the host then compiles itself),
"state", "key", "material", "canary", "archive", "waited" and a "progress" line the play shows per window
(plugins/callback/eagle3_progress.py). A canary whose ansible-playbook process is gone (a killed run) counts as
"gone"; no manifest yet means the canary has not reached the profile (still installing, or waiting for its own turn).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# The collection's plugins/module_utils, as the play resolved it (eagle3_layout's module_utils_dir): the task that runs
# this script sets EAGLE3_MODULE_UTILS.
if not os.environ.get("EAGLE3_MODULE_UTILS"):
    sys.exit("EAGLE3_MODULE_UTILS must name the collection's plugins/module_utils (roles/compile_cache/tasks/key.yml)")
sys.path.insert(0, os.environ["EAGLE3_MODULE_UTILS"])
from compile_cache_manifest import read_manifest as _read  # noqa: E402  (written by the action compile_cache_state)
from playbook_process import alive  # noqa: E402  (the same owner record as the window lock)

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
        data = _read(manifest)
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


def main(argv: list[str]) -> int:
    if len(argv) == 7 and argv[1] == "wait":
        print(json.dumps(wait(Path(argv[2]), argv[3], float(argv[4]), float(argv[5]), Path(argv[6]))))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
