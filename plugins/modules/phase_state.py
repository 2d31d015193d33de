#!/usr/bin/python
"""Compare a host phase with its record on the host, or record it (the rerun shortcut: an unchanged phase is skipped
after one call; plugins/module_utils/phase/phase_state.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: phase_state
short_description: Whether a host phase can be skipped because the host is as the phase left it; record it when it ends
description:
  - C(state=compare), at the start of a phase (one call per host) - fingerprints the I(paths) the phase manages and
    compares them and I(inputs) with the phase's record in I(state_dir). Returns C(skip) true only when
    I(shortcut) is true and both equal the record. When the phase is not skipped, its record and the records of
    every later phase (C(host) comes before C(service)) are dropped first, so a phase that then fails leaves no record
    and the next run runs it again, and a later phase, which runs too, has nothing left to compare.
  - C(state=recorded), after the phase succeeded - fingerprints the I(paths) again and writes the record (root only),
    unless the record already says the same.
  - The records are the automation's own bookkeeping, like a fact cache, and never count as a change of the host
    (changed is always false). Check mode writes and drops nothing.
  - The fingerprint covers what each path spec's kind reads (plugins/module_utils/phase/phase_state.py); secrets never enter
    the record in clear, only the controller's digest of the inputs.
options:
  phase: {description: The phase (host or service)., type: str, required: true, choices: [host, service]}
  inputs: {description: The controller's digest of the phase's role inputs and code., type: str, required: true}
  input_digests:
    description: A digest per role input and one for the code (key C(code)), to name what changed.
    type: dict
    default: {}
  paths: {description: The path specs the phase manages (see plugins/module_utils/phase/phase_state.py)., type: list, elements: dict, required: true}
  state: {description: compare (before the phase) or recorded (after it)., type: str, choices: [compare, recorded], default: compare}
  shortcut: {description: Whether an unchanged phase may be skipped (eagle3_rerun_shortcut)., type: bool, default: true}
  unused_because: {description: The C(why) when I(shortcut) is false., type: str, default: eagle3_rerun_shortcut is off}
  state_dir: {description: Where the records are kept (root only)., type: path, default: /var/lib/eagle3/state}
  run: {description: The run id written into the record., type: str, default: ""}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Compare the host with the host phase's record
  eagle3.trn2.phase_state:
    phase: host
    inputs: "{{ digest }}"
    paths: [{kind: file, path: /var/lib/dpkg/status}, {kind: tree, path: /var/lib/eagle3/models}]
  register: probe
"""

RETURN = r"""
skip: {description: Whether the phase can be skipped (state=compare)., type: bool, returned: always}
why: {description: Why it can or cannot (the paths that changed, or the run that left the host so)., type: str, returned: always}
record: {description: The record as it is (or would be) on the host., type: dict, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.phase.phase_state import (
    PHASES, check_specs, compare_on_host, record_on_host)


def main() -> None:
    module = AnsibleModule(argument_spec={
        "phase": {"type": "str", "required": True, "choices": list(PHASES)},
        "inputs": {"type": "str", "required": True},
        "input_digests": {"type": "dict", "default": {}},
        "paths": {"type": "list", "elements": "dict", "required": True},
        "state": {"type": "str", "choices": ["compare", "recorded"], "default": "compare"},
        "shortcut": {"type": "bool", "default": True},
        "unused_because": {"type": "str", "default": "eagle3_rerun_shortcut is off"},
        "state_dir": {"type": "path", "default": "/var/lib/eagle3/state"},
        "run": {"type": "str", "default": ""},
    }, supports_check_mode=True)
    params = module.params
    problems = check_specs(params["paths"])
    if problems:
        module.fail_json(msg="phase_state paths: " + "; ".join(problems))
    if params["state"] == "compare":
        module.exit_json(changed=False, **compare_on_host(
            params["state_dir"], params["phase"], params["inputs"], params["paths"], params["input_digests"],
            shortcut=params["shortcut"], unused_because=params["unused_because"], check=module.check_mode))
    module.exit_json(changed=False, **record_on_host(
        params["state_dir"], params["phase"], params["inputs"], params["paths"], params["input_digests"],
        run=params["run"], check=module.check_mode))


if __name__ == "__main__":
    main()
