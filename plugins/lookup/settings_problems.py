"""Lookup eagle3.trn2.settings_problems: every eagle3_* variable of the host checked against the settings schema."""
from __future__ import annotations

DOCUMENTATION = r"""
name: settings_problems
author: eagle3.trn2 maintainers
short_description: Refusals of the eagle3_* variables the task sees, by the settings schema
description:
  - Takes every variable under eagle3_ the task sees, and each role input the schema describes that is set (group_vars, host_vars, inventory, extra vars), resolves each
    template on its own, and checks it against plugins/module_utils/settings/settings_schema.yml (with
    plugins/module_utils/settings/settings.py), for unknown names with a suggestion, strict types, ranges, choices, whole-value patterns, closed mappings and no
    control characters. A value given with -e key=value, or made by a template, is converted once by its declared
    type.
  - Returns one message per problem, each naming the setting (never a secret's value); none when every setting is valid.
    What the settings allow but an operator should hear about (settings.meaning_warnings) is shown as a warning.
options:
  _terms:
    description: Not used.
    required: false
"""

EXAMPLES = r"""
- name: Refuse settings the schema refuses
  ansible.builtin.assert:
    that: query('eagle3.trn2.settings_problems') | length == 0
"""

RETURN = r"""
_raw:
  description: The refusals, one line each.
  type: list
  elements: str
"""

from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.task_view import task_settings_problems


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return task_settings_problems(self._templar, variables or {}, Display().warning)
