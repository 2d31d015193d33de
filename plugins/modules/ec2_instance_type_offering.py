#!/usr/bin/python
"""Read-only probe: is an EC2 instance type offered in a region (and which zones)?
(plugins/module_utils/cloud/ec2.py)"""
from __future__ import annotations

DOCUMENTATION = r"""
module: ec2_instance_type_offering
short_description: Tell whether an instance type is offered in a region, and in which zones
description:
  - Calls DescribeInstanceTypeOfferings (by region and by availability zone) and
    DescribeInstanceTypes. Changes nothing. amazon.aws has no module for these calls.
options:
  instance_type: {description: Instance type, e.g. trn2.48xlarge., type: str, required: true}
  region: {description: AWS region., type: str, required: true}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Refuse a region without trn2
  eagle3.trn2.ec2_instance_type_offering:
    instance_type: trn2.48xlarge
    region: us-east-2
  register: offering
"""

RETURN = r"""
offered: {description: The type is offered in the region., type: bool, returned: always}
zones: {description: Availability zones offering it., type: list, elements: str, returned: always}
neuron_devices: {description: Neuron devices per instance (0 when none)., type: int, returned: always}
instance_storage_gb: {description: Total instance-store size in GB (0 when none)., type: int, returned: always}
vcpus: {description: "vCPUs per instance (VCpuInfo.DefaultVCpus; 0 when not offered): what EC2's vCPU quotas count.", type: int, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import ec2 as E

try:
    import boto3
except ImportError:  # pragma: no cover - reported by the module
    boto3 = None


def main() -> None:
    module = AnsibleModule(
        argument_spec={"instance_type": {"type": "str", "required": True},
                       "region": {"type": "str", "required": True}},
        supports_check_mode=True,
    )
    if boto3 is None:
        module.fail_json(msg="boto3 is required on the controller")
    p = module.params
    ec2 = boto3.client("ec2", region_name=p["region"])  # endpoint: the SDK's own (AWS_ENDPOINT_URL[_EC2] when set)
    try:
        found = E.offering(ec2, p["instance_type"])
    except Exception as exc:  # botocore errors carry the AWS message
        module.fail_json(msg=f"cannot query instance type offerings in {p['region']}: {exc}")
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
