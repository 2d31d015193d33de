"""Before a profile's start, on the controller in the task's worker: the key of the profile's compile cache, and where
the cache is (this host's marks, the controller's archive, S3), the canary's announcement that it compiles, and the
deadline of the other hosts' wait for it. The logic is plugins/module_utils/compile_cache/ (key.py, plan.py,
manifest.py); the S3 look-up is plugins/module_utils/s3/relay.py's, in this process (boto3).

    - eagle3.trn2.compile_cache_plan:
        deployed: {pip: {...}}        # the provenance probe's versions
        served: {...}                 # the profile's serve config
        env_text: "..."               # the unit's environment file
        accelerator: cpu
        profile: eagle3-k3
        look: {identity: {...}, marks: [...]}   # the host probe's look
        cache_dir: /abs/controller/compile-cache
        manifest: /abs/results/RUN/compile-cache/eagle3-k3.json
        canary: host-1
        wait: 1800
        s3: {bucket: "", prefix: eagle3/compile-cache, region: "", endpoint_url: ""}

Returns key, material, manifest, archive (the controller's archive path), object (its S3 key), here, on_controller,
looked_in_s3, s3_sha256, s3_reason, is_canary, announced and deadline (epoch seconds, 0: no wait). The manifest is the
automation's bookkeeping, never a change; check mode announces nothing.
"""
from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache import plan as _plan
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.key import (
    eagle3_compile_cache_key, eagle3_compile_cache_material)
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.manifest import set_state
from ansible_collections.eagle3.trn2.plugins.module_utils.s3 import relay

OPTIONS = ("deployed", "served", "env_text", "accelerator", "profile", "look", "cache_dir", "manifest", "canary", "wait",
           "s3")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(OPTIONS)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)  # an option outside OPTIONS is refused here, by name
        args = dict(self._task.args)
        missing = [name for name in OPTIONS if name not in args]
        if missing:
            raise AnsibleActionFail(f"compile_cache_plan: missing {', '.join(missing)}")
        for name in ("cache_dir", "manifest"):
            if not isinstance(args[name], str) or not os.path.isabs(args[name]):
                raise AnsibleActionFail(f"compile_cache_plan: {name} must be an absolute path on the controller, "
                                        f"got {args[name]!r}")
        look, s3 = args["look"] or {}, args["s3"] or {}
        try:
            material = eagle3_compile_cache_material(args["deployed"], args["served"], args["env_text"],
                                                     args["accelerator"], args["profile"], look.get("identity"))
        except ValueError as exc:
            raise AnsibleActionFail(f"compile_cache_plan: {exc}") from exc
        key = eagle3_compile_cache_key(material)
        host = task_vars.get("inventory_hostname")
        is_canary = host == args["canary"]
        archive = os.path.join(args["cache_dir"], f"{key}.tar.gz")
        obj = f"{str(s3.get('prefix') or '').strip('/')}/{key}.tar.gz".lstrip("/")
        here, on_controller = key in (look.get("marks") or []), os.path.exists(archive)
        looked = _plan.looks_in_s3(s3.get("bucket"), here, on_controller)
        found, reason = "", ""
        if looked:
            try:
                found, reason = relay.look(relay.client(s3.get("region", ""), s3.get("endpoint_url", "")), s3["bucket"], obj)
            except RuntimeError as exc:
                raise AnsibleActionFail(f"compile_cache_plan: {exc}") from exc
        announced = is_canary and not on_controller and not found and not self._task.check_mode
        if announced:
            set_state(args["manifest"], {"state": "compiling", "canary": host, "profile": args["profile"], "key": key,
                                         "material": material})
        result.update(changed=False, key=key, material=material, manifest=args["manifest"], archive=archive, object=obj,
                      here=here, on_controller=on_controller, looked_in_s3=looked, s3_sha256=found, s3_reason=reason,
                      is_canary=is_canary, announced=announced,
                      deadline=_plan.deadline(time.time(), args["wait"], is_canary, here, on_controller, found))
        return result
