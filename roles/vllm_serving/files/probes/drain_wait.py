"""Drain probe, run on the host: waits until the server has no request running or waiting, for up to TIMEOUT s.

Usage: drain_wait.py URL TIMEOUT. Reads vLLM's /metrics (open without the API key) every 0.5 s and sums the
gauges vllm:num_requests_running and vllm:num_requests_waiting over every engine. Prints one JSON object:
"drained" (true when both reached 0, or when nothing answers: no server, nothing to drain), "running",
"waiting", "waited_s" and "answered" (whether /metrics answered at all).
"""
from __future__ import annotations

import json
import sys
import time
import urllib.request

GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def in_flight(text: str) -> dict[str, float]:
    """Sum of each gauge's samples (one per engine / model label set) in Prometheus text."""
    totals = {g: 0.0 for g in GAUGES}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals and not line.startswith("#"):
            totals[name] += float(line.rsplit(" ", 1)[-1])
    return totals


def main(url: str, timeout: float) -> dict[str, object]:
    start = time.monotonic()
    state: dict[str, object] = {"drained": True, "running": 0, "waiting": 0, "answered": False}
    while True:
        try:
            text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
        except Exception:  # no server answering: nothing is in flight there
            break
        totals = in_flight(text)
        state.update(answered=True, running=totals[GAUGES[0]], waiting=totals[GAUGES[1]],
                     drained=totals[GAUGES[0]] + totals[GAUGES[1]] == 0)
        if state["drained"] or time.monotonic() - start >= timeout:
            break
        time.sleep(0.5)
    state["waited_s"] = round(time.monotonic() - start, 1)
    return state


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], float(sys.argv[2]))))
