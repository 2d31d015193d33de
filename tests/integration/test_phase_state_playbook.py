"""The rerun shortcut's module and action in a real ansible-playbook (connection local): no record runs the phase, a
record skips it, a changed role input or file runs it again, check mode writes nothing, the record is root-only and
holds no secret. The comparison itself, called directly: tests/unit/test_phase_state.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    vllm_service_user: eagle3-test
    vllm_service_hf_token: "{{ lookup('ansible.builtin.env', 'PHASE_TOKEN') }}"
    vllm_install_lock_dir: "{{ role_path }}/files/locks"
  tasks:
    - eagle3.trn2.phase_state:
        phase: "{{ phase | default('service') }}"
        paths: [{kind: tree, path: "{{ top }}/managed"}]
        state: "{{ state }}"
        state_dir: "{{ top }}/state"
        run: "{{ run }}"
        shortcut: "{{ shortcut | default(true) | bool }}"
      register: out
    - ansible.builtin.copy: {content: "{{ out | to_json }}", dest: "{{ top }}/out.json", mode: "0600"}
      check_mode: false
"""


def play(tmp_path: Path, state: str, *extra: str, token: str = "hf_secret0123456789", check: bool = False) -> dict:
    (tmp_path / "play.yml").write_text(PLAY)
    args = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"top={tmp_path}", "-e", f"state={state}",
            "-e", "run=r1", *extra, str(tmp_path / "play.yml")] + (["--check"] if check else [])
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PHASE_TOKEN": token,
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert token not in proc.stdout + proc.stderr
    return json.loads((tmp_path / "out.json").read_text())


def test_the_module_and_its_action_in_a_real_playbook(tmp_path):
    (tmp_path / "managed").mkdir()
    (tmp_path / "managed" / "unit").write_text("[Service]\n")
    record = tmp_path / "state" / "service.json"
    first = play(tmp_path, "compare")
    assert first["skip"] is False and first["why"] == "no record of the phase on this host" and not first["changed"]
    play(tmp_path, "recorded", check=True)
    assert not record.exists()  # check mode writes nothing
    play(tmp_path, "recorded")
    assert oct(record.stat().st_mode & 0o777) == "0o600" and oct(record.parent.stat().st_mode & 0o777) == "0o700"
    assert "hf_secret" not in record.read_text()
    assert play(tmp_path, "compare")["skip"] is True
    # a role input of the phase (the token, digested, never shown) changes: the phase runs and its record is dropped
    out = play(tmp_path, "compare", token="hf_other0123456789", check=True)
    assert out["skip"] is False and out["why"] == "its inputs changed: vllm_service_hf_token"
    assert record.exists()  # check mode drops nothing
    out = play(tmp_path, "compare", "-e", "vllm_service_user=someone-else")
    assert out["skip"] is False and out["why"] == "its inputs changed: vllm_service_user" and not record.exists()
    play(tmp_path, "recorded")
    (tmp_path / "managed" / "unit").write_text("[Service]\nUser=x\n")
    out = play(tmp_path, "compare")
    assert out["skip"] is False and str(tmp_path / "managed") in out["why"] and not record.exists()
    play(tmp_path, "recorded")
    out = play(tmp_path, "compare", "-e", "shortcut=false")
    assert out["skip"] is False and out["why"] == "eagle3_rerun_shortcut is off"
    # an earlier phase that runs drops the records of the later ones with its own: they run too, nothing to compare
    play(tmp_path, "recorded")
    play(tmp_path, "compare", "-e", "phase=host", check=True)
    assert record.exists()  # check mode drops nothing
    out = play(tmp_path, "compare", "-e", "phase=host")
    assert out["skip"] is False and out["why"] == "no record of the phase on this host" and not record.exists()
