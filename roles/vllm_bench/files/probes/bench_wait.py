"""Benchmark probe, run on the host: waits up to WINDOW seconds for an async job to finish.

Usage: bench_wait.py JOB_RESULTS_FILE LOG WINDOW SINCE LABEL. Prints {"finished": bool, "progress": line}, the
line naming the requests done so far (the last tqdm "n/N [" of the client's log) or "warming up".
"""
from __future__ import annotations

import json
import re
import sys
import time
from typing import Any


def finished(job: str) -> bool:
    try:
        with open(job) as f:
            return bool(json.load(f).get("finished", 1))
    except (OSError, ValueError):
        return False  # not written yet, or being rewritten


def requests_done(log: str) -> str:
    try:
        with open(log, errors="replace") as f:
            text = f.read()[-4000:]
    except OSError:
        text = ""
    bars = re.findall(r"(\d+)/(\d+) \[", text)
    return "%s/%s requests" % bars[-1] if bars else "warming up"


def wait(job: str, log: str, window: float, since: int, label: str) -> dict[str, Any]:
    deadline = time.monotonic() + window
    while True:
        is_finished = finished(job)
        if is_finished or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    return {"finished": is_finished, "progress": "%s benchmark: %s, %d s" % (label, requests_done(log), time.time() - since)}


if __name__ == "__main__":
    print(json.dumps(wait(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5])))
