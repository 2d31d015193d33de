"""Lookup eagle3.trn2.provenance: which copy of the collection is running, for each result's metadata."""
from __future__ import annotations

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

import hashlib
import json
import subprocess
from pathlib import Path

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.collection import collection_root


def describe(root: Path | None = None) -> str:
    """The provenance string of the collection rooted at `root` (default: the running copy)."""
    root = root or collection_root()
    manifest = root / "MANIFEST.json"
    if manifest.is_file():
        info = json.loads(manifest.read_text())["collection_info"]
        files = hashlib.sha256((root / "FILES.json").read_bytes()).hexdigest()[:16]
        return f"{info['namespace']}.{info['name']} {info['version']} installed, files sha256 {files}"
    galaxy = root / "galaxy.yml"
    if not galaxy.is_file():
        raise AnsibleLookupError(f"neither MANIFEST.json nor galaxy.yml in {root}: not a collection")
    import yaml

    info = yaml.safe_load(galaxy.read_text())
    try:
        git = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        revision = f"git {git}"
    except (OSError, subprocess.SubprocessError):
        revision = "no git revision"
    return f"{info['namespace']}.{info['name']} {info['version']} checkout, {revision}"


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [describe()]
