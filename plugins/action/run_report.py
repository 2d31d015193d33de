"""Make one run's report on the controller: read the run directory, validate every result file, compare, check
parity, aggregate and gate (the report engine, plugins/module_utils/report/engine.py), with named options.

Runs in ansible-playbook's worker on the controller, no module; the run directory is read with the eagle3_run
lookup's reader. A report that cannot be made fails the task with the engine's own words, "the report could not be
made from FILE: REASON" (bench_report's rescue names that file in every report file of the run).
"""
from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema as _schema


def _option(kind: str, expect: str, **more) -> dict:
    """An option's schema: its JSON type (or null, for an option given empty) and what the refusal says it must be."""
    return {"type": [kind, "null"], "x-expect": expect, **more}


# The options, checked by the project's shared validator (plugins/module_utils/settings/schema.py: strict types, a refusal
# per option that names it).
SCHEMA = {"type": "object", "properties": {
    "dir": _option("string", "the run directory, an absolute path"),
    "hosts": _option("array", "a list of host names", items={"type": "string"}),
    "gates": _option("object", "the gate settings (a mapping)"),
    "reference": _option("object", "the reference results (a mapping, {} for none)"),
    "baseline": _option("string", "the baseline profile's name"),
    "outlier_tolerance": _option("number", "a number"),
    "run_id": _option("string", "the run id"),
    "price": _option("object", "the instance price (a mapping)"),
    "serve": _option("string", "none, best or a profile name"),
    "band_key": _option("object", "the acceptance band key (a mapping)"),
    "bands": _option("array", "a list of acceptance bands", items={"type": "object"}),
}}
REQUIRED = ("dir", "run_id")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(SCHEMA["properties"])

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)  # an option outside SCHEMA is refused here, by name (_VALID_ARGS)
        args = dict(self._task.args)
        problems = [f"run_report.{name} is required" for name in REQUIRED if args.get(name) in (None, "")]
        problems += _schema.problems(args, SCHEMA, "run_report")
        if problems:
            raise AnsibleActionFail("; ".join(problems))
        given = {name: value for name, value in args.items() if name != "dir"}
        try:
            report = eagle3_report(read_run(args["dir"]), **given)
        except AnsibleFilterError as exc:  # the engine's "the report could not be made from FILE: REASON"
            raise AnsibleActionFail(str(exc.message)) from exc
        result.update(changed=False, report=report)
        return result
