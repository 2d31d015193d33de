"""The fleet's infrastructure judged and worded: an admin CIDR's form, an S3 bucket's name, the disk for the Neuron
compile cache, a release's DLAMIs, the advice on a capacity refusal, and the dead-man switch's user data and the
teardown decision at the end of a run."""
from __future__ import annotations

import ipaddress
import re
import time
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import deadman as _deadman


def eagle3_is_cidr(value: Any) -> bool:
    """True for an IPv4/IPv6 network in CIDR form ("203.0.113.0/24"); host bits must be zero."""
    if not isinstance(value, str) or "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        return False
    return True


# The widest network a security-group rule may admit: a /8 (IPv4: 10.0.0.0/8, a company's whole private range) or a
# /16 (IPv6). 0.0.0.0/0 is the whole internet; 0.0.0.0/1 + 128.0.0.0/1 is too, written in two halves.
WIDEST_PREFIX = {4: 8, 6: 16}


def eagle3_cidrs_too_wide(values: Any) -> list[str]:
    """The entries of a list of CIDRs (or one CIDR) that admit too much: wider than WIDEST_PREFIX, or, when the
    networks together cover a whole address family, the sentence saying so. Entries that are not CIDRs are left to
    eagle3_is_cidr; the result is empty when nothing is too wide."""
    items = [values] if isinstance(values, str) else list(values or [])
    networks: list[Any] = []
    wide: list[str] = []
    for item in items:
        if not eagle3_is_cidr(item):
            continue
        network = ipaddress.ip_network(item, strict=True)
        networks.append(network)
        if network.prefixlen < WIDEST_PREFIX[network.version]:
            wide.append(str(item))
    for version, everything in ((4, ipaddress.ip_network("0.0.0.0/0")), (6, ipaddress.ip_network("::/0"))):
        mine = [n for n in networks if n.version == version]
        if mine and list(ipaddress.collapse_addresses(mine)) == [everything] and not wide:
            wide.append(f"together {', '.join(str(n) for n in mine)} cover all of {everything}")
    return wide


INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"


CACHE_LABEL = "eagle3-cache"


# Where the Neuron DLAMI mounts the instance store itself (its users keep caches there): a cache goes there when it
# is mounted, rather than onto the gp3 root because no disk is left blank.
DLAMI_NVME = "/opt/dlami/nvme"


def _mounted_at(devices: list[dict[str, Any]], where: str) -> dict[str, Any] | None:
    """The block device (a disk, a partition, a RAID or LVM volume: any depth) mounted at `where`."""
    for device in devices:
        if device.get("mountpoint") == where or where in (device.get("mountpoints") or []):
            return device
        found = _mounted_at(device.get("children") or [], where)
        if found:
            return found
    return None


def eagle3_cache_disk(lsblk: dict[str, Any], wanted: str = "auto", mount: str = "/mnt/eagle3-cache",
                      dlami_mount: str = DLAMI_NVME) -> dict[str, Any]:
    """Pick the disk for the compile cache from `lsblk -J -o NAME,PATH,MODEL,SERIAL,TYPE,FSTYPE,LABEL,MOUNTPOINT`.

    wanted "auto": where the DLAMI mounted the instance store (`dlami_mount`, any device mounted there: the
    cache goes in a directory of it, nothing is formatted or mounted); else the first instance-store NVMe disk
    (model "Amazon EC2 NVMe Instance Storage") that has no partitions and is blank, or already ours (label
    eagle3-cache, unmounted or mounted at `mount`); a /dev path: that disk, under the same conditions; "": none.
    Returns {"device": path or "", "format": bool, "mounted": the DLAMI's mount or "", "reason": text}.
    """
    if not wanted:
        return {"device": "", "format": False, "mounted": "", "reason": "disabled (vllm_service_cache_device is empty)"}
    if wanted == "auto" and dlami_mount:
        there = _mounted_at(lsblk.get("blockdevices", []), dlami_mount)
        if there:
            return {"device": "", "format": False, "mounted": dlami_mount,
                    "reason": f"the instance store the DLAMI mounted at {dlami_mount} ({there.get('path') or there.get('name')})"}
    picked = _pick_cache_disk(lsblk, wanted, mount)
    return {**picked, "mounted": ""}


def _pick_cache_disk(lsblk: dict[str, Any], wanted: str, mount: str) -> dict[str, Any]:
    """eagle3_cache_disk's choice among the disks themselves (blank or ours)."""
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


_SDK_IN_DESCRIPTION = re.compile(r"Neuron SDK (\d+(?:\.\d+)+)")


def neuron_sdk_of_ami(description: Any) -> str:
    """The Neuron SDK release an AMI's description names ("... Neuron SDK 2.32.0 ..." -> "2.32.0"), else ""."""
    found = _SDK_IN_DESCRIPTION.search(description) if isinstance(description, str) else None
    return found.group(1) if found else ""


def dlamis_of_release(images: list[dict[str, Any]], release: str) -> list[dict[str, Any]]:
    """The images whose description names Neuron SDK `release`, oldest first (the newest is the last)."""
    return sorted((i for i in images if neuron_sdk_of_ami(i.get("description")) == release),
                  key=lambda i: str(i.get("creation_date", "")))


# EC2's error codes for "no capacity of this type here now" (RunInstances); botocore renders them as
# "An error occurred (InsufficientInstanceCapacity) when calling the RunInstances operation: We currently do not have
# sufficient trn2.48xlarge capacity in the Availability Zone you requested (us-east-2a). ..." (botocore
# exceptions.ClientError's message format; the text after the colon is EC2's).
CAPACITY_CODES = ("InsufficientInstanceCapacity", "InsufficientCapacityOnHost", "InsufficientReservedInstanceCapacity")
# The account's vCPU quota for the type's family is too low: "An error occurred (VcpuLimitExceeded) when calling the
# RunInstances operation: You have requested more vCPU capacity than your current vCPU limit of 0 allows for the
# instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request
# to request an adjustment to this limit." For trn2 (and trn1) the bucket is the Service Quotas quota below.
QUOTA_CODE = "VcpuLimitExceeded"
TRN_QUOTA = "Running On-Demand Trn instances"
# ansible-core's words when a task outlives its `async` seconds (executor/task_executor.py, _poll_async_result): the
# launch is bounded that way (provision_ec2_launch_timeout), since amazon.aws retries capacity errors without a word.
ASYNC_TIMEOUT = "async task did not complete within the requested time"
# amazon.aws 10.1.2 retries RunInstances' InsufficientInstanceCapacity with AWSRetry.jittered_backoff's defaults
# (module_utils/ec2.py run_instances; module_utils/cloud.py): 10 tries, each wait uniform in [0, min(3 * 2**n, 60)] s.
AMAZON_AWS_CAPACITY_TRIES = 10
AMAZON_AWS_CAPACITY_MAX_WAIT = sum(min(3 * 2 ** n, 60) for n in range(AMAZON_AWS_CAPACITY_TRIES - 1))  # 333 s


def _alternatives(instance_type: str, region: str, reservation_id: str) -> str:
    advice = ("trn2.48xlarge is mostly had through reservations: buy a Capacity Block for ML (EC2 console > Capacity "
              "Reservations > Capacity Blocks, or aws ec2 describe-capacity-block-offerings) and set "
              "provision_ec2_capacity_reservation_id: cr-...; ")
    if reservation_id:
        advice += f"(the reservation {reservation_id} given has no free instance for it: check its state and count); "
    return advice + ("or try another availability zone (provision_ec2_subnet_id of a subnet there), another region "
                     f"offering {instance_type} (provision_ec2_region / EAGLE3_AWS_REGION, now {region}), or retry "
                     "later; the rerun launches only what is missing.")


def eagle3_capacity_advice(message: Any, instance_type: str, region: str, zone: str = "", reservation_id: str = "",
                           launched: Any = None, timeout: Any = 0, fleet_vcpus: Any = 0) -> str:
    """The operator's options when a launch failed for capacity, a vCPU quota or the launch's time bound, else ""
    (another failure keeps its own message). `timeout` is provision_ec2_launch_timeout, `fleet_vcpus` the vCPUs the
    whole fleet needs (provision_ec2_count x the type's vCPUs)."""
    text = message if isinstance(message, str) else str(message or "")
    ids = [str(i) for i in (launched or [])]
    so_far = ("Launched so far: " + ", ".join(ids) + ". ") if ids else "Nothing was launched. "
    where = f" in {zone}" if zone else ""
    if QUOTA_CODE in text:
        need = f" (this fleet needs {fleet_vcpus}, more if other Trn instances run there)" if fleet_vcpus else ""
        return (f"EC2 refused {instance_type}{where} ({region}): the account's vCPU quota for it is too low "
                f"({QUOTA_CODE}). {so_far}The quota is \"{TRN_QUOTA}\", in vCPUs{need}: request an increase "
                f"(Service Quotas console > AWS services > Amazon Elastic Compute Cloud (Amazon EC2) > \"{TRN_QUOTA}\" "
                f"> Request increase at account level, in {region}; aws service-quotas list-service-quotas "
                f"--service-code ec2 lists it with its code), or launch into a Capacity Block for ML "
                f"(provision_ec2_capacity_reservation_id: cr-...). A new account's quota is often 0. Retrying does not "
                f"help until the quota is raised. EC2 said: " + text[-400:])
    if ASYNC_TIMEOUT in text:
        return (f"The launch of {instance_type}{where} ({region}) did not finish within provision_ec2_launch_timeout "
                f"({timeout} s) and was stopped. amazon.aws retries EC2's capacity errors "
                f"(InsufficientInstanceCapacity) without a word ({AMAZON_AWS_CAPACITY_TRIES} tries, up to "
                f"{AMAZON_AWS_CAPACITY_MAX_WAIT} s of waits), so EC2 most likely has no {instance_type} "
                f"capacity there now. {so_far}" + _alternatives(instance_type, region, reservation_id)
                + " To wait longer for capacity, raise provision_ec2_launch_timeout (seconds).")
    code = next((c for c in CAPACITY_CODES if c in text), None)
    if code is None:
        return ""
    return (f"EC2 has no {instance_type} capacity for this fleet{where} ({region}) now ({code}). {so_far}"
            + _alternatives(instance_type, region, reservation_id) + " EC2 said: " + text[-400:])


def eagle3_launch_notice(missing: Any, instance_type: str, region: str, zone: str = "", reservation_id: str = "",
                         timeout: Any = 0) -> str:
    """What the launch is about to do and how long it may stay silent, said before it starts ("" when nothing is
    missing)."""
    if int(missing or 0) <= 0:
        return ""
    into = f"into {reservation_id}" if reservation_id else "On-Demand"
    where = f" in {zone}" if zone else ""
    return (f"launching {missing} x {instance_type} {into}{where} ({region}). If EC2 has no capacity for it "
            f"(InsufficientInstanceCapacity), amazon.aws retries for a few minutes without output "
            f"({AMAZON_AWS_CAPACITY_TRIES} tries, up to {AMAZON_AWS_CAPACITY_MAX_WAIT} s of waits); the launch is "
            f"stopped after provision_ec2_launch_timeout ({timeout} s) and the run then names the alternatives. "
            f"A vCPU quota too low for the type ({QUOTA_CODE}) stops it at once.")


def eagle3_deadman_user_data(hours: Any) -> str:
    """The cloud-config that arms the dead-man switch at first boot, `hours` (the time the host must have) from now."""
    return _deadman.cloud_config(_deadman.next_deadline(time.time(), None, float(hours)))


def eagle3_teardown_due(teardown: Any, verdict: Any) -> bool:
    """Whether the end of a run tears its fleet down (eagle3_teardown, the run's verdict.json or None)."""
    ok = isinstance(verdict, dict) and verdict.get("ok") is True
    return teardown == "always" or (teardown == "on_success" and ok)


def eagle3_deadman_lines(switches: dict[str, Any], provider: str = "ec2") -> list[str]:
    """One line per host: when its switch fires and how to keep it, or that nothing will stop it."""
    out = []
    for host, switch in sorted((switches or {}).items()):
        if not isinstance(switch, dict) or "armed" not in switch:
            out.append(f"{host}: its dead-man switch was not set in this run (no host phase ran there)")
        elif switch["armed"]:
            out.append(f"{host}: powers itself off at {switch['deadline']}"
                       + (" and terminates" if provider == "ec2" else "")
                       + f" unless a run pushes it; to keep it, run `{switch['keep']}` on it or rerun with "
                       "-e eagle3_deadman=false")
        else:
            out.append(f"{host}: no dead-man switch (it serves, or eagle3_deadman is false): it runs until "
                       "eagle3.trn2.teardown")
    return out
