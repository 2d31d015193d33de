"""Lookup eagle3.trn2.input_problems: a role's inputs checked against the settings schema, each named by itself."""
from __future__ import annotations

DOCUMENTATION = r"""
name: input_problems
author: eagle3.trn2 maintainers
short_description: Refusals of a role's inputs by the settings schema entries that describe them
description:
  - For the role named in the term, every input the settings schema describes (an input a setting feeds, by that
    setting's entry; an input an operator sets directly, by its own entry) is resolved as the task sees it and checked
    against plugins/module_utils/settings/settings_schema.yml (strict types, ranges, choices, whole-value patterns, closed
    mappings, no control characters), a value a template made converted once by its declared type.
  - Each refusal names the role input (a role used on its own is refused by its own names; the project's refusal adds
    the setting behind it). Types, ranges, choices and patterns live in the schema only, so the roles' preflights keep
    only the rules that need a host fact or more than one input.
options:
  _terms:
    description: The role's name (its inputs are named <role>_...).
    required: true
"""

EXAMPLES = r"""
- name: Check the vllm_bench inputs against the settings schema
  ansible.builtin.assert:
    that: query('eagle3.trn2.input_problems', 'vllm_bench') | length == 0
"""

RETURN = r"""
_raw:
  description: The refusals, one line each.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.task_view import task_input_problems


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if len(terms) != 1:
            raise AnsibleError("input_problems takes one term, the role's name")
        return task_input_problems(self._templar, variables or {}, str(terms[0]))
