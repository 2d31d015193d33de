"""The fleet's compile cache manifest on the controller (one per run and profile): written by the canary's announcements
(plugins/action/compile_cache_state.py, in the task's own worker) and read by the other hosts' wait
(roles/compile_cache/files/compile_cache_ctl.py). Plain Python, no Ansible import: the ctl script imports it with the
collection's plugins/module_utils on its path.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # as a collection module_utils (the action plugin)
    from ansible_collections.eagle3.trn2.plugins.module_utils.playbook_process import controller
except ImportError:  # as a script's neighbour (compile_cache_ctl.py puts this directory on sys.path)
    from playbook_process import controller  # type: ignore[no-redef]


def read_manifest(manifest: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(manifest).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def set_state(manifest: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Merge `fields` into the manifest with its owner (the ansible-playbook process that runs this) and the time;
    the file is replaced atomically (a temporary file renamed over it)."""
    manifest = Path(manifest)
    data = dict(read_manifest(manifest) or {})
    data.update(fields)
    data.update(owner=controller(), updated=round(time.time(), 1))
    manifest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=manifest.parent, prefix=manifest.name + ".")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.chmod(tmp, 0o644)
    os.replace(tmp, manifest)
    return data
