"""A phase playbook run alone reads the settings through the role that checks them: a misspelt setting is refused
before any host is contacted. The relations themselves, called directly: tests/unit/test_relations.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PLAYBOOK_INVENTORY = """all:
  children:
    controller:
      hosts:
        localhost: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
    vllm_hosts:
      hosts:
        # nothing listens on 127.0.0.1:9: a task that connected would end unreachable, not refused
        probe-1: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9, ansible_user: root}
"""


@pytest.mark.parametrize("playbook", ["host.yml", "monitor.yml"])
def test_a_phase_playbook_run_alone_refuses_a_misspelt_setting_before_it_connects(tmp_path, playbook):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(PLAYBOOK_INVENTORY)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(ROOT / "playbooks" / playbook), "-e", "eagle3_run_id=probe", "-e", "eagle3_monitr_port=9090"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "eagle3_monitr_port is not a setting" in out, out[-3000:]
    assert "unreachable=1" not in out and "UNREACHABLE" not in out, out[-3000:]
