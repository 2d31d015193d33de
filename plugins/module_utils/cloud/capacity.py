"""A fleet's launch into an On-Demand Capacity Reservation or a Capacity Block for ML: the reservation described and
judged against the fleet and the run's expected length, and the launch template that targets it (the module
eagle3.trn2.ec2_capacity_target; each EC2 call through the client it is given)."""
from __future__ import annotations

import datetime as dt

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
