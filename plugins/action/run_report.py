"""Make one run's report on the controller: read the run directory, validate every result file, compare, check
parity, aggregate and gate (the report engine, plugins/module_utils/report/engine.py), with named options.

Runs in ansible-playbook's worker on the controller, no module; the options' checks and the report are
plugins/module_utils/report/run_report.py's, the run directory read with the eagle3_run lookup's reader. A report
that cannot be made fails the task with the engine's own words, "the report could not be made from FILE: REASON"
(bench_report's rescue names that file in every report file of the run).
"""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.report.run_report import SCHEMA, run_report


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(SCHEMA["properties"])

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)  # an option outside SCHEMA is refused here, by name (_VALID_ARGS)
        result.update(changed=False, report=run_report(self._task.args))
        return result
