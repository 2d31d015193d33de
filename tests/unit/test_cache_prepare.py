"""The boot-time choice of roles/vllm_service/files/eagle3_cache_prepare.py on lsblk output: after an
EC2 stop/start the instance store is blank again (and may be renamed), so the file system is made again."""
from __future__ import annotations


import pytest

from conftest import ROOT, load_file

prepare = load_file(ROOT / "roles/vllm_service/files/eagle3_cache_prepare.py", "prepare")
STORE = "Amazon EC2 NVMe Instance Storage"


def lsblk(*disks: dict) -> dict:
    return {"blockdevices": [dict({"type": "disk", "fstype": None, "label": None, "mountpoint": None}, **d) for d in disks]}


def test_our_file_system_is_mounted_as_it_is():
    got = prepare.pick(lsblk({"path": "/dev/nvme1n1", "model": STORE}, {"path": "/dev/nvme2n1", "model": STORE,
                                                                        "fstype": "ext4", "label": "eagle3-cache"}))
    assert got == ("/dev/nvme2n1", False)


def test_after_a_stop_start_the_blank_store_is_made_again():
    root = {"path": "/dev/nvme0n1", "model": "Amazon Elastic Block Store", "children": [{"path": "/dev/nvme0n1p1"}]}
    assert prepare.pick(lsblk(root, {"path": "/dev/nvme3n1", "model": STORE})) == ("/dev/nvme3n1", True)


def test_foreign_disks_are_never_chosen():
    with pytest.raises(SystemExit, match="no disk labelled eagle3-cache"):
        prepare.pick(lsblk({"path": "/dev/nvme1n1", "model": STORE, "fstype": "xfs", "label": "data"},
                           {"path": "/dev/nvme2n1", "model": "Amazon Elastic Block Store"}))


def run_existing(monkeypatch, mount, mounted: bool):
    """main() with --existing, `mountpoint -q` answering `mounted`, chown recorded (the user need not exist here)."""
    calls, owners = [], []
    monkeypatch.setattr(prepare.subprocess, "run",
                        lambda argv, **kw: calls.append(argv) or type("P", (), {"returncode": 0 if mounted else 1})())
    monkeypatch.setattr(prepare.shutil, "chown", lambda path, user, group: owners.append((path, user, group)))
    monkeypatch.setattr(prepare.sys, "argv", ["eagle3-cache-prepare", "--existing", str(mount), "eagle3"])
    return prepare.main(), calls, owners


def test_on_the_dlamis_mount_the_directory_is_made_again_and_nothing_formatted(monkeypatch, tmp_path):
    rc, calls, owners = run_existing(monkeypatch, tmp_path, mounted=True)
    assert rc == 0 and calls == [["mountpoint", "-q", str(tmp_path)]]  # no lsblk, mkfs or mount
    assert (tmp_path / "eagle3" / "vllm").is_dir() and owners == [(str(tmp_path / "eagle3" / "vllm"), "eagle3", "eagle3")]


def test_the_dlamis_mount_missing_stops_the_start_with_its_name(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="is not mounted"):
        run_existing(monkeypatch, tmp_path, mounted=False)
    assert not (tmp_path / "eagle3").exists()
