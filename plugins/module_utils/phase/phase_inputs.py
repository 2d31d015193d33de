"""What a host phase's record is compared by, on the controller (the rerun shortcut; plugins/module_utils/phase/phase_state.py
holds the host's side).

A phase's inputs are every input its roles declare (their meta/argument_specs.yml, every entry point), as the play
resolves them for the host, and the code that runs them (the roles' files, the collection's plugins and the phase's
playbook): a changed setting, role input or collection version makes another digest, and the phase runs.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any, Mapping

from ansible_collections.eagle3.trn2.plugins.module_utils.collection import collection_root
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.schema import load_yaml

ROOT = collection_root()
# Each host phase, its roles (in the order its play runs them) and its playbook.
PHASE_ROLES: dict[str, tuple[str, ...]] = {
    "host": ("neuron_sdk", "vllm_install", "model_assets"),
    "service": ("vllm_service",),
}


def _check(phase: Any) -> str:
    if phase not in PHASE_ROLES:
        raise ValueError(f"phase: expected one of {', '.join(PHASE_ROLES)}, got {phase!r}")
    return str(phase)


@lru_cache(maxsize=None)
def role_inputs(role: str) -> tuple[str, ...]:
    """Every option of every entry point of a role's argument specs, in file order, each once."""
    specs = load_yaml((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return tuple(dict.fromkeys(name for entry in specs.values() for name in (entry.get("options") or {})))


def phase_inputs(phase: Any) -> list[str]:
    """The role inputs of a phase (neuron_sdk's on a CPU host too: its play holds the role, unused)."""
    return list(dict.fromkeys(name for role in PHASE_ROLES[_check(phase)] for name in role_inputs(role)))


@lru_cache(maxsize=None)
def code_digest(phase: str) -> str:
    """sha256 over the phase's roles' files, the collection's plugins and the phase's playbooks (paths and contents)."""
    digest = hashlib.sha256()
    tops = [ROOT / "roles" / role for role in PHASE_ROLES[_check(phase)]]
    tops += [ROOT / "plugins", ROOT / "playbooks" / f"{phase}.yml", ROOT / "playbooks" / "tasks" / "phase_skip.yml",
             ROOT / "playbooks" / "tasks" / "phase_record.yml"]
    for top in tops:
        files = sorted(top.rglob("*")) if top.is_dir() else [top]
        for path in files:
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def input_digests(values: Mapping[str, Any], phase: Any) -> dict[str, str]:
    """A digest per input and one for the phase's code (the key "code"): the record names what changed by them; a
    secret's value is never in the record, only its digest."""
    if not isinstance(values, Mapping):
        raise ValueError(f"phase inputs: expected a mapping of role inputs, got {type(values).__name__}")
    return {"code": code_digest(_check(phase)), **{str(name): _digest(value) for name, value in values.items()}}


def digest_of(digests: Mapping[str, str], phase: Any) -> str:
    """The phase's one digest, made from input_digests' result (the record compares it first)."""
    return _digest({"phase": _check(phase), "inputs": dict(digests)})

