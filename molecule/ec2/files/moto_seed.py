"""Seeds molecule ec2's moto server and leaves it enforcing IAM (create.yml), so a call the controller's policy lacks
fails the scenario as it would fail on AWS.

    python moto_seed.py ENDPOINT REGION POLICY CREDENTIALS_FILE NO_AUTH_CALLS

moto_server was started with INITIAL_NO_AUTH_ACTION_COUNT=NO_AUTH_CALLS (create.yml): it authenticates nothing for
that many requests, then every request (moto's docs, "IAM-like Access Control"). These are those requests, made with a
key that names no user ("testing"):
  - two DLAMIs and the AMI's SSM parameter (the fixtures the scenario's inventory reads);
  - the IAM user eagle3-controller, holding one managed policy, iam/controller-policy.json as moto can enforce it
    (scripts/iam_policy.py as_moto_enforces: the same actions and conditions; EC2 and SSM statements on "*", the only
    resource moto matches them against), and its access key: what every Ansible process of the scenario runs as
    (molecule.yml's AWS_PROFILE);
  - the IAM user eagle3-test-admin, allowed everything, and its access key: the verifier's own view of the account.
The keys go to CREDENTIALS_FILE (the AWS shared credentials file molecule.yml names), profiles of the same names.
Then, authenticated: the bootstrap key is refused, the controller may describe key pairs and may not list IAM users.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# The scenario's profile names the credentials file written below: the set-up uses explicit keys, no profile.
os.environ.pop("AWS_PROFILE", None)

import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def refused(call, code: str, action: str | None = None) -> None:
    try:
        call()
    except ClientError as e:
        error = e.response["Error"]
        if error["Code"] == code and (action is None or action in error.get("Message", "")):
            return
        raise SystemExit(f"expected {code}{' naming ' + action if action else ''}, moto answered {error}") from e
    raise SystemExit(f"expected {code}, moto allowed the call: IAM is not enforced")


def main(endpoint: str, region: str, policy_file: str, credentials_file: str, no_auth_calls: str) -> None:
    root = Path(policy_file).resolve().parents[1]
    sys.path.insert(0, str(root / "scripts"))
    import iam_policy

    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region)
    sent = []
    session.events.register("before-send", lambda request, **_: sent.append(request.url))
    ec2, ssm, iam = (session.client(name, endpoint_url=endpoint) for name in ("ec2", "ssm", "iam"))

    # Two DLAMIs as AWS names them (create.yml says where the names come from); the parameter names the newest.
    images = [ec2.register_image(Name=f"Deep Learning AMI Neuron (Ubuntu 24.04) {date}",
                                 Description=f"FIXTURE Deep Learning AMI Neuron, Neuron SDK {sdk}, Ubuntu 24.04")["ImageId"]
              for date, sdk in (("20260817", "2.32.0"), ("20261019", "2.33.0"))]
    ssm.put_parameter(Name="/eagle3-test/neuron-dlami/image_id", Value=images[-1], Type="String", Overwrite=True)

    enforced = iam_policy.as_moto_enforces(json.loads(Path(policy_file).read_text()))
    keys = {}
    iam.create_user(UserName="eagle3-controller")
    arn = iam.create_policy(PolicyName="eagle3-controller", PolicyDocument=json.dumps(enforced))["Policy"]["Arn"]
    iam.attach_user_policy(UserName="eagle3-controller", PolicyArn=arn)
    keys["eagle3-controller"] = iam.create_access_key(UserName="eagle3-controller")["AccessKey"]
    iam.create_user(UserName="eagle3-test-admin")
    iam.put_user_policy(UserName="eagle3-test-admin", PolicyName="everything", PolicyDocument=json.dumps(ADMIN_POLICY))
    keys["eagle3-test-admin"] = iam.create_access_key(UserName="eagle3-test-admin")["AccessKey"]
    if len(sent) != int(no_auth_calls):
        raise SystemExit(f"the set-up made {len(sent)} requests, moto authenticates from request {no_auth_calls} on: "
                         f"set moto_no_auth_calls in create.yml to {len(sent)}")

    path = Path(credentials_file)
    path.touch(mode=0o600)
    path.write_text("".join(f"[{user}]\naws_access_key_id = {key['AccessKeyId']}\n"
                            f"aws_secret_access_key = {key['SecretAccessKey']}\n" for user, key in keys.items()))

    # From here on moto authenticates and authorizes every request.
    refused(lambda: ec2.describe_key_pairs(), "AuthFailure")
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = str(path)
    controller = boto3.Session(profile_name="eagle3-controller", region_name=region)
    controller.client("ec2", endpoint_url=endpoint).describe_key_pairs()
    refused(lambda: controller.client("iam", endpoint_url=endpoint).list_users(), "AccessDenied", "iam:ListUsers")
    print(json.dumps({"images": images, "users": sorted(keys), "policy": arn,
                      "actions": sum(len(s["Action"]) for s in enforced["Statement"])}))


if __name__ == "__main__":
    main(*sys.argv[1:])
