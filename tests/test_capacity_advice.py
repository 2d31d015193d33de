"""The launch's capacity failure names the operator's options (issue 32): eagle3_capacity_advice on failure messages of
the shape amazon.aws.ec2_instance returns. botocore formats an EC2 error as "An error occurred (CODE) when calling the
OPERATION operation: MESSAGE" (botocore/exceptions.py ClientError); the message is EC2's wording for the code (AWS's
EC2 troubleshooting page for InsufficientInstanceCapacity); the module puts it after its own words."""
from __future__ import annotations

import pytest
from ansible_collections.eagle3.trn2.plugins.filter.infra import eagle3_capacity_advice

EC2_SAID = ("Failed to create instances: An error occurred (InsufficientInstanceCapacity) when calling the RunInstances "
            "operation (reached max retries: 4): We currently do not have sufficient trn2.48xlarge capacity in the "
            "Availability Zone you requested (us-east-2a). Our system will be working on provisioning additional capacity.")


def test_a_capacity_failure_names_capacity_blocks_zones_regions_and_what_was_launched():
    got = eagle3_capacity_advice(EC2_SAID, "trn2.48xlarge", "us-east-2", "us-east-2a", launched=["i-0abc"])
    for text in ("InsufficientInstanceCapacity", "Capacity Block", "provision_ec2_capacity_reservation_id",
                 "provision_ec2_subnet_id", "provision_ec2_region", "retry later", "Launched so far: i-0abc",
                 "in us-east-2a", "We currently do not have sufficient trn2.48xlarge capacity"):
        assert text in got, text
    assert "Nothing was launched" in eagle3_capacity_advice(EC2_SAID, "trn2.48xlarge", "us-east-2")
    assert "cr-0123" in eagle3_capacity_advice(EC2_SAID, "trn2.48xlarge", "us-east-2", reservation_id="cr-0123")


@pytest.mark.parametrize("other", ["An error occurred (UnauthorizedOperation) when calling the RunInstances operation: ...",
                                   "", None, {"msg": "x"}])
def test_another_failure_keeps_its_own_message(other):
    assert eagle3_capacity_advice(other, "trn2.48xlarge", "us-east-2") == ""
