"""Port probe, run on the host: is anything listening on a TCP port, and which processes hold the socket.

Usage: port_holders.py PORT [UNIT]. Prints {"listening": bool, "holders": [{"pid", "command"}], "started": bool}.
The listening sockets come from /proc/net/tcp{,6} (the whole network namespace); the holders from /proc/<pid>/fd.
With a shared network namespace (podman host network) a holder in another PID namespace shows as listening without
a visible holder. With UNIT, and only when nothing listens on PORT, the probe then restarts UNIT (`systemctl restart`,
as systemd_service's state restarted does) and says started: the check and the start in one call. A failed restart
exits with systemctl's status, its message on stderr.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

LISTEN = "0A"


def listening_inodes(port: int, tables: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> set[str]:
    inodes = set()
    for table in tables:
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def holders(inodes: set[str], proc: str = "/proc") -> list[dict[str, Any]]:
    found = []
    sockets = {"socket:[%s]" % i for i in inodes}
    for pid in (p for p in os.listdir(proc) if p.isdigit()) if inodes else ():
        try:
            links = {os.readlink("%s/%s/fd/%s" % (proc, pid, fd)) for fd in os.listdir("%s/%s/fd" % (proc, pid))}
            if sockets & links:
                with open("%s/%s/cmdline" % (proc, pid), "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                found.append({"pid": int(pid), "command": cmd.strip()[:200]})
        except OSError:
            continue
    return found


def probe(port: int) -> dict[str, Any]:
    inodes = listening_inodes(port)
    return {"listening": bool(inodes), "holders": holders(inodes)}


def check_and_start(port: int, unit: str | None) -> tuple[dict[str, Any], int]:
    """The probe, then (with a unit, and a free port) the unit's restart: (what to print, exit status)."""
    found = probe(port)
    found["started"] = False
    if unit is None or found["listening"]:
        return found, 0
    done = subprocess.run(["systemctl", "restart", unit], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr or "systemctl restart %s failed (status %d)\n" % (unit, done.returncode))
        return found, done.returncode
    found["started"] = True
    return found, 0


if __name__ == "__main__":
    shown, status = check_and_start(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps(shown))
    sys.exit(status)
