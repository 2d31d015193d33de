"""The README's build-and-install commands, run where a user runs them: in a fresh clone of this checkout.

In a checkout, ansible.cfg's collections path starts with the checkout's own link
(collections/ansible_collections/eagle3/trn2), which ansible-galaxy counts as eagle3.trn2 already installed: a plain
`ansible-galaxy collection install eagle3-trn2-1.0.0.tar.gz` there prints "Nothing to do" and installs nothing. The
commands are read from README.md ("On trn2, from the installed collection"), so this test follows the README: run
one after the other in a `git clone` of HEAD with an empty HOME and nothing but the venv's commands on PATH, they must
install the built tarball outside the checkout, and `ansible-playbook eagle3.trn2.site --syntax-check` from another
directory, with the collections path where they installed it, must load that copy.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent
SECTION = "## On trn2, from the installed collection"


def readme_commands() -> list[str]:
    """The `ansible-galaxy collection ...` lines of the section's first shell block, as written."""
    section = (ROOT / "README.md").read_text().split(SECTION, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if re.search(r"\bansible-galaxy collection (build|install)\b", line)]


def sh(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_the_readme_builds_and_installs_the_collection_outside_the_checkout(tmp_path):
    commands = readme_commands()
    assert [bool(re.search(r"collection build\b", c)) for c in commands] == [True, False], commands
    clone, home, elsewhere = tmp_path / "clone", tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", head], check=True, timeout=120)
    link = clone / "collections/ansible_collections/eagle3/trn2"
    assert link.is_symlink() and link.resolve() == clone.resolve()
    # A user's shell: no ANSIBLE_* variable of the suite (so the clone's ansible.cfg is read, as in the checkout).
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "ANSIBLE_NOCOLOR": "1"}

    build = sh(commands[0], clone, env)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = Path(re.search(r"Created collection for eagle3\.trn2 at (\S+)", build.stdout).group(1))
    assert tarball.parent == clone and tarball.is_file()

    install = sh(commands[1], clone, env)
    out = install.stdout + install.stderr
    assert install.returncode == 0, out
    assert "Nothing to do" not in out, out
    installed = Path(re.search(r"Installing 'eagle3\.trn2:[^']+' to '([^']+)'", out).group(1))
    assert installed.resolve() != clone.resolve() and clone not in installed.resolve().parents, installed
    assert link.is_symlink() and link.resolve() == clone.resolve()  # the checkout's own link untouched

    # The installed copy is the built one: its MANIFEST.json and FILES.json are the tarball's.
    with tarfile.open(tarball) as tar:
        for name in ("MANIFEST.json", "FILES.json"):
            assert json.loads((installed / name).read_text()) == json.load(tar.extractfile(name)), name

    # From another directory (no ansible.cfg there), with the collections path where the README installed it.
    collections = installed.parents[2]
    assert installed == collections / "ansible_collections/eagle3/trn2"
    check = subprocess.run(["ansible-playbook", "eagle3.trn2.site", "--syntax-check"], cwd=elsewhere,
                           env=dict(env, ANSIBLE_COLLECTIONS_PATH=str(collections)), capture_output=True, text=True,
                           timeout=300, stdin=subprocess.DEVNULL)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"playbook: {installed / 'playbooks/site.yml'}" in check.stdout, check.stdout
    assert not os.path.exists(elsewhere / "ansible.cfg")
