"""Training probe, run on the host: waits up to WINDOW seconds for the async training job to finish.

Usage: train_wait.py JOB_RESULTS_FILE LOG WINDOW. Prints {"finished": bool, "progress": line}, the line
the generator's last progress line ("[  12 s] target: step 26/240, loss 2.811") or "starting".
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any


def finished(job: str) -> bool:
    try:
        with open(job) as f:
            return bool(json.load(f).get("finished", 1))
    except (OSError, ValueError):
        return False  # not written yet, or being rewritten


def last_progress(log: str) -> str:
    try:
        with open(log, errors="replace") as f:
            lines = [line for line in f.read()[-4000:].splitlines() if line.startswith("[")]
    except OSError:
        lines = []
    return lines[-1] if lines else "starting"


def wait(job: str, log: str, window: float) -> dict[str, Any]:
    deadline = time.monotonic() + window
    while True:
        is_finished = finished(job)
        if is_finished or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    return {"finished": is_finished, "progress": "training the rehearsal models: " + last_progress(log)}


if __name__ == "__main__":
    print(json.dumps(wait(sys.argv[1], sys.argv[2], float(sys.argv[3]))))
