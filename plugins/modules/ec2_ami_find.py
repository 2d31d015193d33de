#!/usr/bin/python
"""Read-only: DescribeImages with deprecated AMIs included (amazon.aws's ec2_ami_info cannot ask for them)."""
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
from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict

try:
    import boto3
except ImportError:  # pragma: no cover - reported by the module
    boto3 = None


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
        pages = list(ec2.get_paginator("describe_images").paginate(**request(p["owners"], p["filters"])))
    except Exception as exc:  # botocore errors carry the AWS message
        module.fail_json(msg=f"cannot describe images in {p['region']}: {exc}")
    module.exit_json(changed=False, images=images(pages))


if __name__ == "__main__":
    main()
