"""One run's report from the options of the action eagle3.trn2.run_report: the options checked by the project's shared
validator, the run directory read (plugins/module_utils/results/run_dir.py) and the report engine run (engine.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleActionFail, AnsibleFilterError
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


def run_report(options: Mapping[str, Any]) -> dict[str, Any]:
    """The report of the run directory options["dir"], the other options given to the engine by name; an option of a
    wrong type, a missing one, or a report that could not be made is refused (AnsibleActionFail)."""
    args = dict(options)
    problems = [f"run_report.{name} is required" for name in REQUIRED if args.get(name) in (None, "")]
    problems += _schema.problems(args, SCHEMA, "run_report")
    if problems:
        raise AnsibleActionFail("; ".join(problems))
    given = {name: value for name, value in args.items() if name != "dir"}
    try:
        return eagle3_report(read_run(args["dir"]), **given)
    except AnsibleFilterError as exc:  # the engine's "the report could not be made from FILE: REASON"
        raise AnsibleActionFail(str(exc.message)) from exc
