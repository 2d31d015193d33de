"""The controller's IAM policy (issue 54): iam/controller-policy.json against the AWS operations a run makes.

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

import botocore.session
import pytest

import iam_policy

ROOT = Path(__file__).resolve().parents[1]
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
