"""Which copy of the collection is running, as each result's metadata records it (the lookup eagle3.trn2.provenance):
an installed copy by its version and FILES.json's sha256, a checkout by its git revision."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from ansible.errors import AnsibleLookupError
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
