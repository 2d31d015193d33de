"""The launch's capacity failure names the operator's options (not only AWS's error code): eagle3_capacity_advice on
failure messages of the shape amazon.aws.ec2_instance returns. botocore formats an EC2 error as "An error occurred
(CODE) when calling the OPERATION operation: MESSAGE" (botocore/exceptions.py ClientError); the message is EC2's wording
for the code (AWS's EC2 troubleshooting page for InsufficientInstanceCapacity); the module puts it after its own
words."""
from __future__ import annotations

import boto3
import pytest
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.amazon.aws.plugins.module_utils import cloud as aws_cloud
from ansible_collections.amazon.aws.plugins.module_utils.ec2 import AnsibleEC2Error, run_instances
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import infra
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud.infra import eagle3_capacity_advice
from botocore.stub import Stubber

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


# The launch's silence, its bound and the vCPU quota: an operator sees why a launch waits and how long.
# The error answers are botocore ClientErrors made by botocore's Stubber (validated against botocore 1.44.8's EC2 model,
# botocore/data/ec2/2016-11-15/service-2.json) and raised through amazon.aws 10.1.2's own RunInstances wrapper
# (plugins/module_utils/ec2.py run_instances: AWSRetry.jittered_backoff + EC2InstanceErrorHandler), so the text is the
# one ec2_instance's fail_json_aws prints ("<message>: <botocore's ClientError text>", module_utils/modules.py).
# EC2's words for VcpuLimitExceeded as EC2 answers them (quoted in scrapoxy/scrapoxy#202, bentoml/bentoctl#202,
# aws/amazon-cloudwatch-agent-test#256); for InsufficientInstanceCapacity as above (EC2's troubleshooting page).

VCPU_SAID = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance "
             "bucket that the specified instance type belongs to. Please visit "
             "http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.")
CAPACITY_SAID = ("We currently do not have sufficient trn2.48xlarge capacity in the Availability Zone you requested "
                 "(us-east-2a). Our system will be working on provisioning additional capacity.")
LAUNCH = {"ImageId": "ami-0123456789abcdef0", "InstanceType": "trn2.48xlarge", "MinCount": 1, "MaxCount": 1}


def launch_failure(monkeypatch, code: str, said: str, status: int, answers: int) -> tuple[str, int, list[float]]:
    """ec2_instance's failure message for RunInstances answered `answers` times with `code`; the calls amazon.aws made
    and the waits between them (each at its upper bound: jitter drawn as the maximum)."""
    sleeps: list[float] = []
    monkeypatch.setattr(aws_cloud.time, "sleep", sleeps.append)
    monkeypatch.setattr(aws_cloud.random, "uniform", lambda low, high: high)
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    calls: list[str] = []
    # every call builds its parameters first (the Stubber answers at before-call, which stops the event there)
    client.meta.events.register("before-parameter-build.ec2.RunInstances", lambda **kw: calls.append(kw["model"].name))
    with Stubber(client) as stub:
        for _ in range(answers):
            stub.add_client_error("run_instances", service_error_code=code, service_message=said,
                                  http_status_code=status, expected_params=LAUNCH)
        with pytest.raises(AnsibleEC2Error) as failed:
            run_instances(client, **LAUNCH)
    return f"{failed.value.message}: {to_native(failed.value.exception)}", len(calls), sleeps


def test_amazon_aws_retries_a_capacity_error_as_the_notice_says(monkeypatch):
    """The notice's numbers (10 tries, 333 s of waits at most) are amazon.aws's own, counted here."""
    said, calls, sleeps = launch_failure(monkeypatch, "InsufficientInstanceCapacity", CAPACITY_SAID, 500, 12)
    assert calls == infra.AMAZON_AWS_CAPACITY_TRIES == 10
    assert sum(sleeps) == infra.AMAZON_AWS_CAPACITY_MAX_WAIT == 333
    assert said.startswith("Failed to run instances: An error occurred (InsufficientInstanceCapacity) when calling the "
                           "RunInstances operation")
    got = eagle3_capacity_advice(said, "trn2.48xlarge", "us-east-2", "us-east-2a")
    assert "Capacity Block" in got and "We currently do not have sufficient trn2.48xlarge capacity" in got
    notice = infra.eagle3_launch_notice(2, "trn2.48xlarge", "us-east-2", "us-east-2a", "", 240)
    for text in ("launching 2 x trn2.48xlarge On-Demand in us-east-2a (us-east-2)", "InsufficientInstanceCapacity",
                 "a few minutes", "10 tries, up to 333 s", "provision_ec2_launch_timeout (240 s)", "VcpuLimitExceeded"):
        assert text in notice, (text, notice)
    assert "into cr-0123" in infra.eagle3_launch_notice(1, "trn2.48xlarge", "us-east-2", reservation_id="cr-0123")
    assert infra.eagle3_launch_notice(0, "trn2.48xlarge", "us-east-2") == ""


def test_a_vcpu_quota_refusal_stops_at_once_and_names_the_quota(monkeypatch):
    said, calls, sleeps = launch_failure(monkeypatch, "VcpuLimitExceeded", VCPU_SAID, 400, 1)
    assert (calls, sleeps) == (1, [])            # not retried: amazon.aws does not know the code
    got = eagle3_capacity_advice(said, "trn2.48xlarge", "us-east-2", "us-east-2a", fleet_vcpus=384)
    for text in ('"Running On-Demand Trn instances"', "VcpuLimitExceeded", "request an increase", "Service Quotas",
                 "this fleet needs 384", "Capacity Block", "provision_ec2_capacity_reservation_id",
                 "Nothing was launched", "current vCPU limit of 0"):
        assert text in got, (text, got)
    assert "no trn2.48xlarge capacity" not in got
    assert "Launched so far: i-0abc" in eagle3_capacity_advice(said, "trn2.48xlarge", "us-east-2", launched=["i-0abc"])


def test_a_launch_stopped_at_its_bound_says_so_and_how_to_wait_longer():
    # ansible-core 2.19's words when a task outlives `async` (executor/task_executor.py _poll_async_result)
    said = "async task did not complete within the requested time - 240s"
    got = eagle3_capacity_advice(said, "trn2.48xlarge", "us-east-2", "us-east-2a", "cr-0123", ["i-0abc"], timeout=240)
    for text in ("provision_ec2_launch_timeout (240 s)", "InsufficientInstanceCapacity", "Launched so far: i-0abc",
                 "Capacity Block", "cr-0123", "provision_ec2_subnet_id", "provision_ec2_region",
                 "raise provision_ec2_launch_timeout"):
        assert text in got, (text, got)
