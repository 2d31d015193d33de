"""Filters about the infrastructure: an admin CIDR's form and the disk for the Neuron compile cache."""
from __future__ import annotations

import ipaddress
from typing import Any


DOCUMENTATION = r"""
  name: infra
  short_description: CIDR check and compile-cache disk choice
  description:
    - C(eagle3_is_cidr) is true for an IPv4/IPv6 network in CIDR form with zero host bits.
    - C(eagle3_cache_disk) picks the instance-store NVMe disk for the compile cache from lsblk's JSON.
"""


def eagle3_is_cidr(value: Any) -> bool:
    """True for an IPv4/IPv6 network in CIDR form ("203.0.113.0/24"); host bits must be zero."""
    if not isinstance(value, str) or "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        return False
    return True


INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"


CACHE_LABEL = "eagle3-cache"


def eagle3_cache_disk(lsblk: dict[str, Any], wanted: str = "auto", mount: str = "/mnt/eagle3-cache") -> dict[str, Any]:
    """Pick the disk for the compile cache from `lsblk -J -o NAME,PATH,MODEL,SERIAL,TYPE,FSTYPE,LABEL,MOUNTPOINT`.

    wanted "auto": the first instance-store NVMe disk (model "Amazon EC2 NVMe Instance Storage")
    that has no partitions and is blank, or already ours (label eagle3-cache, unmounted or mounted
    at `mount`); a /dev path: that disk, under the same conditions; "": none.
    Returns {"device": path or "", "format": bool, "reason": text}.
    """
    if not wanted:
        return {"device": "", "format": False, "reason": "disabled (vllm_service_cache_device is empty)"}
    disks = [d for d in lsblk.get("blockdevices", []) if d.get("type") == "disk"]

    def usable(disk: dict[str, Any]) -> str | None:
        if disk.get("children"):
            return "it has partitions"
        if disk.get("fstype") and disk.get("label") != CACHE_LABEL:
            return f"it holds a {disk['fstype']} file system labelled {disk.get('label')!r}, not {CACHE_LABEL!r}"
        if disk.get("mountpoint") not in (None, "", mount):
            return f"it is mounted at {disk['mountpoint']}"
        return None

    if wanted != "auto":
        disk = next((d for d in disks if wanted in (d.get("path"), "/dev/" + str(d.get("name")))), None)
        if disk is None:
            raise ValueError(f"vllm_service_cache_device {wanted}: no such disk on the host")
        problem = usable(disk)
        if problem:
            raise ValueError(f"vllm_service_cache_device {wanted}: {problem}; eagle3 only formats blank disks")
        return {"device": disk.get("path") or wanted, "format": not disk.get("fstype"), "reason": "given"}
    stores = [d for d in disks if (d.get("model") or "").strip() == INSTANCE_STORE_MODEL]
    for disk in stores:
        if usable(disk) is None:
            return {"device": disk["path"], "format": not disk.get("fstype"),
                    "reason": f"instance-store NVMe (serial {(disk.get('serial') or '').strip()})"}
    if stores:
        return {"device": "", "format": False,
                "reason": "instance-store NVMe present but none usable: "
                          + "; ".join(f"{d['path']}: {usable(d)}" for d in stores)}
    return {"device": "", "format": False, "reason": "no instance-store NVMe on this host"}


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_is_cidr": eagle3_is_cidr, "eagle3_cache_disk": eagle3_cache_disk}
