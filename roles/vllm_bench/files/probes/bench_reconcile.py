"""Reconcile probe, run on the host before a benchmarking pass stops or starts any server, so that a client or server
left over by a killed controller never runs beside (and skews) the next measurement.

Usage:
  bench_reconcile.py reconcile PREFIX DIR NAME...   stop every benchmark client still running (transient units
      PREFIX*.service, vllm_bench starts each `vllm bench serve` as one: a controller that was interrupted leaves it
      running), then read each result file NAME of DIR. Prints {"stopped": [unit, ...], "files": {NAME: {"text": str,
      "mtime": float}}} (a file that is not there is left out). A client is stopped before any server is: one left
      running would measure a server the pass is about to stop, and write a result with failed requests.
  bench_reconcile.py quarantine DIR STAMP JSON       move each {"name", "reason"} of the JSON list from DIR into
      DIR/quarantine/ as NAME.STAMP beside NAME.STAMP.why.json (kept, never read as a result). Prints the moved paths.
With --check before the action, nothing is stopped or moved; what would be is printed the same way.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

ACTIVE = ("active", "activating", "deactivating", "reloading")


def running_units(prefix: str) -> list[str]:
    """The PREFIX*.service units systemd has loaded in a running state."""
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "--type=service",
                          f"{prefix}*.service"], capture_output=True, text=True, check=False).stdout
    units = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].startswith(prefix) and fields[2] in ACTIVE:
            units.append(fields[0])
    return units


def reconcile(prefix: str, directory: str, names: list[str], check: bool = False) -> dict[str, Any]:
    stopped = running_units(prefix)
    if stopped and not check:
        subprocess.run(["systemctl", "stop", *stopped], check=True)
    files = {}
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                files[name] = {"text": f.read(), "mtime": os.stat(path).st_mtime}
        except FileNotFoundError:
            continue
    return {"stopped": stopped, "files": files}


def quarantine(directory: str, stamp: str, items: list[dict[str, str]], check: bool = False) -> list[str]:
    target = os.path.join(directory, "quarantine")
    moved = []
    for item in items:
        name = os.path.basename(item["name"])
        source = os.path.join(directory, name)
        if not os.path.exists(source):
            continue
        kept = os.path.join(target, f"{name}.{stamp}")
        moved.append(kept)
        if check:
            continue
        os.makedirs(target, mode=0o755, exist_ok=True)
        os.replace(source, kept)
        with open(f"{kept}.why.json", "w", encoding="utf-8") as f:
            json.dump({"file": name, "reason": item["reason"], "phase": "host", "when": stamp}, f, indent=2)
            f.write("\n")
    return moved


def main(argv: list[str]) -> int:
    check = bool(argv) and argv[0] == "--check"
    args = argv[1:] if check else argv
    if len(args) >= 3 and args[0] == "reconcile":
        print(json.dumps(reconcile(args[1], args[2], args[3:], check)))
        return 0
    if len(args) == 4 and args[0] == "quarantine":
        print(json.dumps(quarantine(args[1], args[2], json.loads(args[3]), check)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
