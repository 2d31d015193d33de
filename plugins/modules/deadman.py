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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import deadman as D


def main() -> None:
    module = AnsibleModule(argument_spec={"state": {"type": "str", "choices": ["armed", "absent"], "default": "armed"},
                                          "hours": {"type": "float", "default": 3.0},
                                          "serving_unit": {"type": "str", "default": "vllm-serve.service"}},
                           supports_check_mode=True)
    try:
        result = D.set_switch(module.run_command, module.params["state"], module.params["hours"],
                              module.params["serving_unit"], check=module.check_mode)
    except D.DeadmanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
