"""Write, create, remove or move one file on the controller, in the action's own process (no module call).

The run's records on the controller (run.json, the completions, the timeline, the manifest, a result marked complete,
the compile cache's archive put in place, the wheelhouse's directory and constraints) were `copy`, `file` and
`command: mv` tasks delegated to localhost: each started a module process, about 0.4 s on the project's 2-core machine
(docs/lab/overhead-2026-12.md). This does the same in the worker that runs the task: the file's text replaced
atomically only when it differs (a rerun is changed=false), its mode put right, check mode writes nothing, --diff shows
the change. The semantics are plugins/module_utils/controller_io.py's settle().

    - eagle3.trn2.controller_file: {path: /abs/file, content: "text", mode: "0644"}   # state file (the default)
    - eagle3.trn2.controller_file: {path: /abs/dir, state: directory, mode: "0700"}
    - eagle3.trn2.controller_file: {path: /abs/file, state: absent}
    - eagle3.trn2.controller_file: {path: /abs/file, state: moved, src: /abs/file.part}
"""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import ControllerFileError, settle


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("path", "state", "content", "src", "mode"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args  # an option outside _VALID_ARGS is refused by name by ActionBase itself
        try:
            done = settle(args.get("path"), state=args.get("state", "file"), content=args.get("content"),
                          src=args.get("src"), mode=args.get("mode"), check=bool(self._task.check_mode))
        except ControllerFileError as exc:
            raise AnsibleActionFail(f"controller_file: {exc}") from exc
        except OSError as exc:
            raise AnsibleActionFail(f"controller_file: {args.get('path')}: {exc.strerror or exc}") from exc
        result.update(changed=done["changed"], path=args.get("path"))
        if self._task.diff and done["changed"]:
            result["diff"] = done["diff"]
        return result
