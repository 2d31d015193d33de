#!/usr/bin/env python3
"""The controller's least-privilege IAM policy (a run may do exactly what it needs) against the AWS operations a run
really makes.

    scripts/iam_policy.py check LOG... [--policy iam/controller-policy.json]
    scripts/iam_policy.py moto [--policy iam/controller-policy.json] [--without ACTION]...

LOG: lines "<service> <Operation> <program>" as molecule ec2's recorder writes them
(molecule/ec2/files/aws_calls/sitecustomize.py wraps botocore's BaseClient._make_api_call in every Ansible process).
Each operation becomes the IAM action that authorises it (service:Operation, but for the few S3 operations IAM names
otherwise, ACTION_OF); every action must be allowed by a statement of the policy. Prints what is missing; exit 1 then.

moto: the policy as moto can enforce it (as_moto_enforces), the one molecule ec2's controller user holds.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "iam" / "controller-policy.json"

# Operations whose IAM action is not "<service>:<Operation>" (AWS Service Authorization Reference, Amazon S3:
# HeadObject needs s3:GetObject, ListObjectsV2 and HeadBucket s3:ListBucket, the multipart upload operations
# s3:PutObject).
ACTION_OF = {
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjects"): "s3:ListBucket",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "HeadBucket"): "s3:ListBucket",
    ("s3", "CreateMultipartUpload"): "s3:PutObject",
    ("s3", "UploadPart"): "s3:PutObject",
    ("s3", "CompleteMultipartUpload"): "s3:PutObject",
}
# Operations no policy can deny (STS GetCallerIdentity needs no permission).
UNGATED = {"sts:GetCallerIdentity"}


def recorded_actions(lines: list[str]) -> dict[str, set[str]]:
    """IAM action -> the programs that needed it, from the recorder's lines."""
    actions: dict[str, set[str]] = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 2:
            continue
        service, operation = parts[0], parts[1]
        action = ACTION_OF.get((service, operation), f"{service}:{operation}")
        if action not in UNGATED:
            actions.setdefault(action, set()).add(parts[2] if len(parts) > 2 else "?")
    return actions


def allowed_patterns(policy: dict) -> list[str]:
    """Every Action pattern of the policy's Allow statements (lower case: IAM action names ignore case)."""
    patterns = []
    for statement in policy.get("Statement", []):
        if statement.get("Effect") != "Allow":
            continue
        action = statement.get("Action", [])
        patterns += [a.lower() for a in ([action] if isinstance(action, str) else action)]
    return patterns


def missing(actions: dict[str, set[str]] | set[str], policy: dict) -> list[str]:
    patterns = allowed_patterns(policy)
    return sorted(a for a in actions if not any(fnmatch.fnmatchcase(a.lower(), p) for p in patterns))


def as_moto_enforces(policy: dict, without: tuple[str, ...] = ()) -> dict:
    """The policy for molecule ec2's IAM user under moto's enforcement (moto 5.2.5, moto/iam/access_control.py):
    the same statements, actions and conditions, but a statement of a service other than S3 gets the Resource "*".
    moto authorizes an EC2 or SSM request against the resource "*" (moto/core/responses.py call_action: only IAM,
    STS and SQS name the request's resource), so a statement naming an ARN (the DLAMI's SSM parameter) never matches
    there and would refuse what AWS allows; S3 requests are matched against the bucket's and object's ARN, as on AWS.
    Conditions stay: moto gives an identity policy's condition no request values, and a condition without values is
    met (moto/iam/policy_conditions.py), so they are not evaluated (docs/testing.md). `without`: actions left out (a
    statement left with none is dropped), to show that moto refuses them."""
    drop = {a.lower() for a in without}
    statements = []
    for statement in policy["Statement"]:
        statement = json.loads(json.dumps(statement))
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        statement["Action"] = [a for a in actions if a.lower() not in drop]
        if not statement["Action"]:
            continue
        if not all(a.lower().startswith("s3:") for a in statement["Action"]):
            statement["Resource"] = "*"
        statements.append(statement)
    return {**policy, "Statement": statements}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="the recorded operations against the policy")
    check.add_argument("logs", nargs="+", type=Path)
    check.add_argument("--policy", type=Path, default=POLICY)
    moto = sub.add_parser("moto", help="the policy as moto enforces it (molecule ec2's controller user)")
    moto.add_argument("--policy", type=Path, default=POLICY)
    moto.add_argument("--without", action="append", default=[], metavar="ACTION", help="an action to leave out")
    args = parser.parse_args(argv)
    if args.command == "moto":
        print(json.dumps(as_moto_enforces(json.loads(args.policy.read_text()), tuple(args.without)), indent=2))
        return 0
    actions = recorded_actions([line for log in args.logs for line in log.read_text().splitlines()])
    lacking = missing(actions, json.loads(args.policy.read_text()))
    for action in lacking:
        print(f"{action} (called by {', '.join(sorted(actions[action]))}) is not allowed by {args.policy}")
    print(f"{len(actions)} actions recorded, {len(lacking)} missing from the policy")
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
