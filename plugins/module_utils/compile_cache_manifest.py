"""The fleet's compile cache manifest on the controller (one per run and profile): written by the canary's announcements
(plugins/action/compile_cache_state.py, in the task's own worker) and read by the other hosts' wait
(roles/compile_cache/files/compile_cache_ctl.py). Plain Python, no Ansible import: the ctl script imports it with the
collection's plugins/module_utils on its path.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

try:  # as a collection module_utils (the action plugin)
    from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import write_atomic
    from ansible_collections.eagle3.trn2.plugins.module_utils.playbook_process import controller
except ImportError:  # as a script's neighbour (compile_cache_ctl.py puts this directory on sys.path)
    from controller_io import write_atomic  # type: ignore[no-redef]
    from playbook_process import controller  # type: ignore[no-redef]


def read_manifest(manifest: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(manifest).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def set_state(manifest: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Merge `fields` into the manifest with its owner (the ansible-playbook process that runs this) and the time;
    the file is replaced atomically by controller_io's write_atomic, as the controller's other records are."""
    manifest = Path(manifest)
    data = dict(read_manifest(manifest) or {})
    data.update(fields)
    data.update(owner=controller(), updated=round(time.time(), 1))
    manifest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(manifest), json.dumps(data, indent=1, sort_keys=True), 0o644)
    return data
