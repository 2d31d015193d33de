"""ec2_capacity_target (plugins/modules): the capacity reservation / Capacity Block logic.

moto does not implement DescribeCapacityReservations, so the EC2 calls are checked with botocore's
Stubber, which validates every request and response against the EC2 API model.
"""
from __future__ import annotations

import datetime as dt
import importlib.util
import sys
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("ec2_capacity_target", ROOT / "plugins/modules/ec2_capacity_target.py")
module = importlib.util.module_from_spec(SPEC)
sys.modules["ec2_capacity_target"] = module
SPEC.loader.exec_module(module)

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


def test_run_outlasting_the_block_is_warned_about():
    r = {"id": "cr-1", "type": "capacity-block", "state": "active", "availability_zone": "us-east-2b",
         "instance_type": "trn2.48xlarge", "total": 1, "available": 1, "start_date": None,
         "end_date": (NOW + dt.timedelta(minutes=90)).isoformat()}
    left, warning = module.check(r, "trn2.48xlarge", 1, 0, 2, NOW)
    assert left == 1.5
    assert "ends at" in warning and "in 1.5 h" in warning and "provision_ec2_run_hours" in warning
    assert "Capacity Block" in warning


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
