#!/usr/bin/python
"""Target an On-Demand Capacity Reservation or a Capacity Block for ML when launching."""
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

try:
    import boto3
except ImportError:  # pragma: no cover - reported by the module
    boto3 = None

# AWS begins terminating a Capacity Block's instances this long before the block's end (EC2 User Guide, "Capacity
# Blocks for ML").
BLOCK_TERMINATION_LEAD = dt.timedelta(minutes=30)


def describe(ec2, reservation_id: str) -> dict:
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])["CapacityReservations"]
    if not found:
        raise ValueError(f"provision_ec2_capacity_reservation_id {reservation_id}: no such reservation")
    r = found[0]
    return {
        "id": r["CapacityReservationId"], "type": r.get("ReservationType", "default"), "state": r["State"],
        "availability_zone": r["AvailabilityZone"], "instance_type": r["InstanceType"],
        "total": r["TotalInstanceCount"], "available": r["AvailableInstanceCount"],
        "start_date": r["StartDate"].isoformat() if r.get("StartDate") else None,
        "end_date": r["EndDate"].isoformat() if r.get("EndDate") else None,
    }


def check(res: dict, instance_type: str, count: int, running: int, run_hours: float, now: dt.datetime) -> tuple[float | None, str]:
    """Refuse a reservation that cannot take the fleet; return (hours left, warning)."""
    rid = res["id"]
    if res["state"] == "scheduled":
        raise ValueError(f"{rid} ({res['type']}) starts at {res['start_date']}; launch after that")
    if res["state"] != "active":
        raise ValueError(f"{rid} is {res['state']}, not active")
    if res["instance_type"] != instance_type:
        raise ValueError(f"{rid} reserves {res['instance_type']}, the fleet is {instance_type} (provision_ec2_instance_type)")
    missing = count - running
    if missing > res["available"]:
        raise ValueError(f"{rid} has {res['available']} of {res['total']} instances available, "
                         f"the fleet needs {missing} more (provision_ec2_count {count})")
    if not res["end_date"]:
        return None, ""
    end = dt.datetime.fromisoformat(res["end_date"])
    left = (end - now).total_seconds() / 3600
    warning = ""
    if res["type"] == "capacity-block":
        # EC2 User Guide, "Capacity Blocks for ML": "Thirty minutes before the reservation expires, we begin to
        # terminate any instances that are still running in the Capacity Block."
        terminating = end - BLOCK_TERMINATION_LEAD
        wanted = (now + dt.timedelta(hours=run_hours) + BLOCK_TERMINATION_LEAD).isoformat(timespec="minutes")
        if now + dt.timedelta(hours=run_hours) >= terminating:
            raise ValueError(
                f"{rid} is a Capacity Block that ends at {res['end_date']}; AWS begins terminating its instances 30 "
                f"minutes before, at {terminating.isoformat()}, {max(left - 0.5, 0):.1f} h from now, and the run is "
                f"expected to take {run_hours:g} h (provision_ec2_run_hours): it would be terminated mid-run. "
                f"This run launches nothing into it. Use a block that ends at least provision_ec2_run_hours + 30 "
                f"minutes from now (after {wanted}), "
                f"or extend this one (aws ec2 describe-capacity-block-extension-offerings, "
                f"purchase-capacity-block-extension), or, if the run is shorter than {run_hours:g} h, set "
                f"provision_ec2_run_hours to its real length")
    elif left < run_hours:
        # EC2 User Guide, "Capacity Reservations" (and botocore's CapacityReservation.EndDate): at the end the reserved
        # capacity is released; instances already running keep running, billed at the On-Demand rate.
        warning = (f"{rid} (an On-Demand Capacity Reservation) ends at {res['end_date']}, in {left:.1f} h; the run is "
                   f"expected to take {run_hours:g} h (provision_ec2_run_hours): its instances keep running after the "
                   f"end (they are not terminated), billed at the On-Demand rate instead of the reservation's; "
                   f"extend the reservation's end date to avoid that")
    return round(left, 2), warning


def template_data(res: dict) -> dict:
    data = {"CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": res["id"]}}}
    if res["type"] == "capacity-block":
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return data


def ensure_template(ec2, name: str, data: dict, tags: dict, check_mode: bool) -> tuple[str, bool]:
    """Create the template, or a new default version when its data differs; (id, changed)."""
    try:
        current = ec2.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]
    except ec2.exceptions.ClientError as exc:
        if "NotFound" not in str(exc):
            raise
        current = []
    if not current:
        if check_mode:
            return "", True
        spec = [{"ResourceType": "launch-template", "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}]
        made = ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data,
                                          TagSpecifications=spec if tags else [])
        return made["LaunchTemplate"]["LaunchTemplateId"], True
    tid = current[0]["LaunchTemplateId"]
    version = ec2.describe_launch_template_versions(LaunchTemplateId=tid, Versions=["$Default"])["LaunchTemplateVersions"]
    if version and version[0]["LaunchTemplateData"] == data:
        return tid, False
    if not check_mode:
        new = ec2.create_launch_template_version(LaunchTemplateId=tid, LaunchTemplateData=data)
        ec2.modify_launch_template(LaunchTemplateId=tid,
                                   DefaultVersion=str(new["LaunchTemplateVersion"]["VersionNumber"]))
    return tid, True


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
        res = describe(ec2, p["reservation_id"])
        left, warning = check(res, p["instance_type"], p["count"], p["running"], p["run_hours"],
                              dt.datetime.now(dt.timezone.utc))
        tid, changed = ensure_template(ec2, p["template_name"], template_data(res), p["tags"], module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # botocore errors carry the AWS message
        module.fail_json(msg=f"capacity reservation {p['reservation_id']} in {p['region']}: {exc}")
    if warning:
        module.warn(warning)
    module.exit_json(changed=changed, reservation=res, hours_left=left, launch_template_id=tid, warning=warning)


if __name__ == "__main__":
    main()
