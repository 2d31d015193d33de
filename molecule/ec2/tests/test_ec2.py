"""The ec2 provider against moto: tags, volumes, IMDSv2, security group, scaling, refusal,
inventory plugin, an instance replacement that fails on its new instance, an interrupted provision and teardown."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
ENDPOINT = f"http://127.0.0.1:{os.environ['EAGLE3_MOTO_PORT']}"
# The verifier's own view of the account: the set-up's admin user (create.yml). The playbook runs below run as
# Ansible's runs do, with molecule.yml's AWS_PROFILE: eagle3-controller, holding only iam/controller-policy.json.
ADMIN = boto3.Session(profile_name="eagle3-test-admin", region_name="us-east-2")
EC2 = ADMIN.client("ec2", endpoint_url=ENDPOINT)
FLEET = {"Name": "tag:Fleet", "Values": ["molecule"]}
RUNNING = {"Name": "instance-state-name", "Values": ["pending", "running"]}
BIN = Path(sys.executable).parent


def fleet() -> list[dict]:
    pages = EC2.describe_instances(Filters=[FLEET, RUNNING])["Reservations"]
    return sorted((i for r in pages for i in r["Instances"]), key=lambda i: i["LaunchTime"])


def playbook(name: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"), str(ROOT / name), *extra],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env={**os.environ, **(env or {})})


def flat(proc: subprocess.CompletedProcess) -> str:
    """Output with whitespace folded (the yaml callback wraps long messages)."""
    return " ".join((proc.stdout + proc.stderr).split())


def recap(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.split("PLAY RECAP")[-1]


def test_ansible_ran_as_the_controller_user_under_iam_enforcement():
    # converge and idempotence passed as eagle3-controller; moto refuses what its policy lacks and unknown keys.
    controller = boto3.Session(profile_name=os.environ["AWS_PROFILE"], region_name="us-east-2")
    assert controller.client("sts", endpoint_url=ENDPOINT).get_caller_identity()["Arn"].endswith(":user/eagle3-controller")
    with pytest.raises(ClientError, match=r"AccessDenied.*not authorized to perform: ec2:CreateKeyPair"):
        controller.client("ec2", endpoint_url=ENDPOINT).create_key_pair(KeyName="not-in-the-policy")
    with pytest.raises(ClientError, match="AuthFailure"):
        boto3.client("ec2", region_name="us-east-2", endpoint_url=ENDPOINT, aws_access_key_id="testing",
                     aws_secret_access_key="testing").describe_key_pairs()


def test_fleet_of_two_trn2_with_tags():
    instances = fleet()
    assert len(instances) == 2
    for inst in instances:
        assert inst["InstanceType"] == "trn2.48xlarge"
        tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
        assert tags == {"Project": "eagle3-bench", "Fleet": "molecule", "Owner": "ci", "ManagedBy": "ansible-eagle3"}
        assert inst["KeyName"] == "eagle3"


def test_the_fleet_is_launched_with_its_dead_man_switch():
    # converge's fleet (later tests add an instance the way an interrupted run leaves one, without it): eagle3_deadman
    # is on by default on EC2, a power-off terminates the instance, and the user data arms the switch at first boot for
    # 1.5 x eagle3_run_hours (2 h in this inventory) from the launch. The deadline is fixed (rounded up to the minute)
    # when the launch task renders the user data, before RunInstances: the instance's LaunchTime is later by that gap
    # (seconds; 08:07:01 against a deadline of 11:07:00 once, 2026-12-07), so the lower bound allows 5 minutes of it.
    for inst in fleet():
        attribute = EC2.describe_instance_attribute(InstanceId=inst["InstanceId"], Attribute="instanceInitiatedShutdownBehavior")
        assert attribute["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        data = EC2.describe_instance_attribute(InstanceId=inst["InstanceId"], Attribute="userData")["UserData"]["Value"]
        cloud = yaml.safe_load(base64.b64decode(data))
        timer = next(f["content"] for f in cloud["write_files"] if f["path"] == "/etc/systemd/system/eagle3-deadman.timer")
        deadline = datetime.strptime(re.search(r"OnCalendar=(.*) UTC", timer).group(1), "%Y-%m-%d %H:%M:%S")
        launched = inst["LaunchTime"].astimezone(timezone.utc).replace(tzinfo=None)
        assert timedelta(hours=3, minutes=-5) <= deadline - launched <= timedelta(hours=3, minutes=10), (deadline, launched)
        assert ["systemctl", "enable", "--now", "eagle3-deadman.timer"] in cloud["runcmd"]


def test_imdsv2_required():
    for inst in fleet():
        assert inst["MetadataOptions"]["HttpTokens"] == "required"


def test_root_volume_gp3_512_tagged():
    for inst in fleet():
        vol_ids = [m["Ebs"]["VolumeId"] for m in inst["BlockDeviceMappings"]]
        vols = EC2.describe_volumes(VolumeIds=vol_ids)["Volumes"]
        root = [v for v in vols if v["Attachments"][0]["Device"] == "/dev/sda1"]
        assert root and root[0]["Size"] == 512 and root[0]["VolumeType"] == "gp3"
        assert {t["Key"]: t["Value"] for t in root[0].get("Tags", [])}.get("Fleet") == "molecule"


def test_security_group_admits_the_admin_the_clients_and_the_monitors_only():
    groups = {g["GroupId"] for inst in fleet() for g in inst["SecurityGroups"]}
    assert len(groups) == 1
    sg = EC2.describe_security_groups(GroupIds=list(groups))["SecurityGroups"][0]
    rules = sorted((p.get("FromPort"), p.get("ToPort"), r["CidrIp"], r.get("Description"))
                   for p in sg["IpPermissions"] for r in p.get("IpRanges", []))
    # SSH from the admin CIDR; the serving port (eagle3_serve_port) from the clients' and the monitor's ranges only.
    assert rules == [(22, 22, "198.51.100.0/24", "SSH from the admin CIDR"),
                     (8000, 8000, "192.0.2.10/32", "vLLM metrics (monitor)"),
                     (8000, 8000, "203.0.113.0/24", "vLLM clients")]
    assert not [p for p in sg["IpPermissions"] for r in p.get("Ipv6Ranges", [])]


def dlamis() -> dict[str, str]:
    """Neuron SDK release -> image id of the fixture DLAMIs (create.yml)."""
    images = EC2.describe_images(Owners=["self"], Filters=[{"Name": "name", "Values": ["Deep Learning AMI Neuron*"]}])["Images"]
    return {i["Description"].split("Neuron SDK ")[1].split(",")[0]: i["ImageId"] for i in images}


def test_ami_is_the_dlami_of_the_runs_release_not_the_ssm_parameters_newest():
    ssm = ADMIN.client("ssm", endpoint_url=ENDPOINT)
    newest = ssm.get_parameter(Name="/eagle3-test/neuron-dlami/image_id")["Parameter"]["Value"]
    released = dlamis()
    assert newest == released["2.33.0"]
    # The run pins 2.32.0 (eagle3_neuron_sdk_version): the SSM parameter's 2.33 DLAMI was replaced before the launch.
    assert {i["ImageId"] for i in fleet()} == {released["2.32.0"]}


def test_a_pinned_ami_of_another_release_is_refused_before_any_launch():
    before = sorted(i["InstanceId"] for i in fleet())
    proc = playbook("playbooks/provision.yml", "-e", f"provision_ec2_ami_id={dlamis()['2.33.0']}")
    assert proc.returncode != 0
    assert ("carries Neuron SDK 2.33.0, the run asks for eagle3_neuron_sdk_version 2.32.0; provision_ec2_ami_id pins it"
            in flat(proc)), flat(proc)[-2000:]
    assert "Nothing was launched." in flat(proc)
    assert sorted(i["InstanceId"] for i in fleet()) == before


def test_check_mode_on_a_fleet_not_launched_yet_says_what_it_would_do():
    # A fleet whose security group does not exist: in check mode ec2_security_group returns no id, and ec2_instance
    # failed on the empty group name before its own check-mode return.
    groups = EC2.describe_security_groups()["SecurityGroups"]
    proc = playbook("playbooks/provision.yml", "--check", "-e", "provision_ec2_fleet=checkmode")
    assert proc.returncode == 0, flat(proc)[-3000:]
    assert "would create security group eagle3-bench-checkmode and launch 2 x trn2.48xlarge" in flat(proc)
    assert EC2.describe_instances(Filters=[{"Name": "tag:Fleet", "Values": ["checkmode"]}])["Reservations"] == []
    assert EC2.describe_security_groups()["SecurityGroups"] == groups


def test_region_without_trn2_is_refused_before_any_change():
    before = EC2.describe_security_groups()["SecurityGroups"]
    proc = playbook("playbooks/provision.yml", "-e", "provision_ec2_region=eu-west-1")
    assert proc.returncode != 0
    assert "provision_ec2_region eu-west-1 does not offer trn2.48xlarge" in flat(proc)
    west = ADMIN.client("ec2", region_name="eu-west-1", endpoint_url=ENDPOINT)
    assert west.describe_instances(Filters=[FLEET])["Reservations"] == []
    assert EC2.describe_security_groups()["SecurityGroups"] == before


def test_open_admin_cidr_is_refused():
    proc = playbook("playbooks/provision.yml", "-e", "provision_ec2_admin_cidr=0.0.0.0/0")
    assert proc.returncode != 0
    assert "provision_ec2_admin_cidr must not be the whole internet nor wider than a /8" in flat(proc)
    assert '(got "0.0.0.0/0")' in flat(proc)


@pytest.mark.parametrize(("cidrs", "named"), [
    (["203.0.113.0/24", "0.0.0.0/0"], "too wide: 0.0.0.0/0"),
    # The same, written so that an exact-string check misses it: two halves, IPv6's all in another spelling.
    (["0.0.0.0/1", "128.0.0.0/1"], "too wide: 0.0.0.0/1; 128.0.0.0/1"),
    (["::0/0"], "too wide: ::0/0"),
])
def test_serving_port_open_to_the_internet_is_refused(cidrs, named):
    before = EC2.describe_security_groups()["SecurityGroups"]
    proc = playbook("playbooks/provision.yml", "-e", json.dumps({"eagle3_serve_client_cidrs": cidrs}))
    assert proc.returncode != 0
    assert "must not open the vLLM port to the whole internet nor to a range wider than a /8" in flat(proc)
    assert named in flat(proc)
    assert EC2.describe_security_groups()["SecurityGroups"] == before


def test_inventory_plugin_lists_the_fleet_by_instance_id(tmp_path):
    config = tmp_path / "fleet.aws_ec2.yml"
    plugin = (ROOT / "inventories/aws/aws_ec2.yml").read_text()
    config.write_text(plugin)  # moto through AWS_ENDPOINT_URL (molecule.yml), as the plugin reads the SDK's environment
    # Another fleet of the same project (another operator's, or a canary fleet): never this inventory's hosts.
    other = EC2.run_instances(ImageId=fleet()[0]["ImageId"], InstanceType="trn2.48xlarge", MinCount=1, MaxCount=1,
                              TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                  {"Key": "Project", "Value": "eagle3-bench"}, {"Key": "Fleet", "Value": "other"}]}])
    other_id = other["Instances"][0]["InstanceId"]
    try:
        proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(config), "--list"],
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, ANSIBLE_INVENTORY_ENABLED="amazon.aws.aws_ec2",
                                       EAGLE3_FLEET="molecule", EAGLE3_AWS_REGION="us-east-2"))
    finally:
        EC2.terminate_instances(InstanceIds=[other_id])
    assert proc.returncode == 0, proc.stderr
    inventory = json.loads(proc.stdout)
    ids = {i["InstanceId"] for i in fleet()}
    assert set(inventory["vllm_hosts"]["hosts"]) == ids and other_id not in inventory["vllm_hosts"]["hosts"]
    assert set(inventory["fleet_molecule"]["hosts"]) == ids
    assert "fleet_other" not in inventory


def every_instance() -> dict[str, str]:
    """Instance id -> state, terminated ones included (moto keeps them, as EC2 does for a while)."""
    pages = EC2.describe_instances(Filters=[FLEET])["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in pages for i in r["Instances"]}


# What the full preflight of playbooks/replace.yml needs beyond the scenario's provisioning settings (the trn2 path:
# an apt key fingerprint, hub models without the gated-access request, which would reach the internet).
REPLACE = {"eagle3_serve": "eagle3", "neuron_sdk_apt_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
           "model_assets_gated_check": False, "model_assets_dataset_checksum": "sha256:" + "0" * 64}


def test_replacement_failing_on_its_new_instance_terminates_it_and_keeps_the_old_one():
    # Make before break: the new instance is launched beside the old one; it cannot be reached (moto's instances run
    # nothing, and the test keeps every connection on loopback: ansible_host 127.0.0.1, port 9, refused), so it is
    # terminated again and the instance it was to replace stays, untouched.
    before = [i["InstanceId"] for i in fleet()]
    old = before[0]
    known = set(every_instance())
    proc = playbook("playbooks/replace.yml", "-e", json.dumps({
        **REPLACE, "eagle3_replace": [old], "provision_ec2_ssh_timeout": 5, "ansible_host": "127.0.0.1", "ansible_port": 9}),
        env={"EAGLE3_API_KEY": "molecule-serving-key-not-a-secret", "EAGLE3_RUN_ID": "replace-fails"})
    out = flat(proc)
    assert proc.returncode != 0, out[-3000:]
    new = sorted(set(every_instance()) - known)
    assert len(new) == 1, (new, out[-3000:])  # one new instance per instance to replace
    assert f"replacing {old} by {new[0]}" in out
    assert f'replacement stopped: {new[0]}, step "reach the new instance over SSH"' in out, out[-3000:]
    assert f"The new instances {new[0]} were terminated; {old} keep serving as before." in out
    assert every_instance()[new[0]] in ("shutting-down", "terminated")
    assert [i["InstanceId"] for i in fleet()] == before  # the fleet as it was, the old instance running


def test_replacement_refuses_an_instance_outside_the_fleet():
    before = every_instance()
    proc = playbook("playbooks/replace.yml", "-e", json.dumps({**REPLACE, "eagle3_replace": ["i-0123456789abcdef0"]}),
                    env={"EAGLE3_API_KEY": "molecule-serving-key-not-a-secret", "EAGLE3_RUN_ID": "replace-outside"})
    assert proc.returncode != 0
    assert "eagle3_replace names i-0123456789abcdef0, not running in fleet molecule" in flat(proc), flat(proc)[-3000:]
    assert every_instance() == before  # nothing launched


def test_replacement_refuses_a_count_below_the_fleets_size_before_terminating_anything(tmp_path):
    # provision_ec2_count is 1 in the shipped aws inventory: the provision role's exact_count would have terminated
    # every other instance of a larger fleet at the replacement's first step. Set in the inventory, as operators set it.
    before = every_instance()
    running = sorted(i["InstanceId"] for i in fleet())
    assert len(running) >= 2
    overlay = tmp_path / "count.yml"
    overlay.write_text("all:\n  hosts:\n    localhost:\n      provision_ec2_count: 1\n")
    proc = playbook("playbooks/replace.yml", "-i", str(overlay), "-e", json.dumps({**REPLACE, "eagle3_replace": [running[0]]}),
                    env={"EAGLE3_API_KEY": "molecule-serving-key-not-a-secret", "EAGLE3_RUN_ID": "replace-count"})
    assert proc.returncode != 0
    assert (f"fleet molecule runs {len(running)} instances ({', '.join(running)}) but provision_ec2_count is 1: the "
            "replacement would first terminate instances" in flat(proc)), flat(proc)[-3000:]
    assert every_instance() == before  # nothing launched, nothing terminated


def test_replacement_refuses_a_count_given_with_e():
    # An extra var outranks the count the launch step passes: the replacement would launch nothing.
    before = every_instance()
    proc = playbook("playbooks/replace.yml", "-e", json.dumps({**REPLACE, "eagle3_replace": [fleet()[0]["InstanceId"]],
                                                                "provision_ec2_count": len(fleet())}),
                    env={"EAGLE3_API_KEY": "molecule-serving-key-not-a-secret", "EAGLE3_RUN_ID": "replace-count-e"})
    assert proc.returncode != 0
    assert "provision_ec2_count is given as an extra variable (-e)" in flat(proc), flat(proc)[-3000:]
    assert every_instance() == before


def test_scale_up_then_down_keeps_instances():
    first = [i["InstanceId"] for i in fleet()]
    up = playbook("playbooks/provision.yml", "-e", "provision_ec2_count=3")
    assert up.returncode == 0, up.stdout[-2000:]
    after_up = [i["InstanceId"] for i in fleet()]
    assert len(after_up) == 3 and set(first) <= set(after_up)
    down = playbook("playbooks/provision.yml", "-e", "provision_ec2_count=1")
    assert down.returncode == 0, down.stdout[-2000:]
    remaining = [i["InstanceId"] for i in fleet()]
    assert len(remaining) == 1 and remaining[0] in after_up


def test_interrupted_provision_reruns_without_duplicates():
    # A run killed right after launching: one extra tagged instance exists already.
    image = fleet()[0]["ImageId"]
    EC2.run_instances(ImageId=image, InstanceType="trn2.48xlarge", MinCount=1, MaxCount=1, KeyName="eagle3",
                      TagSpecifications=[{"ResourceType": "instance", "Tags": [
                          {"Key": "Project", "Value": "eagle3-bench"}, {"Key": "Fleet", "Value": "molecule"}]}])
    assert len(fleet()) == 2
    rerun = playbook("playbooks/provision.yml", "-e", "provision_ec2_count=2")
    assert rerun.returncode == 0, rerun.stdout[-2000:]
    assert len(fleet()) == 2
    again = playbook("playbooks/provision.yml", "-e", "provision_ec2_count=2")
    assert "changed=0" in recap(again), recap(again)


def _after_run(tmp_path: Path, teardown: str, ok: bool) -> subprocess.CompletedProcess:
    """playbooks/after_run.yml (site.yml's step 8) for a run whose verdict.json says `ok`."""
    run = tmp_path / "results" / "ended"
    run.mkdir(parents=True)
    (run / "verdict.json").write_text(json.dumps({"ok": ok, "failing": [], "reasons": []}))
    return playbook("playbooks/after_run.yml", "-e", json.dumps({"eagle3_run_id": "ended", "eagle3_teardown": teardown}),
                    env={"EAGLE3_RESULTS_DIR": str(tmp_path / "results")})


def test_on_success_keeps_the_fleet_of_a_failed_run(tmp_path):
    before = [i["InstanceId"] for i in fleet()]
    proc = _after_run(tmp_path, "on_success", False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert [i["InstanceId"] for i in fleet()] == before and len(before) >= 1


def test_on_success_tears_down_the_fleet_of_an_ok_run(tmp_path):
    proc = _after_run(tmp_path, "on_success", True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert fleet() == []


def test_with_the_switch_off_an_instance_launches_without_it():
    proc = playbook("playbooks/provision.yml", "-e", json.dumps({"provision_ec2_count": 1, "eagle3_deadman": False}))
    assert proc.returncode == 0, proc.stdout[-3000:]
    [inst] = fleet()
    attribute = EC2.describe_instance_attribute(InstanceId=inst["InstanceId"], Attribute="instanceInitiatedShutdownBehavior")
    assert attribute["InstanceInitiatedShutdownBehavior"]["Value"] == "stop"  # EC2's default
    assert not EC2.describe_instance_attribute(InstanceId=inst["InstanceId"], Attribute="userData")["UserData"].get("Value")


def test_always_tears_down_the_fleet_of_a_failed_run_and_its_capacity_launch_template(tmp_path):
    assert len(fleet()) == 1
    # the template a capacity reservation's fleet launches through (ec2_capacity_target), made here as it makes it
    EC2.create_launch_template(LaunchTemplateName="eagle3-bench-molecule-capacity", LaunchTemplateData={},
                               TagSpecifications=[{"ResourceType": "launch-template",
                                                   "Tags": [{"Key": "Project", "Value": "eagle3-bench"}]}])
    proc = _after_run(tmp_path, "always", False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert fleet() == []
    names = [t["LaunchTemplateName"] for t in EC2.describe_launch_templates()["LaunchTemplates"]]
    assert "eagle3-bench-molecule-capacity" not in names, names


def test_teardown_leaves_nothing_running():
    proc = playbook("playbooks/teardown.yml", "-e", "provision_ec2_teardown_network=true")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert fleet() == []
    assert not [g for g in EC2.describe_security_groups()["SecurityGroups"] if g["GroupName"] == "eagle3-bench-molecule"]
    assert EC2.describe_key_pairs(Filters=[{"Name": "key-name", "Values": ["eagle3"]}])["KeyPairs"] == []


def test_teardown_keeps_a_key_pair_it_did_not_import():
    # provision_ec2_public_key empty: the key pair existed before (the operator's); teardown_network leaves it.
    EC2.create_key_pair(KeyName="operator-key")
    proc = playbook("playbooks/teardown.yml", "-e", json.dumps({
        "provision_ec2_teardown_network": True, "provision_ec2_key_name": "operator-key", "provision_ec2_public_key": ""}))
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert [k["KeyName"] for k in EC2.describe_key_pairs(Filters=[{"Name": "key-name", "Values": ["operator-key"]}])["KeyPairs"]] == [
        "operator-key"]


def test_every_aws_operation_of_the_scenario_is_allowed_by_the_iam_policy():
    """Last: every operation Ansible made in converge, idempotence and the tests above (recorded by
    files/aws_calls/sitecustomize.py) is an action iam/controller-policy.json allows (scripts/iam_policy.py)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import iam_policy

    log = Path(os.environ["EAGLE3_AWS_CALLS"])
    actions = iam_policy.recorded_actions(log.read_text().splitlines())
    for needed in ("ec2:RunInstances", "ec2:TerminateInstances", "ec2:DescribeInstances", "ssm:GetParameter"):
        assert needed in actions, sorted(actions)          # the recorder saw the launch, the teardown and the lookup
    policy = json.loads((ROOT / "iam/controller-policy.json").read_text())
    assert iam_policy.missing(actions, policy) == [], {a: sorted(actions[a]) for a in iam_policy.missing(actions, policy)}
