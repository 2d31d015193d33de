"""eagle3.trn2.controller_file in one real ansible-playbook, as Ansible loads the action, in a play whose only host
cannot be reached: every task succeeds, so the action never contacted the host (no module call, which is what it is
for), check mode and --diff work, and bad arguments are refused by name. controller_io.settle() itself, called
directly: tests/unit/test_controller_file.py."""
from __future__ import annotations

import json
import stat

from conftest import play_and_read


PLAYBOOK = """---
- name: Exercise controller_file on a host that cannot be reached
  hosts: unreachable
  gather_facts: false
  tasks:
    - name: A directory
      eagle3.trn2.controller_file: {path: "{{ base }}/run", state: directory, mode: "0700"}
      register: made
    - name: A file
      eagle3.trn2.controller_file: {path: "{{ base }}/run/run.json", content: "{{ {'hosts': ['h']} | to_nice_json }}\\n"}
      register: written
    - name: The same file again
      eagle3.trn2.controller_file: {path: "{{ base }}/run/run.json", content: "{{ {'hosts': ['h']} | to_nice_json }}\\n"}
      register: again
    - name: Another text in check mode, with a diff
      eagle3.trn2.controller_file: {path: "{{ base }}/run/run.json", content: "other\\n"}
      check_mode: true
      diff: true
      register: checked
    - name: A part file
      eagle3.trn2.controller_file: {path: "{{ base }}/run/r.json.part", content: "{}\\n"}
    - name: Mark it complete
      eagle3.trn2.controller_file: {path: "{{ base }}/run/r.json", src: "{{ base }}/run/r.json.part", state: moved}
      register: moved
    - name: Remove it
      eagle3.trn2.controller_file: {path: "{{ base }}/run/r.json", state: absent}
      register: removed
    - name: An unknown option
      eagle3.trn2.controller_file: {path: "{{ base }}/run/x", content: "", dest: "{{ base }}/y"}
      register: unknown
      ignore_errors: true
    - name: A relative path
      eagle3.trn2.controller_file: {path: run/x, content: ""}
      register: relative
      ignore_errors: true
"""


def test_the_action_in_a_real_playbook_never_contacts_the_host(tmp_path):
    # Port 9 on loopback (discard): nothing listens, so any module call would fail the host as unreachable.
    proc, got = play_and_read(tmp_path, PLAYBOOK, {"unreachable": {
        "ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_connection": "ssh", "ansible_user": "nobody"}}, tmp_path,
        ['made', 'written', 'again', 'checked', 'moved', 'removed', 'unknown', 'relative'])
    assert "unreachable=0" in proc.stdout
    assert got["made"]["changed"] and stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o700
    assert got["written"]["changed"] and not got["again"]["changed"]
    assert json.loads((tmp_path / "run" / "run.json").read_text()) == {"hosts": ["h"]}
    assert got["checked"]["changed"] and got["checked"]["diff"]["after"] == "other\n"
    assert json.loads(got["checked"]["diff"]["before"]) == {"hosts": ["h"]}
    assert got["moved"]["changed"] and got["removed"]["changed"]
    assert not (tmp_path / "run" / "r.json").exists() and not (tmp_path / "run" / "r.json.part").exists()
    assert got["unknown"]["failed"] and "Invalid options for eagle3.trn2.controller_file: dest" in got["unknown"]["msg"]
    assert got["relative"]["failed"] and "path must be an absolute path" in got["relative"]["msg"]
