"""The locked host stack on a real venv from FIXTURE wheels: vllm_install (ansible-playbook) installing with a lock and
checking the venv against it, and a host's recorded freeze turned into the verified lock by scripts/host_lock.py. The
lock's own rules, called directly: tests/unit/test_host_lock.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_host_lock import LOCKS, PLAYBOOK, PY, ROWS, SCRIPT, eagle3_host_lock, load, stack_pins


# --- vllm_install with a lock, on a real venv ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """The FIXTURE wheels molecule neuron serves (the row's names, versions and local labels, their Requires-Dist)."""
    fixtures = load(ROOT / "molecule/neuron/files/build_fixtures.py")
    out = tmp_path_factory.mktemp("wheels")
    fixtures.add_rows(ROWS, {}, fixtures.WHEELS)
    fixtures.add_bootstrap(fixtures.WHEELS)
    for name, versions in fixtures.WHEELS.items():
        for version in versions:
            fixtures.build_wheel(out, name, version)
    return out / "pypi" / "files"


PIP_ENV = dict(os.environ, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull)
PIP_ENV.pop("PIP_FIND_LINKS", None)


def install(wheels: Path, venv: Path, lock: str, *extra: str, **more: str) -> tuple[int, str]:
    env = dict(PIP_ENV, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(PLAYBOOK),
                           "-e", json.dumps({"wheels": str(wheels), "venv": str(venv), "lock": lock, **more}), *extra],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())  # messages are wrapped in the log


def changed(out: str) -> int:
    return int(re.search(r"localhost\s*:.*changed=(\d+)", out).group(1))


def probe(venv: Path) -> dict:
    """The provenance probe every run records in its manifest (roles/vllm_bench/files/probes/versions.py)."""
    proc = subprocess.run([str(venv / "bin/python"), str(ROOT / "roles/vllm_bench/files/probes/versions.py"), f"{venv}.stack.json"],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the role writes root-owned files, as on a host")


@pytest.fixture(scope="module")
def locked_venv(wheels, tmp_path_factory):
    venv = tmp_path_factory.mktemp("host") / "venv"
    rc, out = install(wheels, venv, "neuron-2.32.0")
    assert rc == 0, out[-4000:]
    return venv


@needs_root
def test_the_install_follows_the_lock_and_records_the_stack(wheels, locked_venv):
    stack = probe(locked_venv)["stack"]
    assert stack["stack"] == "neuron-2.32.0" and stack["lock"] == f"neuron-2.32.0-py{PY}.txt" and stack["verified"] is False
    assert stack["lock_sha256"] == eagle3_host_lock((LOCKS / stack["lock"]).read_text())["sha256"]
    # What the venv holds now: the row's builds (local labels), every one at the lock's version.
    assert stack["freeze"]["vllm-neuron"] == "0.24.0.1.1.0+e8242a9" and stack["freeze"]["islpy"] == "2026.1"
    assert stack["differ"] == [] and stack["unlocked"] == []
    # The constraints pip was given: the whole lock for this Python, the row's pins winning.
    constraints = (locked_venv / "eagle3-constraints.txt").read_text().split()
    assert "transformers==" + dict(p.split("==") for p in constraints)["transformers"] in constraints
    assert "islpy==2026.1" in constraints and len(constraints) > 150
    # A second run changes nothing.
    rc, out = install(wheels, locked_venv, "neuron-2.32.0")
    assert rc == 0 and changed(out) == 0, out[-3000:]


@needs_root
def test_a_package_drifted_from_the_lock_is_put_back(wheels, locked_venv):
    subprocess.run([str(locked_venv / "bin/python"), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
                    "islpy==2026.2.1"], check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    assert probe(locked_venv)["stack"]["differ"] == ["islpy installed 2026.2.1, locked 2026.1"]
    rc, out = install(wheels, locked_venv, "neuron-2.32.0")
    assert rc == 0 and changed(out) > 0, out[-3000:]
    assert probe(locked_venv)["stack"]["differ"] == []


@needs_root
def test_a_verified_lock_from_the_recorded_freeze_and_what_it_refuses(wheels, locked_venv, tmp_path):
    # A run's manifest holds the provenance probe's output as `deployed` (roles/vllm_bench/tasks/manifest.yml).
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"run_id": "r1", "host": "trn2-a", "finished": "2026-12-04T07:00:00+00:00",
                                    "project_revision": "abc123", "deployed": probe(locked_venv)}))
    proc = subprocess.run([sys.executable, str(SCRIPT), "verify", str(manifest), "--write", "--lock-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"neuron-2.32.0-py{PY}.txt"
    lock = eagle3_host_lock(path.read_text())
    assert lock["verified"] is True and "trn2-a" in lock["source"] and "run r1" in lock["source"]
    assert {p.split("==")[0] for p in lock["pins"]} == set(probe(locked_venv)["stack"]["freeze"]) - {"pip"}
    rc, out = install(wheels, locked_venv, str(path))
    assert rc == 0, out[-3000:]
    assert probe(locked_venv)["stack"]["verified"] is True
    # The same verified lock without one package the venv holds: the run stops and names it.
    text = "".join(line for line in path.read_text().splitlines(True) if not line.startswith("nki=="))
    path.write_text(text)
    rc, out = install(wheels, locked_venv, str(path))
    assert rc != 0 and "differs from the verified lock" in out and "nki==0.6.0+31049202112.g85070674 (not in the lock)" in out


def test_a_record_of_another_stack_is_not_made_a_lock(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"run_id": "r1", "host": "h", "deployed": {"stack": {
        "stack": "neuron-2.32.0", "python": "3.12", "platform": "linux-x86_64",
        "freeze": {"vllm-neuron": "0.29.0.1.2.0+3c5e7a9", "nki": "0.6.0"}}}}))
    proc = subprocess.run([sys.executable, str(SCRIPT), "verify", str(manifest)], capture_output=True, text=True)
    assert proc.returncode == 2 and "does not hold stack neuron-2.32.0's pins" in proc.stderr
    assert "vllm-neuron installed 0.29.0.1.2.0+3c5e7a9, locked 0.24.0.1.1.0" in proc.stderr


@needs_root
def test_no_lock_for_the_hosts_python_is_refused_before_any_change(wheels, tmp_path):
    venv = tmp_path / "venv"
    rc, out = install(wheels, venv, "neuron-2.32.0", "-e", f"vllm_install_lock_dir={tmp_path}")
    assert rc != 0 and "vllm_install_lock (eagle3_host_lock) is neuron-2.32.0" in out
    assert f"no lock {tmp_path}/neuron-2.32.0-py{PY}.txt" in out and "scripts/host_lock.py resolve neuron-2.32.0" in out
    assert not venv.exists()


def test_resolve_writes_the_lock_from_pips_report(tmp_path, monkeypatch):
    # A resolve against a FIXTURE find-links directory (the real one asks PyPI: the committed locks' source lines).
    fixtures = load(ROOT / "molecule/neuron/files/build_fixtures.py")
    for name, version in (("vllm", "0.24.0"), ("islpy", "2026.1"), ("transformers", "5.15.0"), ("six", "1.17.0")):
        fixtures.build_wheel(tmp_path, name, version)
    proc = subprocess.run([sys.executable, str(SCRIPT), "resolve", "neuron-2.32.0", "--python", sys.executable,
                           "--lock-dir", str(tmp_path), "--write", "--", "--isolated", "--no-index",
                           "--find-links", str(tmp_path / "pypi/files")],
                          capture_output=True, text=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    assert proc.returncode == 0, proc.stderr
    lock = eagle3_host_lock((tmp_path / f"neuron-2.32.0-py{PY}.txt").read_text())
    assert lock["verified"] is False and "vllm==0.24.0 islpy==2026.1" in lock["source"]
    assert set(lock["pins"]) == {"vllm==0.24.0", "islpy==2026.1"} | set(stack_pins("neuron-2.32.0"))


# --- the DLAMI's own venv (vllm_install_source auto, dlami) ------------------------------------------------------

def fixture_dlami(wheels: Path, where: Path, *extra_pins: str) -> Path:
    """A FIXTURE DLAMI venv, named as the 2.32 DLAMI names its own: the row's pins from the fixture wheels, as AWS's
    build installs them (pip; no eagle3 lock), plus any extra pins (a DLAMI of another build)."""
    venv = where / Path(ROWS["2.32.0"]["dlami"]["venv"]).name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links",
                    str(wheels), *ROWS["2.32.0"]["pip"], *ROWS["2.32.0"]["constraints"]], check=True, env=PIP_ENV)
    if extra_pins:
        subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links",
                        str(wheels), *extra_pins], check=True, env=PIP_ENV)
    return venv


def tree(path: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.rglob("*")) if p.is_file()}


@needs_root
def test_a_dlami_venv_with_the_rows_versions_is_run_not_reinstalled(wheels, tmp_path):
    dlami = fixture_dlami(wheels, tmp_path)
    before = tree(dlami)
    venv = tmp_path / "eagle3/venv"
    rc, out = install(wheels, venv, "neuron-2.32.0", source="auto", dlami=str(dlami))
    assert rc == 0, out[-3000:]
    assert f"running the DLAMI's own venv {dlami}" in out
    assert venv.is_symlink() and venv.resolve() == dlami.resolve()
    stack = probe(venv)["stack"]
    assert stack["ran"] == "dlami" and stack["venv"] == str(dlami) and stack["installed_from"] == "dlami"
    # The DLAMI's venv is compared with the lock, not changed to it: what differs is recorded (its bootstrap setuptools).
    assert stack["lock"] == f"neuron-2.32.0-py{PY}.txt" and stack["unlocked"] == []
    assert all(line.startswith("setuptools installed ") for line in stack["differ"]), stack["differ"]
    assert tree(dlami) == before  # nothing written into AWS's venv
    rc, out = install(wheels, venv, "neuron-2.32.0", source="auto", dlami=str(dlami))
    assert rc == 0 and changed(out) == 0, out[-3000:]


@needs_root
def test_a_dlami_venv_that_differs_is_refused_or_left_alone(wheels, tmp_path):
    dlami = fixture_dlami(wheels, tmp_path, "islpy==2026.2.1")
    before = tree(dlami)
    venv = tmp_path / "eagle3/venv"
    rc, out = install(wheels, venv, "neuron-2.32.0", source="dlami", dlami=str(dlami))
    assert rc != 0 and "vllm_install_source (eagle3_install_source) is dlami, but the DLAMI venv" in out
    assert "islpy installed 2026.2.1, pinned 2026.1" in out and "Nothing was changed" in out and not venv.exists()
    # auto: the project's own venv, from the lock, beside the DLAMI's (which stays as AWS built it).
    rc, out = install(wheels, venv, "neuron-2.32.0", source="auto", dlami=str(dlami))
    assert rc == 0, out[-3000:]
    assert "the DLAMI venv differs from the release row (islpy installed 2026.2.1, pinned 2026.1)" in out
    assert venv.is_dir() and not venv.is_symlink()
    stack = probe(venv)["stack"]
    assert stack["ran"] == "venv" and stack["installed_from"] == "index"  # what auto did, not what was asked
    assert stack["freeze"]["islpy"] == "2026.1" and stack["differ"] == []
    assert tree(dlami) == before
