#!/usr/bin/env python3
"""Prepare the Neuron compile cache on instance-store NVMe before the vLLM units start.

Instance store is blank again after an EC2 stop/start (and its device names may change), so the
fstab entry (nofail) finds nothing and a unit whose ReadWritePaths= names a missing directory fails
with 226/NAMESPACE. Run as a oneshot unit the vLLM units require: mount the disk labelled
eagle3-cache, or make that file system again on the first blank instance-store disk, then create
the cache directory for the service user. Usage: eagle3_cache_prepare.py MOUNT USER

Where the Neuron DLAMI mounts the instance store itself (/opt/dlami/nvme, made anew and empty after a stop/start):
eagle3_cache_prepare.py --existing MOUNT USER checks that MOUNT is mounted (the unit orders itself after it with
RequiresMountsFor=) and makes MOUNT/eagle3/vllm for the service user; it formats and mounts nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

LABEL = "eagle3-cache"
INSTANCE_STORE = "Amazon EC2 NVMe Instance Storage"


def pick(lsblk: dict[str, Any]) -> tuple[str, bool]:
    """(device, needs a file system) from `lsblk -J -o PATH,MODEL,TYPE,FSTYPE,LABEL,MOUNTPOINT`."""
    disks = [d for d in lsblk.get("blockdevices", []) if d.get("type") == "disk"]
    for disk in disks:
        if disk.get("label") == LABEL:
            return disk["path"], False
    for disk in disks:
        if ((disk.get("model") or "").strip() == INSTANCE_STORE and not disk.get("children")
                and not disk.get("fstype") and not disk.get("mountpoint")):
            return disk["path"], True
    raise SystemExit(f"no disk labelled {LABEL} and no blank instance-store NVMe disk: the compile cache has nowhere to go")


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def main() -> int:
    existing = sys.argv[1:2] == ["--existing"]
    mount, user = sys.argv[1 + existing], sys.argv[2 + existing]
    if existing:
        if subprocess.run(["mountpoint", "-q", mount]).returncode != 0:
            raise SystemExit(f"{mount} is not mounted: the DLAMI's instance store is missing, the compile cache has nowhere to go")
        base = os.path.join(mount, "eagle3")
        os.makedirs(base, mode=0o755, exist_ok=True)
        cache = os.path.join(base, "vllm")
        os.makedirs(cache, mode=0o750, exist_ok=True)
        shutil.chown(cache, user, user)
        print(f"compile cache ready at {cache}")
        return 0
    if subprocess.run(["mountpoint", "-q", mount]).returncode != 0:
        device, blank = pick(json.loads(run("lsblk", "-J", "-o", "PATH,MODEL,TYPE,FSTYPE,LABEL,MOUNTPOINT")))
        if blank:
            print(f"{device} is blank (instance store after a stop/start): making ext4 {LABEL}")
            run("mkfs.ext4", "-q", "-L", LABEL, device)
        os.makedirs(mount, exist_ok=True)
        run("mount", "-o", "defaults,noatime", f"LABEL={LABEL}", mount)
    cache = os.path.join(mount, "vllm")
    os.makedirs(cache, mode=0o750, exist_ok=True)
    shutil.chown(cache, user, user)
    print(f"compile cache ready at {cache}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
