"""Relay a controller file to the hosts through S3: `put` and `look` on the controller in this worker (boto3, no module
process), `get` signs a download URL here and has the host download it itself (ansible.builtin.get_url, checked by its
sha256). The logic is plugins/module_utils/s3/relay.py; the options are documented in plugins/modules/s3_relay.py.

The signed URL carries the credentials' key id (and a session token with temporary credentials): it never reaches the
result, the log or a message, whatever the verbosity.
"""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema as _schema
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as _settings
from ansible_collections.eagle3.trn2.plugins.module_utils.s3 import relay


def _option(kind: str, expect: str, **more) -> dict:
    return {"type": kind, "x-expect": expect, **more}


# The shared definitions of the settings schema (bucket, region, endpoint), so the relay takes what the settings take.
SCHEMA = {"type": "object", "properties": {
    "op": _option("string", "look, put or get", enum=["look", "put", "get"]),
    "bucket": {"$ref": "#/$defs/bucket"},
    "object": _option("string", "an object key, not empty and not starting with /", pattern="[^/].*"),
    "region": {"$ref": "#/$defs/region"},
    "endpoint_url": {"$ref": "#/$defs/endpoint"},
    "src": _option("string", "put, an absolute path on the controller", pattern="/.*"),
    "put_once": _option("boolean", "true or false"),
    "dest": _option("string", "get, an absolute path on the host", pattern="/.*"),
    "sha256": _option("string", "get, the 64 hex digits the download must have", pattern="[0-9a-f]{64}"),
    "url_expiry": _option("integer", "seconds, 1..604800", minimum=1, maximum=604800),
    "what": _option("string", "what the file is, for messages"),
    "fallback": _option("string", "what else to do when a host cannot download it"),
}}
REQUIRED = {"look": ("bucket", "object"), "put": ("bucket", "object", "src"),
            "get": ("bucket", "object", "dest", "sha256")}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(SCHEMA["properties"])

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)  # an option outside SCHEMA is refused here, by name (_VALID_ARGS)
        args = {"put_once": False, "url_expiry": 3600, "what": "the file", "fallback": "", "region": "",
                "endpoint_url": "", **{k: v for k, v in self._task.args.items() if v is not None}}
        op = args.get("op")
        problems = _schema.problems(args, SCHEMA, "s3_relay", _settings.schema()["$defs"])
        problems += [f"s3_relay.{name} is required for op {op}" for name in REQUIRED.get(op, ()) if not args.get(name)]
        if problems:
            raise AnsibleActionFail("; ".join(problems))
        try:
            s3 = relay.client(args["region"], args["endpoint_url"])
        except RuntimeError as exc:
            raise AnsibleActionFail(f"s3_relay: {exc}") from exc
        where = f"s3://{args['bucket']}/{args['object']}"
        try:
            result.update(self._op(s3, op, args, where, task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _op(self, s3, op: str, args: dict, where: str, task_vars) -> dict:
        if op == "look":
            found, reason = relay.look(s3, args["bucket"], args["object"])
            return {"changed": False, "found_sha256": found, "reason": reason}
        if op == "put":
            try:
                put = relay.put(s3, args["bucket"], args["object"], args["src"], args["put_once"], self._task.check_mode)
            except Exception as exc:  # botocore's and the transfer manager's errors, and a missing src
                raise AnsibleActionFail(f"putting {args['what']} in {where} failed: {relay.without_urls(str(exc))}") from exc
            return {"changed": put["uploaded"], "sha256": put["sha256"], "reason": put["reason"]}
        return self._get(s3, args, where, task_vars)

    def _get(self, s3, args: dict, where: str, task_vars) -> dict:
        fallback = f"; or {args['fallback']}" if args["fallback"] else ""
        host = task_vars.get("inventory_hostname")
        try:
            url = relay.sign(s3, args["bucket"], args["object"], args["url_expiry"])
        except Exception as exc:
            raise AnsibleActionFail(
                f"signing a download URL for {args['what']} {where} on {host} failed: {relay.without_urls(str(exc))}. "
                f"The controller could not sign it (are its credentials there?){fallback}.") from exc
        got = self._execute_module(
            module_name="ansible.builtin.get_url", task_vars=task_vars,
            module_args={"url": url, "dest": args["dest"], "checksum": f"sha256:{args['sha256']}", "owner": "root",
                         "group": "root", "mode": "0600", "timeout": 60})
        if got.get("failed"):
            status = got.get("status_code", -1)
            http = f" (HTTP {status}: {got.get('response', '')})" if isinstance(status, int) and status > 0 else ""
            advice = ("The object is gone or unreadable (is it there, and do the controller's credentials read the bucket?)"
                      if status in (403, 404) else "The host must reach S3 (an S3 VPC endpoint or a route to the internet)")
            raise AnsibleActionFail(relay.without_urls(
                f"downloading {args['what']} {where} on {host} failed: {got.get('msg', 'no message')}{http}. "
                f"{advice}{fallback}."))
        # Only what the play needs: the module's own result carries the signed URL (url, invocation).
        return {"changed": bool(got.get("changed")), "dest": got.get("dest"), "checksum_dest": got.get("checksum_dest")}
