"""Lookup eagle3.trn2.dir_problem: why a directory cannot be created and written on the controller."""
from __future__ import annotations

DOCUMENTATION = r"""
name: dir_problem
author: eagle3.trn2 maintainers
short_description: Why a directory cannot be created and written on the controller
description:
  - For each path, walks up to the deepest existing ancestor and says why the path cannot be used as a directory
    to write into, or an empty string when it can - a file where a directory is needed, a broken symbolic link on
    the way, a missing name longer than the file system allows, or an ancestor where nothing can be created
    (read-only file system, /proc, permissions), found by creating and removing an empty probe directory there.
options:
  _terms:
    description: Directory paths on the controller.
    required: true
"""

EXAMPLES = r"""
- name: Refuse a results directory that cannot be written
  ansible.builtin.assert:
    that: lookup('eagle3.trn2.dir_problem', eagle3_results_dir) | length == 0
"""

RETURN = r"""
_raw:
  description: One string per path, empty when the directory can be created and written.
  type: list
  elements: str
"""

from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import eagle3_dir_problem


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [eagle3_dir_problem(term) for term in terms]
