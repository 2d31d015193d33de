"""Lookup eagle3.trn2.provenance: which copy of the collection is running, for each result's metadata."""
from __future__ import annotations

from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.results.provenance import describe

DOCUMENTATION = r"""
name: provenance
author: eagle3.trn2 maintainers
short_description: Name, version and revision of the running eagle3.trn2 collection
description:
  - Describes the copy of the collection the lookup itself was loaded from, so a result records
    exactly which automation produced it, whether the collection was installed or runs from its checkout.
  - Installed (C(ansible-galaxy collection install)) - the version from C(MANIFEST.json) and the sha256 of
    C(FILES.json), which lists the sha256 of every file of the collection.
  - A checkout (C(galaxy.yml) at the root) - the version from C(galaxy.yml) and C(git describe --always --dirty),
    or C(no git revision) when the checkout is not a git work tree.
options: {}
"""

EXAMPLES = r"""
- name: Record the automation's provenance
  ansible.builtin.debug:
    msg: "{{ lookup('eagle3.trn2.provenance') }}"
"""

RETURN = r"""
_raw:
  description: One string, for example C(eagle3.trn2 1.0.0 installed, files sha256 5f1c...) or
    C(eagle3.trn2 1.0.0 checkout, git 97a3ffc1d2e3-dirty).
  type: list
  elements: str
"""


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [describe()]
