"""The dead-man switch of a fleet host: a systemd timer that powers the host off at a deadline, unless a
phase of a run pushes the deadline forward first. On EC2 the instance is launched with instance-initiated shutdown
behaviour `terminate`, so the power-off ends its billing for good; on a rehearsal container it stops the container.

One description of the two units, used in both places they are written:
- at launch, by cloud-init from the instance's user data (`cloud_config`: provision's EC2 launch), so a controller
  that dies before the host phase still leaves an armed host;
- on every phase of a run, by the module eagle3.trn2.deadman (`units`), which pushes the deadline, or removes both.

The deadline is an absolute UTC time in the timer's `OnCalendar=` (`Persistent=true`: a deadline that passed while the
host was off fires at its next boot), so a reboot keeps it.
"""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone

UNIT_DIR = "/etc/systemd/system"
TIMER = "eagle3-deadman.timer"
SERVICE = "eagle3-deadman.service"
# What the switch runs at the deadline. systemd's own power-off: on EC2, with the launch's shutdown behaviour, a
# termination.
COMMAND = "/usr/bin/systemctl --no-block poweroff"
KEEP = f"sudo systemctl disable --now {TIMER}"
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
