"""eagle3_cache_disk: which disk holds the Neuron compile cache (vllm_service tasks/cache.yml).

The input is `lsblk -J -o NAME,PATH,MODEL,SERIAL,TYPE,FSTYPE,LABEL,MOUNTPOINT` as a trn2 host
prints it: an EBS root volume plus instance-store NVMe disks.
"""
from __future__ import annotations

import pytest
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud.infra import eagle3_cache_disk

STORE = "Amazon EC2 NVMe Instance Storage"


def disk(name, model=STORE, fstype=None, label=None, mountpoint=None, children=None):
    entry = {"name": name, "path": f"/dev/{name}", "model": model + "  ", "serial": f"AWS{name.upper()}",
             "type": "disk", "fstype": fstype, "label": label, "mountpoint": mountpoint}
    if children:
        entry["children"] = children
    return entry


ROOT = disk("nvme0n1", model="Amazon Elastic Block Store",
            children=[{"name": "nvme0n1p1", "path": "/dev/nvme0n1p1", "type": "part", "fstype": "ext4",
                       "label": "cloudimg-rootfs", "mountpoint": "/"}])


def lsblk(*disks):
    return {"blockdevices": [ROOT, *disks]}


def test_first_blank_instance_store_is_formatted():
    got = eagle3_cache_disk(lsblk(disk("nvme1n1"), disk("nvme2n1")))
    assert got == {"device": "/dev/nvme1n1", "format": True, "mounted": "", "reason": "instance-store NVMe (serial AWSNVME1N1)"}


def test_our_own_cache_disk_is_reused_not_reformatted():
    got = eagle3_cache_disk(lsblk(disk("nvme1n1", fstype="ext4", label="eagle3-cache", mountpoint="/mnt/eagle3-cache")))
    assert got["device"] == "/dev/nvme1n1" and got["format"] is False


def test_foreign_file_systems_are_left_alone():
    got = eagle3_cache_disk(lsblk(disk("nvme1n1", fstype="xfs", label="data", mountpoint="/data"),
                                  disk("nvme2n1", fstype="ext4", label="eagle3-cache", mountpoint="/elsewhere")))
    assert got["device"] == "" and "none usable" in got["reason"]
    assert "xfs file system labelled 'data'" in got["reason"] and "mounted at /elsewhere" in got["reason"]


def test_ebs_only_host_keeps_the_cache_on_the_root_volume():
    got = eagle3_cache_disk(lsblk())
    assert got == {"device": "", "format": False, "mounted": "", "reason": "no instance-store NVMe on this host"}


def test_disabled():
    assert eagle3_cache_disk(lsblk(disk("nvme1n1")), "")["device"] == ""


def test_given_device_is_checked():
    assert eagle3_cache_disk(lsblk(disk("nvme3n1", model="other")), "/dev/nvme3n1")["format"] is True
    with pytest.raises(ValueError, match="vllm_service_cache_device /dev/nvme9n1: no such disk"):
        eagle3_cache_disk(lsblk(), "/dev/nvme9n1")
    with pytest.raises(ValueError, match="it has partitions; eagle3 only formats blank disks"):
        eagle3_cache_disk(lsblk(), "/dev/nvme0n1")


# Where the Neuron DLAMI has mounted the instance store itself (/opt/dlami/nvme): one disk formatted whole, or the
# disks striped into one RAID volume (lsblk shows the md device as a child of each member). Either way every disk is
# "mounted" or holds a file system that is not ours, so the blank-disk rule alone found none and the cache went to the
# gp3 root; the DLAMI's mount is taken instead, and nothing is formatted or mounted.
def raid_member(name):
    return disk(name, fstype="linux_raid_member", label="dlami",
                children=[{"name": "md0", "path": "/dev/md0", "type": "raid0", "fstype": "ext4", "label": None,
                           "mountpoint": "/opt/dlami/nvme"}])


@pytest.mark.parametrize("disks", [
    [disk("nvme1n1", fstype="ext4", mountpoint="/opt/dlami/nvme")],
    [raid_member("nvme1n1"), raid_member("nvme2n1"), raid_member("nvme3n1"), raid_member("nvme4n1")],
], ids=["one-disk", "raid0"])
def test_the_dlamis_instance_store_mount_is_used(disks):
    got = eagle3_cache_disk(lsblk(*disks))
    assert got["mounted"] == "/opt/dlami/nvme" and got["device"] == "" and got["format"] is False
    assert "/opt/dlami/nvme" in got["reason"]
    # Without the DLAMI's mount, the same disks are not ours: none is taken, and the reason says why.
    assert eagle3_cache_disk(lsblk(*disks), dlami_mount="")["device"] == ""


def test_a_given_disk_wins_over_the_dlamis_mount():
    got = eagle3_cache_disk(lsblk(disk("nvme1n1", fstype="ext4", mountpoint="/opt/dlami/nvme"), disk("nvme2n1")),
                            "/dev/nvme2n1")
    assert got == {"device": "/dev/nvme2n1", "format": True, "mounted": "", "reason": "given"}
