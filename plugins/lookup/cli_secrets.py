"""Lookup eagle3.trn2.cli_secrets: secret variables given a value on the ansible-playbook command line."""
from __future__ import annotations

DOCUMENTATION = r"""
name: cli_secrets
author: eagle3.trn2 maintainers
short_description: Secret variables given a value with -e on the ansible-playbook command line
description:
  - Reads the command line of the ansible-playbook process it runs under (Linux /proc) and returns the variables
    among the terms that an -e / --extra-vars option gave a non-empty value (JSON, YAML or key=value), plus
    C(an hf_ token) for a token-shaped word anywhere on the command line. A C(-e @file) is not on the command line.
  - Nothing found (or no ansible-playbook parent, or no /proc) returns an empty list.
options:
  _terms:
    description: The names of the secret variables.
    required: true
"""

EXAMPLES = r"""
- name: Refuse a token given on the command line
  ansible.builtin.assert:
    that: query('eagle3.trn2.cli_secrets', 'eagle3_hf_token') | length == 0
"""

RETURN = r"""
_raw:
  description: The secret variables found (their names, never their values).
  type: list
  elements: str
"""

from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import eagle3_cli_secrets


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return eagle3_cli_secrets(list(terms))
