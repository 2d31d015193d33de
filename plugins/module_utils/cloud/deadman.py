"""The dead-man switch of a fleet host: a systemd timer that powers the host off at a deadline, unless a
phase of a run pushes the deadline forward first. On EC2 the instance is launched with instance-initiated shutdown
behaviour `terminate`, so the power-off ends its billing for good; on a rehearsal container it stops the container.

One description of the two units, used in both places they are written:
- at launch, by cloud-init from the instance's user data (`cloud_config`: provision's EC2 launch), so a controller
  that dies before the host phase still leaves an armed host;
- on every phase of a run, by the module eagle3.trn2.deadman (`units`), which pushes the deadline, or removes both.

The deadline is an absolute UTC time in the timer's `OnCalendar=` (`Persistent=true`: a deadline that passed while the
host was off fires at its next boot), so a reboot keeps it.

What the module does on the host is `set_switch`: it reads the units, decides, writes or removes them and runs
systemctl through the callable it is given (the module's run_command), so it runs without Ansible too; a refusal is a
DeadmanError whose message is the module's msg.
"""
from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timezone

from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import write_atomic

UNIT_DIR = "/etc/systemd/system"
TIMER = "eagle3-deadman.timer"
SERVICE = "eagle3-deadman.service"
# What the switch runs at the deadline. systemd's own power-off: on EC2, with the launch's shutdown behaviour, a
# termination.
COMMAND = "/usr/bin/systemctl --no-block poweroff"
KEEP = f"sudo systemctl disable --now {TIMER}"
# How the host's commands are run: argv in, (rc, stdout, stderr) out, as AnsibleModule.run_command does.
Run = Callable[[list[str]], tuple[int, str, str]]
_CALENDAR = re.compile(r"^OnCalendar=(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC$", re.M)


def calendar(epoch: float) -> str:
    """systemd's calendar form of an epoch second, in UTC ("2026-12-06 23:30:00 UTC")."""
    return datetime.fromtimestamp(int(epoch), timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + " UTC"


def units(deadline: float) -> dict[str, str]:
    """The timer and the service, by file name, for a deadline (epoch seconds)."""
    return {
        SERVICE: ("[Unit]\n"
                  "Description=eagle3 dead-man switch: power this host off (on EC2: terminate it) when its run forgot it\n\n"
                  "[Service]\nType=oneshot\n"
                  f"ExecStart={COMMAND}\n"),
        TIMER: ("[Unit]\n"
                "Description=eagle3 dead-man switch deadline (each phase of a run pushes it; serving removes it)\n\n"
                "[Timer]\n"
                f"OnCalendar={calendar(deadline)}\n"
                "Persistent=true\nAccuracySec=1min\n"
                f"Unit={SERVICE}\n\n"
                "[Install]\nWantedBy=timers.target\n"),
    }


def deadline_of(timer_text: str | None) -> float | None:
    """The deadline (epoch seconds) a timer file of `units` holds; None for another file or none."""
    found = _CALENDAR.search(timer_text or "")
    if not found:
        return None
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def next_deadline(now: float, current: float | None, hours: float) -> float | None:
    """The deadline to write, or None to keep `current`: a host must have `hours` left from now; a deadline that leaves
    fewer is pushed to now + 1.5 x hours (rounded up to the minute), so a rerun soon after changes nothing."""
    if current is not None and current >= now + hours * 3600:
        return None
    return float(math.ceil((now + 1.5 * hours * 3600) / 60) * 60)


def cloud_config(deadline: float) -> str:
    """The user data that arms the switch at first boot (cloud-init's cloud-config: write_files, then runcmd)."""
    lines = ["#cloud-config", "# eagle3 dead-man switch (plugins/module_utils/cloud/deadman.py): armed at first boot", "write_files:"]
    for name, text in units(deadline).items():
        lines += [f"  - path: {UNIT_DIR}/{name}", "    permissions: '0644'", "    content: |"]
        lines += [f"      {line}" if line else "" for line in text.rstrip("\n").split("\n")]
    lines += ["runcmd:", "  - [systemctl, daemon-reload]", f"  - [systemctl, enable, --now, {TIMER}]"]
    return "\n".join(lines) + "\n"


class DeadmanError(Exception):
    """A refusal or a systemctl command that failed; the message says which and why."""


def read_unit(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def systemctl(run: Run, *args: str) -> None:
    rc, out, err = run(["systemctl", *args])
    if rc != 0:
        raise DeadmanError(f"systemctl {' '.join(args)} failed (rc {rc}): {(err or out).strip()}")


def set_switch(run: Run, state: str = "armed", hours: float = 3.0, serving_unit: str = "vllm-serve.service",
               check: bool = False, now: float | None = None, unit_dir: str = UNIT_DIR) -> dict:
    """The module's work and result: `state` armed pushes the deadline so that the host has `hours` left (from `now`,
    default the time), absent removes the switch, as does a host whose `serving_unit` is enabled. `check` changes
    nothing; `unit_dir` is where the units live (systemd's own by default)."""
    serving = run(["systemctl", "is-enabled", serving_unit])[1].strip() == "enabled"
    if serving:
        state = "absent"
    paths = {name: os.path.join(unit_dir, name) for name in (TIMER, SERVICE)}
    present = {name: read_unit(path) for name, path in paths.items()}
    active = run(["systemctl", "is-active", TIMER])[0] == 0
    result = {"command": COMMAND, "keep": KEEP, "serving": serving}
    if state == "absent":
        changed = active or any(text is not None for text in present.values())
        if changed and not check:
            if present[TIMER] is not None or active:
                run(["systemctl", "disable", "--now", TIMER])
            for path in paths.values():
                if os.path.exists(path):
                    os.remove(path)
            systemctl(run, "daemon-reload")
        return {"changed": changed, "armed": False, "deadline": "", "deadline_epoch": 0.0, **result}
    if hours <= 0:
        raise DeadmanError(f"hours must be more than 0 (got {hours:g})")
    current = deadline_of(present[TIMER])
    kept = current if active and present == units(current or 0) else None
    pushed = next_deadline(time.time() if now is None else now, kept, hours)
    deadline = kept if pushed is None else pushed
    if pushed is not None and not check:
        for name, text in units(deadline).items():
            write_atomic(paths[name], text, 0o644)
        systemctl(run, "daemon-reload")
        systemctl(run, "enable", TIMER)
        # restart: a running timer reads its new OnCalendar only when started again
        systemctl(run, "restart", TIMER)
    return {"changed": pushed is not None, "armed": True, "deadline": calendar(deadline), "deadline_epoch": deadline,
            **result}
