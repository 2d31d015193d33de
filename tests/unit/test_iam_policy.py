"""The controller's IAM policy (least privilege that still lets every run through): iam/controller-policy.json against
the AWS operations a run makes.

molecule ec2 records every botocore operation of Ansible's processes (molecule/ec2/files/aws_calls/sitecustomize.py)
and its last test fails when one is not allowed by the policy (scripts/iam_policy.py). Here: the recorder records what
it should, the check fails when the policy lacks one recorded action (shown by removing each in turn), and every action
the policy names is a real operation of botocore's service models (no typo can hide a missing permission).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import botocore.session
import pytest
from ansible_collections.amazon.aws.plugins.module_utils.ec2 import AnsibleEC2Error, describe_instance_status
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

import iam_policy

ROOT = Path(__file__).resolve().parents[2]
POLICY = json.loads((ROOT / "iam/controller-policy.json").read_text())
RECORDER = ROOT / "molecule/ec2/files/aws_calls"
# molecule ec2's recording (converge, idempotence, verify; main at the commit that added it), as the recorder wrote it.
RECORDED = ROOT / "tests/fixtures/aws_calls/molecule-ec2.log"


def test_the_recorder_logs_ansibles_operations_and_nothing_else(tmp_path):
    log = tmp_path / "calls.log"
    probe = ("import boto3\nfrom botocore.stub import Stubber\n"
             "c = boto3.client('ec2', region_name='us-east-2', aws_access_key_id='x', aws_secret_access_key='x')\n"
             "with Stubber(c) as s:\n    s.add_response('describe_vpcs', {'Vpcs': []})\n    c.describe_vpcs()\n")
    for name in ("AnsiballZ_ec2_vpc_net_info.py", "verifier.py"):
        (tmp_path / name).write_text(probe)
        subprocess.run([sys.executable, str(tmp_path / name)], check=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(RECORDER), "EAGLE3_AWS_CALLS": str(log)})
    assert log.read_text() == "ec2 DescribeVpcs AnsiballZ_ec2_vpc_net_info.py\n"


def test_every_action_of_the_policy_is_a_real_operation():
    session = botocore.session.get_session()
    operations = {service: set(session.get_service_model(service).operation_names) for service in ("ec2", "ssm", "s3")}
    iam_only = {"s3:listbucket"}                         # IAM's name for ListObjects(V2) and HeadBucket
    for pattern in iam_policy.allowed_patterns(POLICY):
        service, action = pattern.split(":")
        assert pattern in iam_only or action in {o.lower() for o in operations[service]}, pattern


def test_the_recorded_run_is_allowed_and_each_removed_action_is_named():
    actions = iam_policy.recorded_actions(RECORDED.read_text().splitlines())
    assert {"ec2:RunInstances", "ec2:TerminateInstances", "ssm:GetParameter"} <= set(actions)
    assert iam_policy.missing(actions, POLICY) == []
    for action in actions:
        less = json.loads(json.dumps(POLICY))
        for statement in less["Statement"]:
            statement["Action"] = [a for a in statement["Action"] if a != action]
        assert iam_policy.missing(actions, less) == [action]


def test_the_check_names_the_missing_action_and_who_called_it(tmp_path, capsys):
    log = tmp_path / "calls.log"
    log.write_text("ec2 DescribeInstances AnsiballZ_ec2_instance_info.py\nec2 StopInstances AnsiballZ_ec2_instance.py\n"
                   "sts GetCallerIdentity ansible-playbook\ns3 HeadObject AnsiballZ_s3_object.py\n")
    assert iam_policy.main(["check", str(log)]) == 1
    out = capsys.readouterr().out
    assert "ec2:StopInstances (called by AnsiballZ_ec2_instance.py) is not allowed" in out
    assert "3 actions recorded, 1 missing" in out               # HeadObject is s3:GetObject; STS needs nothing


@pytest.mark.parametrize("action", ["ec2:TerminateInstances", "ec2:DeleteSecurityGroup", "ec2:DeleteKeyPair",
                                    "ec2:ModifyInstanceAttribute", "ec2:ModifyInstanceMetadataOptions"])
def test_destructive_actions_are_limited_to_the_projects_tagged_resources(action):
    statements = [s for s in POLICY["Statement"] if action in s["Action"]]
    assert len(statements) == 1
    assert statements[0]["Condition"] == {"StringEquals": {"aws:ResourceTag/Project": "eagle3-bench"}}


def test_docs_show_the_policy_file_as_it_is():
    assert "```json\n" + (ROOT / "iam/controller-policy.json").read_text() + "```" in (ROOT / "docs/aws.md").read_text()


# Under moto's IAM enforcement (molecule ec2 runs as a user holding the policy as_moto_enforces makes of it).

def test_moto_gets_the_policys_actions_and_conditions_and_resources_it_can_match():
    enforced = iam_policy.as_moto_enforces(POLICY)
    assert [(s["Sid"], s["Action"], s.get("Condition")) for s in enforced["Statement"]] == [
        (s["Sid"], s["Action"], s.get("Condition")) for s in POLICY["Statement"]]
    for mine, theirs in zip(POLICY["Statement"], enforced["Statement"]):
        s3 = mine["Action"][0].startswith("s3:")
        assert theirs["Resource"] == (mine["Resource"] if s3 else "*"), mine["Sid"]  # moto matches EC2, SSM on "*"
    assert iam_policy.missing(iam_policy.recorded_actions(RECORDED.read_text().splitlines()), enforced) == []
    less = iam_policy.as_moto_enforces(POLICY, ("ec2:DescribeInstanceStatus", "ssm:GetParameter"))
    assert iam_policy.allowed_patterns(less) == [a for a in iam_policy.allowed_patterns(POLICY)
                                                 if a not in ("ec2:describeinstancestatus", "ssm:getparameter")]
    assert "SsmTheDlamiParameter" not in [s["Sid"] for s in less["Statement"]]   # a statement left empty is dropped


# moto authenticates nothing for this many requests, then every one (moto's docs, "IAM-like Access Control"): the
# launch below and, for each of two users, create_user, create_policy, attach_user_policy, create_access_key.
SET_UP_REQUESTS = 9


@set_initial_no_auth_action_count(SET_UP_REQUESTS)
def test_under_moto_enforcement_the_status_check_after_a_launch_needs_its_action(monkeypatch):
    """The call amazon.aws's ec2_instance makes right after RunInstances (module_utils/ec2.py describe_instance_status,
    as the provision role's launch makes it) passes for a user holding the policy and fails, naming the action, for a
    user holding it without ec2:DescribeInstanceStatus (the action docs/aws.md's hand list missed)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    region = {"region_name": "us-east-2"}
    with mock_aws():
        boot = {**region, "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        iam, ec2 = boto3.client("iam", **boot), boto3.client("ec2", **boot)
        launched = ec2.run_instances(ImageId="ami-12c6146b", InstanceType="trn2.48xlarge", MinCount=1, MaxCount=1)
        instance = launched["Instances"][0]["InstanceId"]
        clients = {}
        for user, without in (("holds-the-policy", ()), ("lacks-one-action", ("ec2:DescribeInstanceStatus",))):
            iam.create_user(UserName=user)
            document = json.dumps(iam_policy.as_moto_enforces(POLICY, without))
            arn = iam.create_policy(PolicyName=user, PolicyDocument=document)["Policy"]["Arn"]
            iam.attach_user_policy(UserName=user, PolicyArn=arn)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            clients[user] = boto3.client("ec2", **region, aws_access_key_id=key["AccessKeyId"],
                                         aws_secret_access_key=key["SecretAccessKey"])

        with pytest.raises(Exception, match="AuthFailure"):
            ec2.describe_instances()                        # enforced from here on: the set-up's key names no user
        status = describe_instance_status(clients["holds-the-policy"], InstanceIds=[instance], IncludeAllInstances=True)
        assert [s["InstanceId"] for s in status] == [instance]
        with pytest.raises(AnsibleEC2Error) as refused:
            describe_instance_status(clients["lacks-one-action"], InstanceIds=[instance], IncludeAllInstances=True)
    said = str(refused.value)
    assert "An error occurred (AccessDenied) when calling the DescribeInstanceStatus operation" in said, said
    assert "user/lacks-one-action is not authorized to perform: ec2:DescribeInstanceStatus" in said, said
