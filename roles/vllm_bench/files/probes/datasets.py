"""Datasets probe, run on the host: what the installed `vllm bench serve` offers as --dataset-name.

Usage: datasets.py VLLM. Prints {"offered": [names] or null, "pandas": bool}: the choices are read from
--help=dataset-name, or from the full --help of CLIs without that form; pandas is what vLLM's custom JSONL
loader needs.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from typing import Any


def offered(vllm: str) -> list[str] | None:
    for form in ("--help=dataset-name", "--help"):
        out = subprocess.run([vllm, "bench", "serve", form], capture_output=True, text=True)
        found = re.search(r"--dataset-name \{([^}]*)\}", out.stdout + out.stderr)
        if found:
            return found.group(1).split(",")
    return None


def datasets(vllm: str) -> dict[str, Any]:
    return {"offered": offered(vllm), "pandas": importlib.util.find_spec("pandas") is not None}


if __name__ == "__main__":
    print(json.dumps(datasets(sys.argv[1])))
