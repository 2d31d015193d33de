"""Tearing down a podman host that was never created says so instead of an UNREACHABLE error
(the first `molecule destroy` of every scenario, a fresh machine)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME = "eagle3-test-nohost-1"


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_teardown_of_a_host_never_created(tmp_path):
    assert subprocess.run(["podman", "container", "exists", NAME]).returncode == 1
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    eagle3:\n      children:\n"
        "        controller:\n          hosts:\n            localhost:\n              ansible_connection: local\n"
        f"              ansible_python_interpreter: {sys.executable}\n"
        f"        vllm_hosts:\n          hosts:\n            {NAME}:\n"
        "              ansible_connection: ssh\n              ansible_host: 127.0.0.1\n              ansible_port: 9\n"
        "              eagle3_port: 8999\n")
    (tmp_path / "group_vars").symlink_to(ROOT / "inventories/rehearsal/group_vars")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv),
                           "-e", f"eagle3_podman_ssh_dir={tmp_path / 'ssh'}", str(ROOT / "playbooks/teardown.yml")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"no host yet: container {NAME} does not exist, nothing to stop" in out
    assert "UNREACHABLE" not in out and "unreachable=1" not in out, out[-3000:]
