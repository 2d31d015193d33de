"""ec2_capacity_target (plugins/module_utils/cloud/capacity.py): the capacity reservation / Capacity Block logic.

moto does not implement DescribeCapacityReservations, so the EC2 calls are checked with botocore's
Stubber, which validates every request and response against the EC2 API model.

The recorded answers' shape: botocore 1.44.8 (the venv's) botocore/data/ec2/2016-11-15/service-2.json, shape
CapacityReservation (ReservationType default | capacity-block, State, EndDateType unlimited | limited, EndDate "the
date and time the Capacity Reservation expires"), and the EC2 User Guide: "Capacity Blocks for ML" (a block starts and
ends at 11:30 UTC; "Thirty minutes before the reservation expires, we begin to terminate any instances that are still
running in the Capacity Block") and "Capacity Reservations" (at a reservation's end its instances keep running, billed
at the On-Demand rate).
"""
from __future__ import annotations

import datetime as dt

import boto3
import pytest
from botocore.stub import ANY, Stubber

from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import capacity as module

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def reservation(**over):
    r = {"CapacityReservationId": "cr-0123456789abcdef0", "InstanceType": "trn2.48xlarge",
         "AvailabilityZone": "us-east-2b", "TotalInstanceCount": 2, "AvailableInstanceCount": 2,
         "State": "active", "ReservationType": "capacity-block",
         "StartDate": NOW - dt.timedelta(hours=1), "EndDate": NOW + dt.timedelta(hours=23)}
    r.update(over)
    return r


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_capacity_block_is_described_and_checked(ec2):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [reservation()]},
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    res = module.describe(client, "cr-0123456789abcdef0")
    assert res["type"] == "capacity-block" and res["availability_zone"] == "us-east-2b"
    left, warning = module.check(res, "trn2.48xlarge", 2, 0, 2, NOW)
    assert left == 23 and warning == ""
    assert module.template_data(res) == {
        "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}},
        "InstanceMarketOptions": {"MarketType": "capacity-block"}}


# A Capacity Block as DescribeCapacityReservations answers for it (every member the service model names that a block
# carries; the ids are made up), ending at 11:30 UTC as every block does.
BLOCK_END = dt.datetime(2026, 11, 30, 14, 30, tzinfo=dt.timezone.utc)


def block(end: dt.datetime = BLOCK_END, **over):
    r = reservation(
        OwnerId="123456789012",
        CapacityReservationArn="arn:aws:ec2:us-east-2:123456789012:capacity-reservation/cr-0123456789abcdef0",
        AvailabilityZoneId="use2-az2", InstancePlatform="Linux/UNIX", Tenancy="default", EbsOptimized=True,
        EphemeralStorage=False, EndDateType="limited", InstanceMatchCriteria="targeted",
        CreateDate=NOW - dt.timedelta(days=2), Tags=[], StartDate=end - dt.timedelta(days=1), EndDate=end)
    r.update(over)
    return r


def described(ec2, answer: dict) -> dict:
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [answer]},
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    return module.describe(client, "cr-0123456789abcdef0")


@pytest.mark.parametrize("minutes_left", [150, 149, 120, 31, 5])
def test_a_block_ending_within_the_run_plus_30_minutes_is_refused(ec2, minutes_left):
    """run_hours 2: AWS starts terminating 30 minutes before the end, so a block must last at least 2 h 30 min more."""
    end = NOW + dt.timedelta(minutes=minutes_left)
    res = described(ec2, block(end))
    with pytest.raises(ValueError) as refused:
        module.check(res, "trn2.48xlarge", 2, 0, 2, NOW)
    said = str(refused.value)
    for text in (f"ends at {end.isoformat()}",                                      # the end
                 f"at {(end - dt.timedelta(minutes=30)).isoformat()}",             # the start of termination
                 "provision_ec2_run_hours", "expected to take 2 h",               # the setting and its value
                 "after 2026-11-30T14:30+00:00",                                   # what a block must outlast
                 "purchase-capacity-block-extension", "launches nothing"):
        assert text in said, (text, said)
    assert "Capacity Block" in said and "terminat" in said


def test_a_block_lasting_the_run_plus_30_minutes_is_taken_without_warning(ec2):
    res = described(ec2, block(NOW + dt.timedelta(minutes=151)))
    assert module.check(res, "trn2.48xlarge", 2, 0, 2, NOW) == (2.52, "")
    res = described(ec2, block(NOW + dt.timedelta(hours=5)))
    assert module.check(res, "trn2.48xlarge", 2, 0, 4.4, NOW) == (5.0, "")
    with pytest.raises(ValueError, match="expected to take 4.5 h"):
        module.check(res, "trn2.48xlarge", 2, 0, 4.5, NOW)


def test_an_on_demand_reservation_ending_before_the_run_is_warned_about_not_refused(ec2):
    """An ordinary reservation with an end date: its instances keep running after it, billed On-Demand."""
    end = NOW + dt.timedelta(minutes=90)
    res = described(ec2, block(end, ReservationType="default"))
    left, warning = module.check(res, "trn2.48xlarge", 2, 0, 2, NOW)
    assert left == 1.5
    for text in (f"ends at {end.isoformat()}", "in 1.5 h", "provision_ec2_run_hours", "On-Demand Capacity Reservation",
                 "keep running", "not terminated", "On-Demand rate"):
        assert text in warning, (text, warning)
    assert "reclaimed" not in warning and "Capacity Block" not in warning
    # no 30-minute lead for an ordinary reservation: 2 h 10 min left for a 2 h run is enough
    res = described(ec2, block(NOW + dt.timedelta(minutes=130), ReservationType="default"))
    assert module.check(res, "trn2.48xlarge", 2, 0, 2, NOW)[1] == ""


def test_on_demand_reservation_without_end_has_no_market_type():
    r = {"id": "cr-2", "type": "default", "state": "active", "availability_zone": "us-east-2a",
         "instance_type": "trn2.48xlarge", "total": 4, "available": 4, "start_date": None, "end_date": None}
    assert module.check(r, "trn2.48xlarge", 4, 0, 2, NOW) == (None, "")
    assert "InstanceMarketOptions" not in module.template_data(r)


@pytest.mark.parametrize(("over", "count", "running", "message"), [
    ({"State": "scheduled"}, 1, 0, "starts at"),
    ({"State": "expired"}, 1, 0, "is expired, not active"),
    ({"InstanceType": "trn1.32xlarge"}, 1, 0, "reserves trn1.32xlarge, the fleet is trn2.48xlarge"),
    ({"AvailableInstanceCount": 1}, 3, 1, "has 1 of 2 instances available, the fleet needs 2 more"),
])
def test_unusable_reservations_are_refused(ec2, over, count, running, message):
    client, stub = ec2
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [reservation(**over)]},
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    res = module.describe(client, "cr-0123456789abcdef0")
    with pytest.raises(ValueError, match=message):
        module.check(res, "trn2.48xlarge", count, running, 2, NOW)


def test_template_is_created_once_then_left_alone(ec2):
    client, stub = ec2
    data = module.template_data({"id": "cr-0123456789abcdef0", "type": "capacity-block"})
    stub.add_client_error("describe_launch_templates", "InvalidLaunchTemplateName.NotFoundException",
                          expected_params={"LaunchTemplateNames": ["p-f-capacity"]})
    stub.add_response("create_launch_template", {"LaunchTemplate": {"LaunchTemplateId": "lt-0123456789abcdef0"}},
                      {"LaunchTemplateName": "p-f-capacity", "LaunchTemplateData": data, "TagSpecifications": ANY})
    assert module.ensure_template(client, "p-f-capacity", data, {"Project": "p"}, False) == ("lt-0123456789abcdef0", True)
    stub.add_response("describe_launch_templates", {"LaunchTemplates": [{"LaunchTemplateId": "lt-0123456789abcdef0"}]},
                      {"LaunchTemplateNames": ["p-f-capacity"]})
    stub.add_response("describe_launch_template_versions",
                      {"LaunchTemplateVersions": [{"LaunchTemplateData": data}]},
                      {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    assert module.ensure_template(client, "p-f-capacity", data, {}, False) == ("lt-0123456789abcdef0", False)


def test_other_reservation_makes_a_new_default_version(ec2):
    client, stub = ec2
    old = module.template_data({"id": "cr-0000000000000000a", "type": "default"})
    new = module.template_data({"id": "cr-0123456789abcdef0", "type": "capacity-block"})
    stub.add_response("describe_launch_templates", {"LaunchTemplates": [{"LaunchTemplateId": "lt-1"}]})
    stub.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": old}]})
    stub.add_response("create_launch_template_version", {"LaunchTemplateVersion": {"VersionNumber": 2}},
                      {"LaunchTemplateId": "lt-1", "LaunchTemplateData": new})
    stub.add_response("modify_launch_template", {}, {"LaunchTemplateId": "lt-1", "DefaultVersion": "2"})
    assert module.ensure_template(client, "p-f-capacity", new, {}, False) == ("lt-1", True)
