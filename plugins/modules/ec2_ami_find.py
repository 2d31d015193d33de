#!/usr/bin/python
"""Read-only: DescribeImages with deprecated AMIs included (amazon.aws's ec2_ami_info cannot ask for them)
(plugins/module_utils/cloud/ec2.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: ec2_ami_find
short_description: Find AMIs by owners and filters, deprecated ones included
description:
  - Calls DescribeImages with C(IncludeDeprecated=true) (all pages) and returns the images as amazon.aws's
    ec2_ami_info names their keys (snake case). AWS deprecates older DLAMIs (an image's C(DeprecationTime)); without
    the flag DescribeImages leaves them out, so the DLAMI of a pinned older Neuron release disappeared from the
    search. amazon.aws 10.1.2's ec2_ami_info has no option for it. Changes nothing.
options:
  region: {description: AWS region., type: str, required: true}
  owners: {description: Owners (account ids or aliases such as amazon)., type: list, elements: str, default: []}
  filters: {description: DescribeImages filters as a mapping of name to value or list of values., type: dict, default: {}}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Every DLAMI of the pattern, deprecated ones included
  eagle3.trn2.ec2_ami_find:
    region: us-east-2
    owners: [amazon]
    filters: {name: "Deep Learning AMI Neuron (Ubuntu 24.04)*", state: available}
  register: found
"""

RETURN = r"""
images:
  description: The images (image_id, name, description, creation_date, deprecation_time when deprecated, ...).
  type: list
  elements: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import ec2 as E

try:
    import boto3
except ImportError:  # pragma: no cover - reported by the module
    boto3 = None


def main() -> None:
    module = AnsibleModule(argument_spec={"region": {"type": "str", "required": True},
                                          "owners": {"type": "list", "elements": "str", "default": []},
                                          "filters": {"type": "dict", "default": {}}},
                           supports_check_mode=True)
    if boto3 is None:
        module.fail_json(msg="boto3 is required on the controller")
    p = module.params
    ec2 = boto3.client("ec2", region_name=p["region"])  # endpoint: the SDK's own (AWS_ENDPOINT_URL[_EC2] when set)
    try:
        found = E.find_images(ec2, p["owners"], p["filters"])
    except Exception as exc:  # botocore errors carry the AWS message
        module.fail_json(msg=f"cannot describe images in {p['region']}: {exc}")
    module.exit_json(changed=False, images=found)


if __name__ == "__main__":
    main()
