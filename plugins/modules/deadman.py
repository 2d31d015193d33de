#!/usr/bin/python
"""Arm, push or remove a host's dead-man switch (plugins/module_utils/cloud/deadman.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: deadman
short_description: A fleet host's dead-man switch - a systemd timer that powers it off at a deadline
description:
  - C(state=armed) - the host must have I(hours) left before its switch fires. A deadline that leaves fewer (or none,
    or a timer that is not active) is pushed to now + 1.5 x I(hours), the timer and its service written to
    /etc/systemd/system and the timer enabled and started; a deadline that leaves enough is kept (not changed), so a
    rerun soon after changes nothing.
  - A host whose I(serving_unit) is enabled serves, and is kept until it is taken down - C(state=armed) leaves it
    without a switch (removing one it finds), so a rerun of a serving fleet neither arms nor removes anything.
  - C(state=absent) - the timer stopped and disabled and both units removed (serving, or the switch turned off).
  - At the deadline the service runs C(systemctl --no-block poweroff); an EC2 instance launched with instance-initiated
    shutdown behaviour terminate (provision does so while the switch is on) then terminates.
  - Check mode reports what would change and changes nothing.
options:
  state: {description: armed or absent., type: str, choices: [armed, absent], default: armed}
  hours: {description: The time (hours) the host must have left (state=armed)., type: float, default: 3.0}
  serving_unit: {description: The serving unit; enabled, it keeps the host without a switch., type: str, default: vllm-serve.service}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Push the dead-man switch so that the host has the run's length left
  eagle3.trn2.deadman:
    hours: 3
  register: switch
"""

RETURN = r"""
armed: {description: Whether the switch is (or would be) armed after the call., type: bool, returned: always}
serving: {description: Whether the host serves (its serving unit is enabled), which keeps it without a switch., type: bool, returned: always}
deadline: {description: When the host powers itself off, UTC ("2026-12-06 23:30:00 UTC"); empty when disarmed., type: str, returned: always}
deadline_epoch: {description: The same as epoch seconds; 0 when disarmed., type: float, returned: always}
command: {description: What the switch runs at the deadline., type: str, returned: always}
keep: {description: The command that keeps the host (disarms the switch on it)., type: str, returned: always}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import deadman as D


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _systemctl(module: AnsibleModule, *args: str) -> None:
    rc, out, err = module.run_command(["systemctl", *args])
    if rc != 0:
        module.fail_json(msg=f"systemctl {' '.join(args)} failed (rc {rc}): {(err or out).strip()}")


def main() -> None:
    module = AnsibleModule(argument_spec={"state": {"type": "str", "choices": ["armed", "absent"], "default": "armed"},
                                          "hours": {"type": "float", "default": 3.0},
                                          "serving_unit": {"type": "str", "default": "vllm-serve.service"}},
                           supports_check_mode=True)
    state, hours = module.params["state"], module.params["hours"]
    serving = module.run_command(["systemctl", "is-enabled", module.params["serving_unit"]])[1].strip() == "enabled"
    if serving:
        state = "absent"
    paths = {name: os.path.join(D.UNIT_DIR, name) for name in (D.TIMER, D.SERVICE)}
    present = {name: _read(path) for name, path in paths.items()}
    active = module.run_command(["systemctl", "is-active", D.TIMER])[0] == 0
    result = {"command": D.COMMAND, "keep": D.KEEP, "serving": serving}
    if state == "absent":
        changed = active or any(text is not None for text in present.values())
        if changed and not module.check_mode:
            if present[D.TIMER] is not None or active:
                module.run_command(["systemctl", "disable", "--now", D.TIMER])
            for path in paths.values():
                if os.path.exists(path):
                    os.remove(path)
            _systemctl(module, "daemon-reload")
        module.exit_json(changed=changed, armed=False, deadline="", deadline_epoch=0.0, **result)
    if hours <= 0:
        module.fail_json(msg=f"hours must be more than 0 (got {hours:g})")
    current = D.deadline_of(present[D.TIMER])
    kept = current if active and present == D.units(current or 0) else None
    pushed = D.next_deadline(time.time(), kept, hours)
    deadline = kept if pushed is None else pushed
    if pushed is not None and not module.check_mode:
        for name, text in D.units(deadline).items():
            with open(paths[name] + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(paths[name] + ".tmp", 0o644)
            os.replace(paths[name] + ".tmp", paths[name])
        _systemctl(module, "daemon-reload")
        _systemctl(module, "enable", D.TIMER)
        # restart: a running timer reads its new OnCalendar only when started again
        _systemctl(module, "restart", D.TIMER)
    module.exit_json(changed=pushed is not None, armed=True, deadline=D.calendar(deadline), deadline_epoch=deadline, **result)


if __name__ == "__main__":
    main()
