"""Lookup eagle3.trn2.run_hours: the expected length of a run, in hours, from its settings."""
from __future__ import annotations

DOCUMENTATION = r"""
name: run_hours
author: eagle3.trn2 maintainers
short_description: The expected length of a run (hours), from the settings the task sees
description:
  - The benchmark estimate (rounds x profiles x prompts x output tokens at eagle3_bench_stream_rate per concurrent
    request), plus eagle3_ready_timeout for each server start, plus an hour for the install and the report, rounded
    up to the quarter hour (plugins/module_utils/settings/settings.py, run_hours). The default of eagle3_run_hours.
options:
  _terms:
    description: Not used.
    required: false
"""

EXAMPLES = r"""
- name: Say how long the run is expected to take
  ansible.builtin.debug:
    msg: "{{ lookup('eagle3.trn2.run_hours') }} h"
"""

RETURN = r"""
_raw:
  description: The hours, one number.
  type: list
  elements: float
"""

from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.task_view import task_run_hours


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [task_run_hours(self._templar, variables or {})]
