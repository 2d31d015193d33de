"""Set the state of the fleet's compile cache for one profile in its manifest on the controller (the canary's
announcements: compiling, shipped, empty, failed), in the task's own worker: no module process (each `command` of
compile_cache_ctl.py set cost about 0.3 s on the project's 2-core machine, docs/lab/overhead-2026-12.md). The
manifest and its owner record are plugins/module_utils/compile_cache/manifest.py's; the other hosts' wait reads it
(compile_cache/manifest.py wait, through roles/compile_cache/files/compile_cache_ctl.py). The manifest is the automation's bookkeeping, never a change;
check mode writes nothing.

    - eagle3.trn2.compile_cache_state: {manifest: /abs/run/compile-cache/eagle3.json, fields: {state: compiling}}
"""
from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.manifest import set_state


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("manifest", "fields"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        manifest, fields = self._task.args.get("manifest"), self._task.args.get("fields")
        if not isinstance(manifest, str) or not os.path.isabs(manifest):
            raise AnsibleActionFail(f"compile_cache_state: manifest must be an absolute path on the controller, got {manifest!r}")
        if not isinstance(fields, dict) or not fields:
            raise AnsibleActionFail(f"compile_cache_state: fields must be a non-empty mapping, got {fields!r}")
        if self._task.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: the manifest is not written")
            return result
        try:
            result["manifest"] = set_state(manifest, dict(fields))
        except OSError as exc:
            raise AnsibleActionFail(f"compile_cache_state: {manifest}: {exc.strerror or exc}") from exc
        result["changed"] = False
        return result
