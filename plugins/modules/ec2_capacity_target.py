#!/usr/bin/python
"""Target an On-Demand Capacity Reservation or a Capacity Block for ML when launching
(plugins/module_utils/cloud/capacity.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: ec2_capacity_target
short_description: Describe a capacity reservation and keep a launch template that targets it
description:
  - Describes the reservation (DescribeCapacityReservations) and checks it can take the fleet
    (state, instance type, available instances), and reports its end time.
  - A Capacity Block that ends within run_hours + 30 minutes is refused (AWS begins terminating its
    instances 30 minutes before it ends); an On-Demand Capacity Reservation that ends within run_hours
    gives a warning (its instances keep running after the end, billed at the On-Demand rate).
  - Keeps a launch template whose default version holds only the targeting
    (CapacityReservationSpecification, and InstanceMarketOptions MarketType capacity-block for a
    Capacity Block); amazon.aws.ec2_instance launches from it with everything else as usual.
    amazon.aws 10.1.2 cannot express either (ec2_instance has no capacity option,
    ec2_launch_template no CapacityReservationSpecification).
options:
  reservation_id: {description: The reservation (cr-...)., type: str, required: true}
  instance_type: {description: The fleet's instance type., type: str, required: true}
  count: {description: Instances the fleet wants from the reservation (already running ones included)., type: int, required: true}
  running: {description: Fleet instances already running in the reservation., type: int, default: 0}
  run_hours: {description: Hours the run is expected to take after launch (the end-time refusal or warning)., type: float, default: 2}
  template_name: {description: Name of the launch template to keep., type: str, required: true}
  tags: {description: Tags of the launch template., type: dict, default: {}}
  region: {description: AWS region., type: str, required: true}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Launch into a Capacity Block
  eagle3.trn2.ec2_capacity_target:
    reservation_id: cr-0123456789abcdef0
    instance_type: trn2.48xlarge
    count: 2
    template_name: eagle3-bench-default-capacity
    region: us-east-2
  register: capacity
"""

RETURN = r"""
reservation: {description: "id, type (default or capacity-block), state, availability_zone, instance_type, total, available, start_date, end_date", type: dict, returned: always}
hours_left: {description: Hours until the reservation ends (null when it has no end)., type: float, returned: always}
launch_template_id: {description: The launch template to launch from., type: str, returned: always}
warning: {description: Set when the run would outlast an On-Demand Capacity Reservation (a Capacity Block is refused instead)., type: str, returned: always}
"""

import datetime as dt

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import capacity as C

try:
    import boto3
except ImportError:  # pragma: no cover - reported by the module
    boto3 = None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "reservation_id": {"type": "str", "required": True},
            "instance_type": {"type": "str", "required": True},
            "count": {"type": "int", "required": True},
            "running": {"type": "int", "default": 0},
            "run_hours": {"type": "float", "default": 2},
            "template_name": {"type": "str", "required": True},
            "tags": {"type": "dict", "default": {}},
            "region": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    if boto3 is None:
        module.fail_json(msg="boto3 is required on the controller")
    p = module.params
    ec2 = boto3.client("ec2", region_name=p["region"])  # endpoint: the SDK's own (AWS_ENDPOINT_URL[_EC2] when set)
    try:
        res = C.describe(ec2, p["reservation_id"])
        left, warning = C.check(res, p["instance_type"], p["count"], p["running"], p["run_hours"],
                                dt.datetime.now(dt.timezone.utc))
        tid, changed = C.ensure_template(ec2, p["template_name"], C.template_data(res), p["tags"], module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # botocore errors carry the AWS message
        module.fail_json(msg=f"capacity reservation {p['reservation_id']} in {p['region']}: {exc}")
    if warning:
        module.warn(warning)
    module.exit_json(changed=changed, reservation=res, hours_left=left, launch_template_id=tid, warning=warning)


if __name__ == "__main__":
    main()
