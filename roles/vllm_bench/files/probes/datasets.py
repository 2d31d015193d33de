"""Datasets probe, run on the host: what the installed `vllm bench serve` offers as --dataset-name.

Usage: datasets.py VLLM [CACHE]. Prints {"offered": [names] or null, "pandas": bool}: the choices are read from
--help=dataset-name, or from the full --help of CLIs without that form; pandas is what vLLM's custom JSONL
loader needs.

Reading the choices imports vllm (about 9 CPU-seconds on a rehearsal host, more with the Neuron plugin), and every
benchmarking pass asks. With CACHE (a file path), the answer is kept there with what it was read from: the vllm
command's path and the RECORD files of the interpreter's vllm distributions (pip rewrites a distribution's RECORD,
the list of its files with their hashes, on every install), and it is read again only when either differs.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from typing import Any


def offered(vllm: str) -> list[str] | None:
    for form in ("--help=dataset-name", "--help"):
        out = subprocess.run([vllm, "bench", "serve", form], capture_output=True, text=True)
        found = re.search(r"--dataset-name \{([^}]*)\}", out.stdout + out.stderr)
        if found:
            return found.group(1).split(",")
    return None


def installed(vllm: str, path: list[str] | None = None) -> str | None:
    """What the answer depends on: the command's path and the vllm distributions' RECORD files on `path` (default
    sys.path: the venv whose python runs this) (None: no distribution, or one without a RECORD, so nothing to key a
    kept answer by)."""
    digest = hashlib.sha256(os.path.realpath(vllm).encode())
    found = metadata.distributions(path=sys.path if path is None else path)
    records = sorted(((dist.metadata["Name"] or "").lower(), dist.read_text("RECORD")) for dist in found
                     if (dist.metadata["Name"] or "").lower().startswith("vllm"))
    if not records or any(record is None for _, record in records):
        return None
    for name, record in records:
        digest.update(b"\0" + name.encode() + b"\0" + record.encode())
    return digest.hexdigest()


def kept(cache: str, key: str | None) -> list[str] | None:
    """The kept choices when the cache was written for `key`, else None."""
    if key is None:
        return None
    try:
        with open(cache) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    choices = data.get("offered")
    return choices if isinstance(choices, list) and all(isinstance(c, str) for c in choices) else None


def keep(cache: str, key: str, choices: list[str]) -> None:
    """Write the cache whole (a temporary file renamed over it), readable by all, as the venv is. Where it cannot be
    written the answer is simply read again next time."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(cache) or ".", prefix=".datasets.")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "offered": choices}, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, cache)
    except OSError:
        os.unlink(tmp)


def datasets(vllm: str, cache: str | None = None, path: list[str] | None = None) -> dict[str, Any]:
    key = installed(vllm, path) if cache else None
    choices = kept(cache, key) if cache else None
    if choices is None:
        choices = offered(vllm)
        if cache and key is not None and choices is not None:
            keep(cache, key, choices)
    return {"offered": choices, "pandas": importlib.util.find_spec("pandas") is not None}


if __name__ == "__main__":
    print(json.dumps(datasets(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
