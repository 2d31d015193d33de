"""Port probe, run on the host: is anything listening on a TCP port, and which processes hold the socket.

Usage: port_holders.py PORT. Prints {"listening": bool, "holders": [{"pid", "command"}]}. The listening sockets
come from /proc/net/tcp{,6} (the whole network namespace); the holders from /proc/<pid>/fd. With a shared
network namespace (podman host network) a holder in another PID namespace shows as listening without a
visible holder.
"""
from __future__ import annotations

import json
import os
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


if __name__ == "__main__":
    print(json.dumps(probe(int(sys.argv[1]))))
