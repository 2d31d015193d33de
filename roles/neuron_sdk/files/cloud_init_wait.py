#!/usr/bin/env python3
"""Wait up to WINDOW seconds for cloud-init to finish the boot's configuration; print one JSON line.

A freshly launched EC2 instance runs cloud-init (user data, package updates), then apt-daily and unattended-upgrades:
they hold the dpkg lock for minutes, and the first apt task of a run fails on it. `cloud-init status --wait` blocks
until cloud-init is done (its exit status: 0 done, 1 error, 2 done with recoverable errors, cloud-init >= 23.4). Run
by a task that retries it until "done", so a long wait prints one progress line per window (the eagle3_progress
callback shows the "progress" text). Read only. Usage: cloud_init_wait.py WINDOW SINCE_EPOCH
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time


def main() -> int:
    window, since = float(sys.argv[1]), float(sys.argv[2])
    exe = shutil.which("cloud-init")
    waited = int(time.time() - since)
    if not exe:
        result = {"done": True, "rc": 0, "status": "absent", "progress": "no cloud-init on this host"}
    else:
        try:
            proc = subprocess.run([exe, "status", "--wait"], capture_output=True, text=True, timeout=window)
        except subprocess.TimeoutExpired:
            result = {"done": False, "rc": None, "status": "running",
                      "progress": f"cloud-init is still configuring the host ({waited + int(window)} s)"}
        else:
            lines = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("status:")]
            status = lines[-1].split(":", 1)[1].strip() if lines else "unknown"
            result = {"done": True, "rc": proc.returncode, "status": status,
                      "detail": (proc.stdout + proc.stderr).strip()[-600:],
                      "progress": f"cloud-init {status} after {int(time.time() - since)} s"}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
