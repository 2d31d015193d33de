"""Waiting on an async job on the host: whether it has finished (its async_wrapper results file), its progress read
from the end of its log, and its exit status, message and last log lines once it has (the module eagle3.trn2.job_wait)."""
from __future__ import annotations

import json
import re
import time

TAIL = 4000  # bytes of the log read: its last progress line is near the end
TAIL_LINES_BYTES = 64000  # bytes read for the log's last lines (tail): vllm bench serve's summary is about 2 KB


def job_result(results_file: str) -> dict | None:
    """The results file once the job has finished (async_wrapper writes the module's own result there), else None.

    async_wrapper first writes {"started": true, "finished": false, ...}, then replaces it with the module's result,
    which has no "started" key (ansible/modules/async_wrapper.py, jwrite; async_status reads it the same way)."""
    try:
        with open(results_file) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None  # not written yet, or being rewritten by async_wrapper
    return data if data.get("finished", 1) else None


def finished(results_file: str) -> bool:
    return job_result(results_file) is not None


def tail_text(path: str, size: int) -> str | None:
    """The last `size` bytes of a file as text, None when it cannot be read (not written yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - size))
            return f.read().decode(errors="replace")
    except OSError:
        return None


def last_lines(log: str, count: int) -> list[str]:
    text = tail_text(log, TAIL_LINES_BYTES)
    if text is None or count <= 0:
        return []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[-count:]


def measured(log: str, measure: str) -> str | None:
    text = tail_text(log, TAIL)
    if text is None:
        return None
    if measure == "requests":
        bars = re.findall(r"(\d+)/(\d+) \[", text)
        return "%s/%s requests" % bars[-1] if bars else None
    lines = [line for line in text.splitlines() if line.startswith("[")]
    return lines[-1] if lines else None


def wait(results_file: str, log: str, window: float, label: str, measure: str, idle: str,
         since: int | None = None, tail: int = 0) -> dict:
    deadline = time.monotonic() + window
    while True:
        result = job_result(results_file)
        if result is not None or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    progress = "%s: %s" % (label, measured(log, measure) or idle)
    if since is not None:
        progress += ", %d s" % (time.time() - since)
    if result is None:
        return {"finished": False, "progress": progress}
    rc = result.get("rc")
    return {"finished": True, "progress": progress, "job_rc": rc if isinstance(rc, int) else None,
            "job_msg": str(result.get("msg") or ""), "log_tail": last_lines(log, tail)}
