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
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema as _schema
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as _settings


def _option(kind, expect: str, **more) -> dict:
    return {"type": kind, "x-expect": expect, **more}


# Every option is required. The S3 location takes the settings schema's own definitions (bucket, prefix, region,
# endpoint); env_text is the unit's environment file, lines by design (x-multiline: the control-character rule holds
# for every other option).
SCHEMA = {"type": "object", "required": ["deployed", "served", "env_text", "accelerator", "profile", "look", "cache_dir",
                                         "manifest", "canary", "wait", "s3"], "properties": {
    "deployed": _option("object", "the provenance probe's versions (a mapping)"),
    "served": _option("object", "the profile's serve config (a mapping)"),
    "env_text": _option("string", "the unit's environment file (text)", **{"x-multiline": True}),
    "accelerator": _option("string", "cpu or neuron", enum=["cpu", "neuron"]),
    "profile": _option("string", "a profile name, not empty", minLength=1),
    "look": _option(["object", "null"], "the host probe's look (a mapping)"),
    "cache_dir": _option("string", "an absolute path on the controller", pattern="/.*"),
    "manifest": _option("string", "an absolute path on the controller", pattern="/.*"),
    "canary": _option("string", "the canary's host name, not empty", minLength=1),
    "wait": _option("integer", "seconds, 0..86400", minimum=0, maximum=86400),
    "s3": {"type": ["object", "null"], "x-expect": "the S3 location (bucket, prefix, region, endpoint_url)",
           "additionalProperties": False, "properties": {
               "bucket": {"$ref": "#/$defs/bucket"}, "prefix": {"$ref": "#/$defs/prefix"},
               "region": {"$ref": "#/$defs/region"}, "endpoint_url": {"$ref": "#/$defs/endpoint"}}},
}}
OPTIONS = tuple(SCHEMA["properties"])


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(OPTIONS)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)  # an option outside OPTIONS is refused here, by name
        args = dict(self._task.args)
        problems = _schema.problems(args, SCHEMA, "compile_cache_plan", _settings.schema()["$defs"])
        if problems:
            raise AnsibleActionFail("; ".join(problems))
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
