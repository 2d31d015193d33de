"""The host lock's filters: a lock file read, merged with the pins that win over it, and a venv compared with it
(plugins/module_utils/host/host_lock.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.host.host_lock import (eagle3_host_lock,
                                                                                 eagle3_lock_constraints,
                                                                                 eagle3_lock_drift)

DOCUMENTATION = r"""
  name: host_lock
  short_description: The host's locked Python stack (a pip constraints file per stack and Python)
  description:
    - C(eagle3_host_lock) parses a lock file's text into a dict of stack, python, platform, verified, source, pins, sha256.
    - C(eagle3_lock_constraints) returns the lock's pins less those named by the given pins, then the given pins.
    - C(eagle3_lock_drift) returns a dict of differ (installed packages at another version than the lock's) and unlocked
      (installed packages the lock does not name; pip, setuptools and wheel only when the lock names them).
"""


class FilterModule:
    """Host lock filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_host_lock": eagle3_host_lock, "eagle3_lock_constraints": eagle3_lock_constraints,
                "eagle3_lock_drift": eagle3_lock_drift}
