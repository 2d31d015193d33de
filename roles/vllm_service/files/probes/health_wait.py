"""Readiness probe, run on the host: polls a unit's state and /health every 0.5 s for up to WINDOW seconds.

Usage: health_wait.py UNIT URL WINDOW SINCE TIMEOUT [journal]. Returns as soon as the server is ready or its unit
failed or restarted, printing one JSON object: the unit's ActiveState, SubState, NRestarts, MainPID, the
/health status ("health": 200 or the error's name) and a "progress" line (time since the start, the server's
last log line) that the play shows per window (plugins/callback/eagle3_progress.py). With "journal", a ready
server's journal since SINCE comes too ("journal", its lines as `journalctl -o cat` prints them): what the engine
resolved at this start, read in the same call; and its compile-time metrics ("compile_metrics": every sample of
/metrics whose name holds "compil", such as the Neuron plugin's, by name and labels; {} where the engine exposes none).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from typing import Any


def unit_state(unit: str) -> dict[str, Any]:
    show = subprocess.run(["systemctl", "show", unit, "-p", "ActiveState,SubState,NRestarts,MainPID"],
                          capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in show.splitlines() if "=" in line)


def health(url: str) -> Any:
    try:
        return urllib.request.urlopen(url + "/health", timeout=5).status
    except Exception as exc:  # any failure is a state to report, not an error of the probe
        return getattr(exc, "code", None) or type(exc).__name__


def done(state: dict[str, Any]) -> bool:
    return state["health"] == 200 or state.get("ActiveState") in ("failed", "inactive") or state.get("NRestarts", "0") != "0"


def last_line(unit: str, since: int) -> str | None:
    """The server's own last journal line since SINCE (systemd's notes about the unit are skipped)."""
    entries = subprocess.run(["journalctl", "-u", unit, "--since", "@%d" % since, "-n", "20", "-o", "json", "--no-pager"],
                             capture_output=True, text=True).stdout.splitlines()
    last = [str(e.get("MESSAGE", "")) for e in map(json.loads, entries) if e.get("SYSLOG_IDENTIFIER") != "systemd"]
    return last[-1] if last else None


def journal(unit: str, since: int) -> list[str]:
    """The unit's journal since SINCE, one message per line (journalctl -o cat)."""
    return subprocess.run(["journalctl", "-u", unit, "--since", "@%d" % since, "--no-pager", "-o", "cat"],
                          capture_output=True, text=True).stdout.splitlines()


def compile_metrics(url: str) -> dict[str, float]:
    """The samples of /metrics whose metric name holds "compil" (Prometheus text format), name{labels} -> value."""
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode("utf-8", "replace")
    except Exception:  # no metrics endpoint: nothing to record
        return {}
    out = {}
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        if line.startswith("#") or "compil" not in sample.split("{", 1)[0]:
            continue
        try:
            out[sample] = float(value)
        except ValueError:
            continue
    return out


def wait(unit: str, url: str, window: float, since: int, timeout: str, with_journal: bool = False) -> dict[str, Any]:
    deadline = time.monotonic() + window
    while True:
        state = unit_state(unit)
        state["health"] = health(url)
        if done(state) or time.monotonic() >= deadline:
            last = last_line(unit, since)
            state["progress"] = "%s starting: %d s of %s s, /health %s, last log: %s" % (
                unit, time.time() - since, timeout, state["health"], (last[:160] if last else "(none yet)"))
            if with_journal and state["health"] == 200:
                state["journal"] = journal(unit, since)
                state["compile_metrics"] = compile_metrics(url)
            return state
        time.sleep(0.5)


if __name__ == "__main__":
    print(json.dumps(wait(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5],
                          sys.argv[6:] == ["journal"])))
