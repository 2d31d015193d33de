"""Records every AWS API operation the project's Ansible runs make, for the IAM policy check (the policy must allow
every one of them, and moto cannot evaluate all of it).

Put on PYTHONPATH by molecule/ec2/molecule.yml with EAGLE3_AWS_CALLS naming the log: Python imports this file at
start-up in every process of the scenario (ansible-playbook, ansible-inventory, each module's AnsiballZ process, the
async wrapper's). When a process imports botocore.client, BaseClient._make_api_call (the one place every boto3 client
call goes through) is wrapped to append "<signing name> <Operation> <program>" to the log. Calls of other programs
(the verifier's own boto3 assertions, moto_server) are not the project's: only Ansible's processes are recorded.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_LOG = os.environ.get("EAGLE3_AWS_CALLS")


def _ours() -> bool:
    """Ansible's own processes: its commands, a module's AnsiballZ file, or a module piped in (pipelining: no name).
    Decided at start-up, from the command line the process started with: a module's wrapper later sets sys.argv to
    the module's own path."""
    name = os.path.basename(sys.argv[0] if getattr(sys, "argv", None) else "")
    return name in ("", "-") or name.startswith(("AnsiballZ_", "ansible", "async_wrapper"))


_OURS = _ours()
_PROGRAM = os.path.basename(sys.argv[0]) if getattr(sys, "argv", None) else ""


def _patch(client_module) -> None:
    original = client_module.BaseClient._make_api_call

    def _make_api_call(self, operation_name, api_params):
        if _OURS:
            with open(_LOG, "a", encoding="utf-8") as log:
                log.write(f"{self.meta.service_model.signing_name} {operation_name} {_PROGRAM or '-'}\n")
        return original(self, operation_name, api_params)

    client_module.BaseClient._make_api_call = _make_api_call


class _WhenBotocoreClientLoads(importlib.abc.MetaPathFinder):
    """Patches botocore.client right after it is imported (no import cost for processes that never use it)."""

    def find_spec(self, name, path, target=None):
        if name != "botocore.client":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if _LOG and _OURS:
    sys.meta_path.insert(0, _WhenBotocoreClientLoads())
