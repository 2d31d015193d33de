"""Read-only EC2 questions amazon.aws 10.1.2 cannot ask: DescribeImages with deprecated AMIs included (the module
eagle3.trn2.ec2_ami_find) and whether, where and in what shape an instance type is offered in a region (the module
eagle3.trn2.ec2_instance_type_offering); each EC2 call through the client it is given."""
from __future__ import annotations

from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict


def request(owners: list[str], filters: dict) -> dict:
    """DescribeImages' arguments: the filters as AWS takes them, deprecated images included."""
    args = {"IncludeDeprecated": True,
            "Filters": [{"Name": k, "Values": [str(x) for x in (v if isinstance(v, list) else [v])]}
                        for k, v in sorted(filters.items())]}
    if owners:
        args["Owners"] = list(owners)
    return args


def images(pages: list[dict]) -> list[dict]:
    """The images of DescribeImages' answers, in ec2_ami_info's shape (snake case keys; tags kept as AWS gives them)."""
    return [camel_dict_to_snake_dict(image, ignore_list=["Tags"]) for page in pages for image in page.get("Images", [])]


def find_images(ec2, owners: list[str], filters: dict) -> list[dict]:
    """Every page of DescribeImages (deprecated images included), in ec2_ami_info's shape."""
    return images(list(ec2.get_paginator("describe_images").paginate(**request(owners, filters))))


def offering(ec2, itype: str) -> dict:
    """Whether the region offers the instance type, its zones, and per instance its Neuron devices, instance-store GB
    and vCPUs (0 each when not offered)."""
    region = ec2.describe_instance_type_offerings(
        LocationType="region", Filters=[{"Name": "instance-type", "Values": [itype]}])["InstanceTypeOfferings"]
    zones = ec2.describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [itype]}])["InstanceTypeOfferings"]
    neuron, storage, vcpus = 0, 0, 0
    if region:
        info = ec2.describe_instance_types(InstanceTypes=[itype])["InstanceTypes"][0]
        neuron = sum(d.get("Count", 0) for d in info.get("NeuronInfo", {}).get("NeuronDevices", []))
        storage = info.get("InstanceStorageInfo", {}).get("TotalSizeInGB", 0)
        vcpus = info.get("VCpuInfo", {}).get("DefaultVCpus", 0)
    return {"offered": bool(region), "zones": sorted(z["Location"] for z in zones),
            "neuron_devices": neuron, "instance_storage_gb": storage, "vcpus": vcpus}
