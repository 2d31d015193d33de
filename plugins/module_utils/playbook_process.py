"""The ansible-playbook process a controller-side helper runs under, and whether a recorded one still runs.

Shared by the controller's helpers that record an owner (roles/vllm_bench/files/window_lock.py, the benchmark window;
roles/compile_cache/files/compile_cache_ctl.py, the canary's manifest): a record whose ansible-playbook process is gone
(a killed run) is stale. Plain Python, no Ansible import: the helpers run as scripts with the collection's
plugins/module_utils on their path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def process_stat(pid: int) -> tuple[int, str, str] | None:
    """(parent PID, start time in clock ticks, command line) of a process, None when it is gone or /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), fields[19], cmdline


def controller() -> dict[str, Any]:
    """The ansible-playbook process this task belongs to: the topmost ancestor running ansible-playbook
    (its task workers are forks of it, with the same command line)."""
    found: dict[str, Any] = {"pid": None, "start": None}
    pid = os.getppid()
    while pid > 1:
        info = process_stat(pid)
        if info is None:
            break
        parent, start, cmdline = info
        if "ansible-playbook" in cmdline or "ansible-runner" in cmdline:
            found = {"pid": pid, "start": start}
        pid = parent
    return found


def alive(owner: dict[str, Any]) -> bool:
    """Is the owner's ansible-playbook process still running? Unknown owners count as alive."""
    if not owner.get("pid"):
        return True
    info = process_stat(int(owner["pid"]))
    return info is not None and info[1] == owner.get("start")
