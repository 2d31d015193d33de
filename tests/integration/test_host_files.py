"""eagle3.trn2.host_files: many directories and files on a host in one module call (one round trip, not one per
file).

Its semantics are settle()'s (plugins/module_utils/controller_io.py), whose model test is tests/unit/test_controller_file.py;
here: the owner and group it adds (put right whatever they were; a missing one is changed in check mode and refused by
name otherwise), and the module itself in a real playbook: the entries in order, look_in after the writes, a second run
that changes nothing, check mode with --diff, and refusals that name the entry.
"""
from __future__ import annotations

import grp
import hashlib
import json
import subprocess
from pathlib import Path
import os
import pwd
import sys

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, play_and_read
from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import ControllerFileError, settle

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's group to another one needs root")
GROUPS = sorted({g.gr_name for g in grp.getgrall()})[:8]


@ROOT_ONLY
@settings(max_examples=40, deadline=None)
@given(state=st.sampled_from(["file", "directory"]), had=st.sampled_from(GROUPS), wanted=st.sampled_from(GROUPS),
       mode=st.sampled_from(["0640", "0750", "0644", "4755"]))
def test_owner_group_and_mode_are_put_right_whatever_they_were(tmp_path_factory, state, had, wanted, mode):
    path = tmp_path_factory.mktemp("owned") / "entry"
    content = "x=1\n" if state == "file" else None
    settle(str(path), state=state, content=content, mode="0600")
    os.chown(path, 0, grp.getgrnam(had).gr_gid)
    first = settle(str(path), state=state, content=content, owner="root", group=wanted, mode=mode)
    after = os.stat(path)
    assert (after.st_uid, after.st_gid, oct(after.st_mode & 0o7777)) == (0, grp.getgrnam(wanted).gr_gid, oct(int(mode, 8)))
    assert first["changed"] is True  # the mode was 0600 before
    assert settle(str(path), state=state, content=content, owner="root", group=wanted, mode=mode)["changed"] is False


def test_a_missing_owner_is_changed_in_check_mode_and_refused_by_name_otherwise(tmp_path):
    me = pwd.getpwuid(os.getuid()).pw_name
    target = tmp_path / "f"
    assert settle(str(target), content="a\n", owner="eagle3-nosuchuser", check=True)["changed"]
    assert not target.exists()
    with pytest.raises(ControllerFileError, match="owner 'eagle3-nosuchuser' does not exist"):
        settle(str(target), content="a\n", owner="eagle3-nosuchuser")
    with pytest.raises(ControllerFileError, match="group 'eagle3-nosuchgroup' does not exist"):
        settle(str(target), content="a\n", owner=me, group="eagle3-nosuchgroup")
    with pytest.raises(ControllerFileError, match="owner is not taken with state absent"):
        settle(str(target), state="absent", owner=me)
    assert not target.exists()


PLAYBOOK = """---
- name: Exercise host_files
  hosts: localhost
  gather_facts: false
  vars:
    files:
      - {path: "{{ base }}/etc", state: directory, mode: "0750"}
      - {path: "{{ base }}/etc/a.yaml", content: "a: 1\\n", mode: "0640"}
      - {path: "{{ base }}/etc/b.yaml", content: "b: 2\\n"}
      - {path: "{{ base }}/etc/stale.env", state: absent}
    look_in: [{path: "{{ base }}/etc", patterns: ["*.yaml", "*.conf"]}, {path: "{{ base }}/nowhere", patterns: ["*"]}]
  tasks:
    - name: Check mode on nothing
      eagle3.trn2.host_files: {files: "{{ files }}", look_in: "{{ look_in }}"}
      check_mode: true
      diff: true
      register: checked
    - name: Write
      eagle3.trn2.host_files: {files: "{{ files }}", look_in: "{{ look_in }}", read: ["{{ base }}/etc/a.yaml"]}
      register: written
    - name: Again
      eagle3.trn2.host_files: {files: "{{ files }}", look_in: "{{ look_in }}"}
      register: again
    - name: An unknown key
      eagle3.trn2.host_files: {files: [{path: "{{ base }}/x", content: "", dest: y}]}
      register: unknown
      ignore_errors: true
    - name: A move (the controller's only)
      eagle3.trn2.host_files: {files: [{path: "{{ base }}/x", state: moved}]}
      register: moved
      ignore_errors: true
    - name: A relative path, after one good entry
      eagle3.trn2.host_files: {files: [{path: "{{ base }}/etc/c.conf", content: "c\\n"}, {path: etc/d, content: ""}]}
      register: relative
      ignore_errors: true
    - name: A file to read that is missing, after one that is there
      eagle3.trn2.host_files: {files: [], read: ["{{ base }}/etc/b.yaml", "{{ base }}/etc/none.yaml"]}
      register: unread
      ignore_errors: true
    - name: Files read if present, one missing, one there
      eagle3.trn2.host_files: {files: [], read_if_present: ["{{ base }}/etc/none.yaml", "{{ base }}/etc/b.yaml"]}
      register: maybe
    - name: A file read if present that is not text
      eagle3.trn2.host_files: {files: [], read_if_present: ["{{ base }}/etc/binary"]}
      register: binary
      ignore_errors: true
"""


def test_the_module_in_a_real_playbook(tmp_path):
    base = tmp_path / "host"
    (base / "etc").mkdir(parents=True)
    (base / "etc" / "stale.env").write_text("old\n")
    (base / "etc" / "binary").write_bytes(b"\xff\xfe")
    _, got = play_and_read(tmp_path, PLAYBOOK, {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}, base,
        ['checked', 'written', 'again', 'unknown', 'moved', 'relative', 'unread', 'maybe', 'binary'])
    etc = str(base / "etc")
    # Check mode: everything that would change is named, with a diff per entry, and nothing was written.
    assert got["checked"]["changed"] and got["checked"]["changed_paths"] == [
        etc, f"{etc}/a.yaml", f"{etc}/b.yaml", f"{etc}/stale.env"]
    assert [d.get("after") for d in got["checked"]["diff"]][1:3] == ["a: 1\n", "b: 2\n"]
    assert got["checked"]["found"] == {etc: [], str(base / "nowhere"): []}
    # The write: the entries in order, look_in after them; the second run changes nothing.
    assert got["written"]["changed_paths"] == got["checked"]["changed_paths"]
    assert (base / "etc" / "a.yaml").read_text() == "a: 1\n" and oct((base / "etc" / "a.yaml").stat().st_mode & 0o777) == "0o640"
    assert oct((base / "etc").stat().st_mode & 0o777) == "0o750" and not (base / "etc" / "stale.env").exists()
    assert got["written"]["found"] == {etc: ["a.yaml", "b.yaml"], str(base / "nowhere"): []}
    # read returns the text after the writes, and names a file it cannot read.
    assert got["written"]["read"] == {f"{etc}/a.yaml": "a: 1\n"} and got["again"]["read"] == {}
    assert got["unread"]["failed"] and f"read[1]: {etc}/none.yaml: No such file or directory" in got["unread"]["msg"]
    # read_if_present: a missing file is named in absent, not a failure; one that is not text still fails by name.
    assert got["maybe"]["read"] == {f"{etc}/b.yaml": "b: 2\n"} and got["maybe"]["absent"] == [f"{etc}/none.yaml"]
    assert got["written"]["absent"] == [] and not got["maybe"]["changed"]
    assert got["binary"]["failed"] and f"read_if_present[0]: {etc}/binary: not UTF-8 text" in got["binary"]["msg"]
    assert got["again"]["changed"] is False and got["again"]["changed_paths"] == []
    # Refusals name the entry and what was expected; entries before a refused one were written.
    assert got["unknown"]["failed"] and "files[0]: unknown key(s) dest" in got["unknown"]["msg"]
    assert got["moved"]["failed"] and "files[0]: state must be file, directory or absent" in got["moved"]["msg"]
    assert got["relative"]["failed"] and "files[1]: path must be an absolute path" in got["relative"]["msg"]
    assert got["relative"]["changed_paths"] == [f"{etc}/c.conf"] and (base / "etc" / "c.conf").read_text() == "c\n"


def test_the_logged_invocation_names_each_files_digest_never_its_text(tmp_path):
    """What a log keeps (the JSON callback, as AWX keeps job events; -vvv): each file's size and SHA-256, not its text,
    as the template module logs its source and not the rendered text. Without --diff nothing shows the text.
    ansible-core 2.21 drops every result's invocation unless inject_invocation is on (2.19 has no such setting and
    always keeps it): the run turns it on, so that the invocation is there to be checked on both."""
    marker = "HF_HOME=/mnt/marker-7f3c\n"
    book = tmp_path / "play.yml"
    book.write_text(f"""---
- name: Write one file
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write it
      eagle3.trn2.host_files: {{files: [{{path: "{tmp_path}/vllm.env", content: {json.dumps(marker)}}}]}}
""")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_INJECT_INVOCATION="true")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(book)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (tmp_path / "vllm.env").read_text() == marker
    assert '"invocation"' in proc.stdout
    assert "marker-7f3c" not in proc.stdout + proc.stderr
    assert f"({len(marker)} bytes, sha256 {hashlib.sha256(marker.encode()).hexdigest()})" in proc.stdout
