"""The host's locked Python stack (every host installs the same, verified versions): one pip constraints file per stack
and Python, read and compared here.

A lock file (roles/vllm_install/files/locks/<stack>-py<X.Y>.txt, written by scripts/host_lock.py) is a pip
constraints file whose first line says what it is:

    # eagle3-lock stack=neuron-2.32.0 python=3.12 platform=linux-x86_64 verified=false
    # source: <where the pins come from: a recorded resolve with its date, or a host's recorded freeze>
    name==version
    ...

verified=false: the pins come from a resolve of vLLM's own requirements (PyPI) plus the release row's Neuron pins,
never installed together on a trn2; verified=true: they are the freeze a real host recorded in its run manifest.

Pure: eagle3_host_lock parses (and refuses a malformed file, naming it), eagle3_lock_constraints merges a lock with
the pins that win over it (the row's packages and constraints), eagle3_lock_drift compares what a venv holds with
the lock. The same rules are in scripts/host_lock.py (it imports this file) and the provenance probe's copy
(roles/vllm_bench/files/probes/versions.py, stdlib only: it runs in the host's venv).
"""
from __future__ import annotations

import hashlib
import re
from typing import Any
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

HEADER = re.compile(r"# eagle3-lock((?: [a-z]+=\S+)+)\s*")
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!_-]*)")
# What `python -m venv` puts in every venv itself (ensurepip): not part of the stack unless the lock names it.
BOOTSTRAP = ("pip", "setuptools", "wheel")
KEYS = ("stack", "python", "platform", "verified")


class LockError(ValueError):
    """A lock file that is not one."""


def eagle3_host_lock(text: str, where: str = "the lock") -> dict[str, Any]:
    lines = str(text).splitlines()
    head = HEADER.fullmatch(lines[0]) if lines else None
    if head is None:
        raise LockError(f"{where}: the first line must be '# eagle3-lock stack=... python=X.Y platform=... verified=true|false'")
    fields = dict(item.split("=", 1) for item in head.group(1).split())
    missing = [key for key in KEYS if key not in fields]
    if missing or fields["verified"] not in ("true", "false") or not re.fullmatch(r"\d+\.\d+", fields["python"]):
        raise LockError(f"{where}: its header lacks or mis-states {', '.join(missing) or 'python (X.Y) or verified (true|false)'}")
    source = next((line[len("# source:"):].strip() for line in lines if line.startswith("# source:")), "")
    if not source:
        raise LockError(f"{where}: no '# source:' line (where its pins come from)")
    pins: dict[str, str] = {}
    for number, line in enumerate(lines[1:], 2):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pin = PIN.fullmatch(line)
        if pin is None:
            raise LockError(f"{where}, line {number}: {line!r} is not an exact pin name==version")
        name = canonicalize_name(pin.group(1))
        if name in pins:
            raise LockError(f"{where}, line {number}: {name} is pinned twice")
        try:
            Version(pin.group(2))
        except InvalidVersion as exc:
            raise LockError(f"{where}, line {number}: {pin.group(2)!r} is not a PEP 440 version") from exc
        pins[name] = pin.group(2)
    if not pins:
        raise LockError(f"{where}: it pins nothing")
    return {"stack": fields["stack"], "python": fields["python"], "platform": fields["platform"],
            "verified": fields["verified"] == "true", "source": source,
            "pins": [f"{name}=={version}" for name, version in sorted(pins.items())],
            # Of the file as written (one final newline): Ansible's file lookup strips it.
            "sha256": hashlib.sha256((str(text).rstrip("\n") + "\n").encode()).hexdigest()}


def _name(pin: str) -> str:
    return canonicalize_name(pin.split("==", 1)[0])


def eagle3_lock_constraints(lock_pins: list[str], winners: list[str]) -> list[str]:
    """The lock's pins, less the packages `winners` pin (the release row's own pins win), then `winners`."""
    named = {_name(pin) for pin in winners}
    return [pin for pin in lock_pins if _name(pin) not in named] + list(winners)


def _matches(installed: str, pinned: str) -> bool:
    try:
        return SpecifierSet("==" + pinned).contains(Version(installed), prereleases=True)
    except (InvalidVersion, ValueError):
        return installed == pinned


def eagle3_lock_drift(installed: dict[str, str], lock_pins: list[str]) -> dict[str, list[str]]:
    """{differ: ["name installed I, locked L"], unlocked: ["name==I"]} for a venv's packages against a lock."""
    locked = {_name(pin): pin.split("==", 1)[1] for pin in lock_pins}
    differ, unlocked = [], []
    for raw, version in sorted((installed or {}).items(), key=lambda kv: canonicalize_name(kv[0])):
        name = canonicalize_name(raw)
        if name in locked:
            if not _matches(str(version), locked[name]):
                differ.append(f"{name} installed {version}, locked {locked[name]}")
        elif name not in BOOTSTRAP:
            unlocked.append(f"{name}=={version}")
    return {"differ": differ, "unlocked": unlocked}
