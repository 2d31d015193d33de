"""The benchmark window lock, run on the controller: at most one host of a run benchmarks at a time.

Usage: window_lock.py acquire LOCK HOST PROFILE WINDOW
       window_lock.py release LOCK HOST PROFILE
Where the hosts share one machine's cores (the rehearsal), two `vllm bench serve` windows at once slow
each other and the figures measure the contention (vllm_bench_exclusive_window). The lock is a file
created with O_EXCL on the controller (atomic on a local file system) holding its owner: host, profile and
the ansible-playbook process (PID and start time from /proc). A lock whose ansible-playbook process is gone
(a killed run) is stale and taken over; a lock of another run id is another file.

acquire tries for up to WINDOW seconds and prints one JSON object: "acquired", "waited" (seconds in this
call), "holder" (the owner it waited for, if any) and a "progress" line the play shows per window
(plugins/callback/eagle3_progress.py). release removes the lock only when this host and this
ansible-playbook process own it, and prints {"released": bool, "holder": ...}.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# The collection's plugins/module_utils, as the play resolved it (eagle3_layout's module_utils_dir): the tasks that run
# this script set EAGLE3_MODULE_UTILS.
if not os.environ.get("EAGLE3_MODULE_UTILS"):
    sys.exit("EAGLE3_MODULE_UTILS must name the collection's plugins/module_utils (roles/vllm_bench/tasks/*.yml)")
sys.path.insert(0, os.environ["EAGLE3_MODULE_UTILS"])
from playbook_process import alive, controller  # noqa: E402  (the owner record, shared with compile_cache_ctl.py)


def _read(lock: Path) -> tuple[dict[str, Any] | None, float]:
    """(owner or None when unreadable/being written, age of the lock file in seconds)."""
    try:
        age = time.time() - lock.stat().st_mtime
        return json.loads(lock.read_text() or "null"), age
    except FileNotFoundError:
        return None, -1.0
    except (OSError, ValueError):
        return None, 0.0


def acquire(lock: Path, host: str, profile: str, window: float) -> dict[str, Any]:
    me = dict(controller(), host=host, profile=profile, since=time.time())
    began, holder = time.monotonic(), None
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner, age = _read(lock)
            if owner is None and age < 0:
                continue  # released between the two calls
            if owner is None and age > 10:
                owner = {"host": "unknown (empty lock file)", "pid": -1, "start": None}
            if owner is not None:
                mine = owner.get("host") == host and owner.get("pid") == me["pid"] and owner.get("start") == me["start"]
                if mine or not alive(owner):
                    lock.unlink(missing_ok=True)  # ours from an earlier attempt, or its run is gone: take it over
                    continue
                holder = owner
            if time.monotonic() - began >= window:
                break
            time.sleep(0.5)
            continue
        with os.fdopen(fd, "w") as handle:
            json.dump(me, handle)
        waited = round(time.monotonic() - began, 1)
        return {"acquired": True, "waited": waited, "holder": holder,
                "progress": f"benchmark window taken for {profile} after {waited} s"}
    held = round(time.time() - float(holder.get("since", time.time())), 0) if holder else 0
    return {"acquired": False, "waited": round(time.monotonic() - began, 1), "holder": holder,
            "progress": f"waiting for the benchmark window ({profile}): {holder.get('host') if holder else '?'} "
                        f"benchmarks {holder.get('profile') if holder else '?'} since {held:.0f} s"}


def release(lock: Path, host: str, profile: str) -> dict[str, Any]:
    owner, _ = _read(lock)
    me = controller()
    if owner and owner.get("host") == host and owner.get("pid") == me["pid"] and owner.get("start") == me["start"]:
        lock.unlink(missing_ok=True)
        return {"released": True, "holder": owner}
    return {"released": False, "holder": owner}


def main(argv: list[str]) -> int:
    if len(argv) == 6 and argv[1] == "acquire":
        print(json.dumps(acquire(Path(argv[2]), argv[3], argv[4], float(argv[5]))))
        return 0
    if len(argv) == 5 and argv[1] == "release":
        print(json.dumps(release(Path(argv[2]), argv[3], argv[4])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
