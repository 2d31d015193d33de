"""Install probe, run with the venv's Python: the installed version of every package named.

Usage: pip_probe.py PIN... (each "name==version" or a bare name). Prints {"python": "X.Y", "packages": {name:
installed version or null}, "installed": {name: version} of every distribution in the venv} as JSON (the lock's
check: what the venv holds that the lock does not name, plugins/module_utils/host/host_lock.py).
"""
from __future__ import annotations

import json
import sys
from importlib import metadata
from typing import Any


def probe(pins: list[str]) -> dict[str, Any]:
    found: dict[str, str | None] = {}
    for pin in pins:
        name = pin.split("==")[0]
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    installed = {dist.metadata["Name"]: dist.version for dist in metadata.distributions() if dist.metadata["Name"]}
    return {"python": "%d.%d" % sys.version_info[:2], "packages": found, "installed": dict(sorted(installed.items()))}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1:])))
