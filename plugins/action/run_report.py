"""Make one run's report on the controller: read the run directory, validate every result file, compare, check
parity, aggregate and gate (the report engine, plugins/filter/report.py), with named options.

Runs in ansible-playbook's worker on the controller, no module; the run directory is read with the eagle3_run
lookup's reader. A report that cannot be made fails the task with the engine's own words, "the report could not be
made from FILE: REASON" (bench_report's rescue names that file in every report file of the run).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.filter.report import eagle3_report
from ansible_collections.eagle3.trn2.plugins.lookup.eagle3_run import read_run

# option -> (the types it takes, what the error says it must be)
OPTIONS: dict[str, tuple[tuple[type, ...], str]] = {
    "dir": ((str,), "the run directory, an absolute path"),
    "hosts": ((Sequence,), "a list of host names"),
    "gates": ((Mapping,), "the gate settings (a mapping)"),
    "reference": ((Mapping,), "the reference results (a mapping, {} for none)"),
    "baseline": ((str,), "the baseline profile's name"),
    "outlier_tolerance": ((int, float), "a number"),
    "run_id": ((str,), "the run id"),
    "price": ((Mapping,), "the instance price (a mapping)"),
    "serve": ((str,), "none, best or a profile name"),
    "band_key": ((Mapping,), "the acceptance band key (a mapping)"),
    "bands": ((Sequence,), "a list of acceptance bands"),
}
REQUIRED = ("dir", "run_id")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(OPTIONS)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        problems = [f"unknown option {name}" for name in sorted(set(args) - set(OPTIONS))]
        problems += [f"{name} is required" for name in REQUIRED if args.get(name) in (None, "")]
        for name, value in args.items():
            types, expected = OPTIONS.get(name, ((object,), ""))
            if value is not None and (not isinstance(value, types) or (isinstance(value, str) and str not in types)):
                problems.append(f"{name} must be {expected} (got {type(value).__name__})")
        if problems:
            raise AnsibleActionFail("run_report: " + "; ".join(problems))
        given = {name: value for name, value in args.items() if name != "dir"}
        try:
            report = eagle3_report(read_run(args["dir"]), **given)
        except AnsibleFilterError as exc:  # the engine's "the report could not be made from FILE: REASON"
            raise AnsibleActionFail(str(exc.message)) from exc
        result.update(changed=False, report=report)
        return result
