"""ExecStop of the vLLM units: SIGTERM to the server, then wait until every process of the unit has exited.

usage: eagle3_stop.py TIMEOUT [MAINPID]   (the unit: ExecStop=... eagle3_stop.py <TimeoutStopSec> $MAINPID)

Why not leave the stop to systemd (KillMode=mixed: SIGTERM to the main process, SIGKILL to what is left): vLLM's API
server exits 0.3 s after SIGTERM, but a child of it (multiprocessing's resource tracker, which ignores SIGTERM and exits
when its parent's pipe closes) is often still there at that instant. systemd then SIGKILLs it and waits for the unit's
cgroup to empty. Where systemd runs in a container on a cgroup-v1 host (the rehearsal's podman hosts) that notification
never comes: every stop waited out TimeoutStopSec and ended as `Result=timeout`, the unit `failed`
(journal: "Processes still around after final SIGKILL. Entering failed mode."). Waiting here, in ExecStop, until the
cgroup is empty lets the children finish their own cleanup, and systemd finds nothing left to kill: the stop ends as
soon as the server is gone, `Result=success`, on every cgroup version.

Bounded: after TIMEOUT - 1 s (at least 1 s) every process still in the unit gets SIGKILL, as systemd would give it
at TimeoutStopSec, so a server that ignores SIGTERM is stopped no later than without this script. The processes are
read from the unit's own cgroup (this script runs in it): cgroup v2 /sys/fs/cgroup/<path>/cgroup.procs, v1
/sys/fs/cgroup/systemd/<path>/cgroup.procs. Outside a .service cgroup holding MAINPID (no readable cgroup, or run by
hand) it waits for the main process only and kills nothing else.
Runs as the unit's user, standard library only.
"""
from __future__ import annotations

import os
import signal
import sys
import time

POLL_S = 0.05


def cgroup_procs_file() -> str | None:
    """The cgroup.procs file of the cgroup this process (ExecStop, in the unit's cgroup) belongs to."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        found[controllers] = path
    # v1 (and hybrid: systemd tracks units in its named hierarchy), then v2.
    for controllers, base in (("name=systemd", "/sys/fs/cgroup/systemd"), ("", "/sys/fs/cgroup/unified"), ("", "/sys/fs/cgroup")):
        # A service's own cgroup only: run by hand from a shell, it would otherwise wait for (and kill) the session.
        if controllers in found and found[controllers].endswith(".service"):
            candidate = f"{base}{found[controllers]}/cgroup.procs"
            if os.path.exists(candidate):
                return candidate
    return None


def others(procs_file: str | None, main: int) -> list[int]:
    """Every process of the unit but this one (the main process alone without a cgroup to read)."""
    if procs_file is not None:
        try:
            with open(procs_file, encoding="ascii") as f:
                return [p for p in map(int, f.read().split()) if p != os.getpid()]
        except OSError:
            pass
    return [main] if main > 0 and alive(main) else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return True


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    timeout = float(argv[1])
    server = int(argv[2]) if len(argv) == 3 and argv[2] else 0  # $MAINPID is empty when systemd has none
    procs_file = cgroup_procs_file()
    if procs_file is not None and server > 0 and server not in others(procs_file, 0):
        procs_file = None  # not the server's unit: wait for the server alone
    if server > 0:
        try:
            os.kill(server, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + max(timeout - 1, 1)
    started = time.monotonic()
    while (left := others(procs_file, server)) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if left:
        print(f"eagle3_stop: {len(left)} process(es) still running after {time.monotonic() - started:.1f} s, SIGKILL: "
              + " ".join(map(str, left)), flush=True)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        end = time.monotonic() + 1
        while others(procs_file, server) and time.monotonic() < end:
            time.sleep(POLL_S)
    else:
        print(f"eagle3_stop: every process of the unit exited {time.monotonic() - started:.2f} s after SIGTERM", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
