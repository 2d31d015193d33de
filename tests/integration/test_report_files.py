"""eagle3.trn2.report_files, the action that writes a run's report on the controller (verdict.json last).

Run through a real ansible-playbook (the action plugin as Ansible loads it), one playbook for all cases.
What must hold: files written only when their content differs (a rerun is changed=0), modes put right,
check mode writes nothing, a write that fails half-way leaves verdict.json "in progress" rather than the
stale OK verdict that was on disk, and bad arguments are refused by name.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, RUNS

STALE = json.dumps({"ok": True, "status": "complete", "run_id": "old"}) + "\n"
NEW = json.dumps({"ok": False, "status": "complete", "run_id": "r1"}, indent=4) + "\n"

PLAYBOOK = """---
- name: Exercise report_files
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: First write
      eagle3.trn2.report_files: {dir: "{{ base }}/fresh/r1", files: {report.md: "# r1\\n", summary.json: "{}\\n"}, verdict: "{{ new }}", run_id: r1}
      register: first
    - name: Same content again
      eagle3.trn2.report_files: {dir: "{{ base }}/fresh/r1", files: {report.md: "# r1\\n", summary.json: "{}\\n"}, verdict: "{{ new }}", run_id: r1}
      register: second
    - name: Check mode over a stale verdict
      eagle3.trn2.report_files: {dir: "{{ base }}/check", files: {report.md: "# new\\n"}, verdict: "{{ new }}", run_id: r1}
      check_mode: true
      diff: true
      register: checked
    - name: A file that cannot be written (report.html is a directory) over a stale OK verdict
      eagle3.trn2.report_files: {dir: "{{ base }}/broken", files: {report.md: "# new\\n", report.html: "<p>new</p>"}, verdict: "{{ new }}", run_id: r1}
      register: broken
      ignore_errors: true
    - name: Mode put right, content unchanged
      eagle3.trn2.report_files: {dir: "{{ base }}/mode", files: {report.md: "# same\\n"}, verdict: "{{ new }}", run_id: r1}
      register: moded
    - name: A file named verdict.json among the files
      eagle3.trn2.report_files: {dir: "{{ base }}/fresh/r1", files: {verdict.json: "{}"}, verdict: "{{ new }}"}
      register: named
      ignore_errors: true
    - name: A relative directory
      eagle3.trn2.report_files: {dir: results/r1, files: {}, verdict: "{{ new }}"}
      register: relative
      ignore_errors: true
    - name: The report's failure over a stale OK report whose report.html is a directory
      eagle3.trn2.report_files: {dir: "{{ base }}/failed", failure: "the report could not be made from h/e.json: <b>x</b>", run_id: r1}
      register: failed
      ignore_errors: true
    - name: The same failure again
      eagle3.trn2.report_files: {dir: "{{ base }}/failed", failure: "the report could not be made from h/e.json: <b>x</b>", run_id: r1}
      register: failed_again
      ignore_errors: true
    - name: The report's action refuses a misspelt option, naming it
      eagle3.trn2.run_report: {dir: "{{ base }}/fresh/r1", run_id: r1, hots: [h]}
      register: report_misspelt
      ignore_errors: true
    - name: The report's action refuses values of the wrong type, naming each
      eagle3.trn2.run_report: {dir: "{{ base }}/fresh/r1", run_id: r1, outlier_tolerance: ten, hosts: h}
      register: report_refused
      ignore_errors: true
    - name: Keep what each task returned
      ansible.builtin.copy:
        content: "{{ {'first': first, 'second': second, 'checked': checked, 'broken': broken, 'moded': moded,
                      'named': named, 'relative': relative, 'failed': failed, 'failed_again': failed_again,
                      'report_misspelt': report_misspelt, 'report_refused': report_refused} | to_json }}"
        dest: "{{ base }}/returned.json"
        mode: "0644"
"""


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("report_files")
    for name in ("check", "broken", "mode"):
        (base / name).mkdir()
        (base / name / "verdict.json").write_text(STALE)
    (base / "check" / "report.md").write_text("# old\n")
    (base / "broken" / "report.md").write_text("# old\n")
    (base / "broken" / "report.html").mkdir()
    (base / "mode" / "report.md").write_text("# same\n")
    (base / "mode" / "report.md").chmod(0o600)
    (base / "mode" / "verdict.json").write_text(NEW)
    (base / "failed").mkdir()
    for name, text in (("verdict.json", STALE), ("summary.json", STALE), ("report.md", "**Verdict: OK**\n"),
                       ("report.csv", "host,run_verdict\nh,OK\n")):
        (base / "failed" / name).write_text(text)
    (base / "failed" / "report.html").mkdir()
    book = base / "play.yml"
    book.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(book),
                           "-e", json.dumps({"base": str(base), "new": NEW})],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return base, json.loads((base / "returned.json").read_text())


def test_writes_then_a_rerun_changes_nothing(played):
    base, returned = played
    run = base / "fresh" / "r1"
    assert returned["first"]["changed"] and sorted(returned["first"]["written"]) == ["report.md", "summary.json", "verdict.json"]
    assert (run / "verdict.json").read_text() == NEW and (run / "report.md").read_text() == "# r1\n"
    assert oct((run / "report.md").stat().st_mode & 0o777) == "0o644"
    assert not returned["second"]["changed"] and returned["second"]["written"] == []
    assert not [p for p in run.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_check_mode_reports_and_writes_nothing(played):
    base, returned = played
    assert returned["checked"]["changed"] and sorted(returned["checked"]["written"]) == ["report.md", "verdict.json"]
    assert (base / "check" / "verdict.json").read_text() == STALE
    assert (base / "check" / "report.md").read_text() == "# old\n"
    diffs = {d["after_header"].rsplit("/", 1)[1]: d for d in returned["checked"]["diff"]}
    assert diffs["report.md"]["before"] == "# old\n" and diffs["report.md"]["after"] == "# new\n"


def test_a_failed_write_leaves_in_progress_not_the_stale_ok(played):
    base, returned = played
    assert returned["broken"]["failed"]
    verdict = json.loads((base / "broken" / "verdict.json").read_text())
    assert verdict == {"ok": False, "status": "in progress", "run_id": "r1"}
    assert not [p for p in (base / "broken").iterdir() if p.name.startswith(".")]


def test_modes_are_put_right_without_rewriting(played):
    base, returned = played
    assert returned["moded"]["changed"] and returned["moded"]["written"] == []
    assert oct((base / "mode" / "report.md").stat().st_mode & 0o777) == "0o644"


def test_bad_arguments_are_refused_by_name(played):
    _, returned = played
    assert returned["named"]["failed"] and "verdict.json" in returned["named"]["msg"]
    assert returned["relative"]["failed"] and "dir must be an absolute path" in returned["relative"]["msg"]
    # eagle3.trn2.run_report (bench_report's report): every wrong option named, before any file of the run is read
    misspelt = returned["report_misspelt"]
    assert misspelt["failed"] and "Invalid options for eagle3.trn2.run_report: hots" in misspelt["msg"], misspelt
    refused = returned["report_refused"]
    assert refused["failed"], refused
    for said in ('run_report.outlier_tolerance must be a number (got "ten")',
                 'run_report.hosts must be a list of host names (got "h")'):
        assert said in refused["msg"], refused["msg"]


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not strict JSON")


def test_the_reports_failure_replaces_every_file_and_names_what_it_cannot(played):
    """A stale OK report must not outlive a failure: the failure mode (the role's rescue) over a stale OK report:
    verdict.json and summary.json say "report failed" with the reason (strict JSON), report.md says FAILED with the
    reason escaped, report.csv is removed; a report.html that is a directory can be neither replaced nor removed, and
    the task's failure names it."""
    base, returned = played
    run = base / "failed"
    error = "the report could not be made from h/e.json: <b>x</b>"
    record = {"ok": False, "status": "report failed", "run_id": "r1", "error": error}
    for name in ("verdict.json", "summary.json"):
        assert json.loads((run / name).read_text(), parse_constant=_refuse) == record
    assert (run / "report.md").read_text().count("**Verdict: FAILED** (report failed)") == 1
    assert "the report could not be made from h/e.json: &lt;b&gt;x&lt;/b&gt;" in (run / "report.md").read_text()
    assert not (run / "report.csv").exists()
    assert returned["failed"]["failed"] and "report.html" in returned["failed"]["msg"]
    assert "could be neither replaced by the report's failure nor removed" in returned["failed"]["msg"]
    # only what is still wrong is tried again, and it is named as not written, not listed as written
    assert returned["failed_again"]["written"] == [] and returned["failed_again"]["not_written"] == ["report.html (Is a directory)"]
    assert returned["failed_again"]["stuck"] == ["report.html (Is a directory)"]
    assert not [p for p in run.iterdir() if p.name.startswith(".")]


# --- A failure that cannot be written is named, never said to say "report failed" (a reader would look for it) ------
FAILURE = "the report could not be made from h/e.json: x"
FAILURE_FILES = ("verdict.json", "summary.json", "report.md", "report.html")
UNWRITABLE = """---
- name: Exercise report_files where nothing can be written
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: The report's failure on a full file system over a stale OK report
      eagle3.trn2.report_files: {dir: "{{ full }}/r1", failure: "{{ failure }}", run_id: r1}
      register: full_disk
      ignore_errors: true
    - name: The report's failure on a read-only file system over a stale OK report
      eagle3.trn2.report_files: {dir: "{{ readonly }}/r1", failure: "{{ failure }}", run_id: r1}
      register: read_only
      ignore_errors: true
    - name: Keep what each task returned
      ansible.builtin.copy:
        content: "{{ {'full': full_disk, 'readonly': read_only} | to_json }}"
        dest: "{{ base }}/returned.json"
        mode: "0644"
"""


@pytest.fixture
def small_fs(tmp_path):
    """Mount small tmpfs file systems under tmp_path (root only: chmod does not stop root); unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = []

    def mount(name: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], check=True)
        mounted.append(path)
        return path

    try:
        yield mount
    finally:
        for path in mounted:
            subprocess.run(["umount", str(path)], check=True)


def fill(mount: Path) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={mount}/filler", "bs=64k"], capture_output=True)
    assert os.statvfs(mount).f_bavail == 0


def stale_ok_report(run: Path) -> None:
    run.mkdir()
    (run / "verdict.json").write_text(STALE)
    (run / "report.md").write_text("**Verdict: OK**\n")
    (run / "report.csv").write_text("host,run_verdict\nh,OK\n")


def test_a_failure_that_cannot_be_written_is_named_with_its_reason(small_fs, tmp_path):
    """ENOSPC: each failure file not written is named with the OSError's text, its stale version removed (no file says
    OK); EROFS: neither written nor removed, named as still showing an earlier report. Never "report failed"."""
    from test_result_checks import says_ok
    full, readonly = small_fs("full"), small_fs("readonly")
    stale_ok_report(full / "r1")
    fill(full)
    stale_ok_report(readonly / "r1")
    subprocess.run(["mount", "-o", "remount,ro", str(readonly)], check=True)
    book = tmp_path / "unwritable.yml"
    book.write_text(UNWRITABLE)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(book), "-e",
                           json.dumps({"base": str(tmp_path), "full": str(full), "readonly": str(readonly),
                                       "failure": FAILURE})],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    returned = json.loads((tmp_path / "returned.json").read_text())

    done = returned["full"]
    assert done["failed"] and done["msg"].startswith(f"report_files: the report's failure could not be written in "
                                                     f"{full}/r1: verdict.json (No space left on device)")
    assert "report failed" not in done["msg"]
    # removing the stale verdict frees a page: a later file may then fit; each is either written or named
    for name in FAILURE_FILES:
        assert (name in done["written"]) != (f"{name} (No space left on device)" in done["msg"]), (name, done)
        assert (name in done["written"]) == (full / "r1" / name).exists(), name
    assert done["not_written"] and done["stuck"] == []
    assert says_ok(full / "r1") == [] and not (full / "r1" / "report.csv").exists()
    assert "so there is no verdict.json" in done["msg"]

    stuck = returned["readonly"]
    assert stuck["failed"] and stuck["written"] == [] and "report failed" not in stuck["msg"]
    for name in ("verdict.json", "report.md", "report.csv"):  # the stale report's files, still there
        assert f"{name} (Read-only file system)" in ", ".join(stuck["stuck"]), stuck
    assert "could be neither replaced by the report's failure nor removed: it may still show an earlier report" in stuck["msg"]
    assert "so there is no summary.json, report.html there now" in stuck["msg"]


def test_the_role_never_says_a_failure_it_could_not_write_says_report_failed(small_fs, tmp_path):
    """The bench_report role over a run whose results directory is full: the report cannot be written, nor can its
    failure; the stop names every failure file with its reason and the command to recover, and never claims that
    every report file says "report failed"."""
    from test_report_render import report
    mount = small_fs("results")
    shutil.copytree(RUNS / "agree", mount / "agree")
    fill(mount)
    proc = report(mount, [{"run_id": "agree", "hosts": ["rehearsal-1"]}])
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0, out[-3000:]
    assert (f"the report's failure could not be written in {mount}/agree: "
            + ", ".join(f"{name} (No space left on device)" for name in FAILURE_FILES)) in out, out[-3000:]
    assert 'says "report failed"' not in out and "every report file of run" not in out
    assert f"make {mount}/agree writable or move aside what could not be removed, then report the run again: " \
           "ansible-playbook -i INVENTORY eagle3.trn2.report -e eagle3_run_id=agree" in out
    assert not [name for name in FAILURE_FILES if (mount / "agree" / name).exists()]
