"""`ansible-playbook site.yml` from a fresh checkout, as a user runs it (the first command a reader types must work).

The checkout resolves as the collection eagle3.trn2 by itself: collections/ansible_collections/eagle3/trn2 is a
committed relative link to the checkout, on ansible.cfg's collections_path. Until 2026-12-03 only scripts/env.sh
made that link (in .ansible/, which is ignored), so a fresh clone failed with "the role 'eagle3.trn2.provision' was
not found". Here the checkout's files (what git tracks, plus new files not ignored: a clone of this tree) are copied
to an empty directory, and the playbook is run there with nothing but the venv's commands on PATH: no ANSIBLE_*
variable, no collections path of the suite, an empty HOME (so ~/.ansible/collections holds nothing). It must load
with the project's ansible.cfg (its progress callback included) and reach the preflight, which refuses a bad run id
before any host is contacted.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent


def copy_checkout(dest: Path) -> None:
    """The files a fresh clone of this tree has (symlinks kept as links)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src, dst = ROOT / name, dest / name
        if not src.is_symlink() and not src.exists():
            continue  # deleted in the work tree, not committed yet
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)


def test_site_yml_runs_from_a_fresh_checkout(tmp_path):
    clone, home = tmp_path / "clone", tmp_path / "home"
    home.mkdir()
    copy_checkout(clone)
    link = clone / "collections/ansible_collections/eagle3/trn2"
    assert link.is_symlink() and not Path(os.readlink(link)).is_absolute() and link.resolve() == clone.resolve()
    assert not (clone / ".ansible").exists()
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(["ansible-playbook", "site.yml", "-e", "eagle3_run_id=bad/id"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert "was not found" not in out and "couldn't resolve" not in out, out[-3000:]
    # The project's ansible.cfg was read: its stdout callback eagle3.trn2.eagle3_progress comes from the collection
    # (ansible-playbook stops at once when a configured stdout callback cannot be loaded), and the callbacks it
    # enables print (profile_tasks: "(0:00:00.031)       0:00:01.234 ****" before each task).
    assert "Error loading plugin" not in out and "Could not load" not in out, out[-3000:]
    assert re.search(r"\(\d+:\d\d:\d\d\.\d+\)\s+\d+:\d\d:\d\d\.\d+ \*+", out), out[-3000:]
    # The preflight ran and refused, naming the setting, with no change and no host contacted.
    assert proc.returncode != 0, out[-3000:]
    assert "Refused before any change:" in out and "eagle3_run_id" in out, out[-3000:]
    recap = re.findall(r"(\S+)\s*: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)", out)
    assert recap and all(changed == "0" and unreachable == "0" for _, changed, unreachable in recap), recap


def test_the_link_stays_out_of_the_built_collection(built):
    import tarfile

    with tarfile.open(built) as tar:
        names = tar.getnames()
    assert names and not [n for n in names if n == "collections" or n.startswith("collections/")]
