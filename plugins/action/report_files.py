"""Write a run's report files on the controller, verdict.json last, never leaving a stale verdict.

The report is written where the results are, on the controller, so this action needs no module: each
file is compared with what is on disk and replaced atomically (a temporary file in the same directory,
then rename) only when its content differs. Order: when the new verdict differs from the one on disk,
verdict.json is first replaced by {"ok": false, "status": "in progress"}, then the other files are
written, then the new verdict. A run interrupted half-way therefore never shows an OK verdict beside
reports of another result. Written through modules (file, stat, template, copy) the same eight steps
cost about 5 CPU seconds per run, most of it starting module processes (measured 2026-12-01).

With `failure` (the report could not be made: "the report could not be made from FILE: REASON"), every report file
of the run is replaced by its failure version (plugins/module_utils/report/output.py, failure_files: verdict.json
first, then summary.json, report.md, report.html) and report.csv is removed, so no file of the run says OK.
A failure file that cannot be written (no space left, a read-only or unwritable directory) has its earlier version
removed, and the task fails naming it and why (`not_written`); a file that can be neither replaced nor removed is
named too (`stuck`). `written` lists the failure files written, so the caller says only what is true of the others.
"""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.eagle3.trn2.plugins.module_utils.report.files import VALID_ARGS, report_files


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = VALID_ARGS

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(report_files(self._task.args, self._task.check_mode, self._task.diff))
        return result
