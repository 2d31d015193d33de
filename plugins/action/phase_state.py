"""The rerun shortcut's controller side (a converged host's phase costs one call): resolve the phase's role inputs for
the host, digest them with the phase's code (plugins/module_utils/phase/phase_inputs.py), and hand the digest to the module
eagle3.trn2.phase_state on the host, which compares or records. One module call per host and phase; nothing else leaves
the controller.

An input that cannot be resolved outside its role (vllm_install_lock_dir's role_path) is digested as written: what
it names is part of the code digest.
"""
from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.phase.phase_inputs import (
    digest_of, input_digests, phase_inputs)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        try:
            names = phase_inputs(args.get("phase"))
        except ValueError as err:
            result.update(failed=True, msg=f"phase_state: {err}")
            return result
        values = {}
        for name in names:
            if name not in task_vars:
                continue
            try:
                values[name] = self._templar.template(task_vars[name])
            except AnsibleError:
                values[name] = ["as written", str(task_vars[name])]
        args["input_digests"] = input_digests(values, args["phase"])
        args["inputs"] = digest_of(args["input_digests"], args["phase"])
        result.update(self._execute_module(module_name="eagle3.trn2.phase_state", module_args=args,
                                           task_vars=task_vars))
        return result
