"""A fleet that cannot be forgotten. The dead-man switch's units, deadline and user data
(plugins/module_utils/cloud/deadman.py) and what the module does with them (set_switch, against a scripted systemctl
and a temporary unit directory), the run's expected length it keeps (settings.run_hours), the end-of-run teardown
decision and lines (plugins/module_utils/cloud/infra.py), the relation between eagle3_teardown and serving, the DLAMI search that
sees deprecated images and the instance type's offering (plugins/module_utils/cloud/ec2.py, against answers validated
by botocore's own EC2 model), and each start's start-to-ready on record (plugins/module_utils/report/timeline.py eagle3_starts). The switch on a live
host: molecule/default/tests/unit/test_deadman.py; on moto (the launch's attribute and user data, teardown at the run's
end): molecule/ec2/tests/test_ec2.py."""
from __future__ import annotations

import base64
from datetime import datetime, timezone

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import infra
from ansible_collections.eagle3.trn2.plugins.module_utils.report.timeline import eagle3_starts
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import deadman as D
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud import ec2 as E

EPOCHS = st.integers(min_value=1_700_000_000, max_value=2_100_000_000)
HOURS = st.floats(min_value=0.25, max_value=168, allow_nan=False)


@hsettings(max_examples=300, deadline=None)
@given(EPOCHS, st.one_of(st.none(), EPOCHS), HOURS)
def test_a_deadline_is_pushed_only_when_less_than_the_hours_are_left_and_a_push_holds(now, current, hours):
    pushed = D.next_deadline(now, current, hours)
    assert (pushed is None) == (current is not None and current >= now + hours * 3600)
    if pushed is not None:
        assert now + 1.5 * hours * 3600 <= pushed < now + 1.5 * hours * 3600 + 60 and pushed % 60 == 0
        # the rerun right after changes nothing, and the host keeps the hours from it
        assert D.next_deadline(now, pushed, hours) is None


@hsettings(max_examples=200, deadline=None)
@given(EPOCHS)
def test_the_timer_holds_its_deadline_in_utc_and_reads_back(epoch):
    units = D.units(epoch)
    assert D.deadline_of(units[D.TIMER]) == float(epoch)
    assert f"OnCalendar={datetime.fromtimestamp(epoch, timezone.utc):%Y-%m-%d %H:%M:%S} UTC" in units[D.TIMER]
    assert "Persistent=true" in units[D.TIMER] and f"Unit={D.SERVICE}" in units[D.TIMER]
    assert f"ExecStart={D.COMMAND}\n" in units[D.SERVICE] and "poweroff" in D.COMMAND
    assert D.deadline_of("OnCalendar=daily") is None and D.deadline_of(None) is None


@hsettings(max_examples=50, deadline=None)
@given(EPOCHS)
def test_the_user_data_writes_the_same_units_and_enables_the_timer_at_first_boot(epoch):
    text = D.cloud_config(epoch)
    assert text.startswith("#cloud-config\n")
    data = yaml.safe_load(text)
    assert {f["path"]: f["content"] for f in data["write_files"]} == {
        f"{D.UNIT_DIR}/{name}": body for name, body in D.units(epoch).items()}
    assert data["runcmd"] == [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", D.TIMER]]
    assert len(base64.b64encode(text.encode())) < 16384  # EC2's user data limit (16 KB, before base64)


def test_the_launchs_user_data_gives_the_host_one_and_a_half_times_the_run():
    before = datetime.now(timezone.utc).timestamp()
    files = yaml.safe_load(infra.eagle3_deadman_user_data(2))["write_files"]
    deadline = D.deadline_of(next(f["content"] for f in files if f["path"].endswith(D.TIMER)))
    assert before + 3 * 3600 <= deadline <= before + 3 * 3600 + 120


def _tutorial(**change):
    values = {"eagle3_bench_stream_rate": {"cpu": 48, "neuron": 92}, "eagle3_accelerator": "neuron",
              "eagle3_bench_num_prompts": 50, "eagle3_bench_output_len": 128, "eagle3_bench_max_concurrency": 2,
              "eagle3_num_speculative_tokens": [3], "eagle3_bench_rounds": 1, "eagle3_ready_timeout": 3600}
    return {**values, **change}


def test_the_tutorials_run_is_expected_to_take_its_two_starts_and_an_hour():
    # 2 profiles x 50 prompts x 128 tokens at 92 x 2 tok/s (70 s) + 2 starts x 3600 s + 1 h, to the quarter
    assert S.run_hours(_tutorial()) == 3.25


@hsettings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True), st.integers(30, 7200),
       st.integers(1, 2000))
def test_the_expected_length_covers_every_start_and_the_benchmark_and_grows_with_each(rounds, ks, ready, prompts):
    values = _tutorial(eagle3_bench_rounds=rounds, eagle3_num_speculative_tokens=ks, eagle3_ready_timeout=ready,
                       eagle3_bench_num_prompts=prompts)
    hours = S.run_hours(values)
    bench = S.bench_hours(values)[0]
    assert hours >= bench + rounds * (1 + len(ks)) * ready / 3600 + S.SETUP_HOURS and (hours * 4).is_integer()
    assert S.run_hours({**values, "eagle3_bench_rounds": rounds + 1}) >= hours
    assert S.run_hours({**values, "eagle3_ready_timeout": ready + 600}) > hours - 0.25


@pytest.mark.parametrize(("teardown", "verdict", "due"), [
    ("never", {"ok": True}, False), ("never", {"ok": False}, False), ("never", None, False),
    ("on_success", {"ok": True}, True), ("on_success", {"ok": False}, False), ("on_success", None, False),
    ("on_success", {"ok": "true"}, False),
    ("always", {"ok": True}, True), ("always", {"ok": False}, True), ("always", None, True)])
def test_the_run_end_tears_down_as_eagle3_teardown_says(teardown, verdict, due):
    assert infra.eagle3_teardown_due(teardown, verdict) is due


@pytest.mark.parametrize("serve", ["best", "eagle3"])
def test_a_run_that_serves_may_not_tear_its_fleet_down(serve):
    found = S.meaning_problems({"eagle3_teardown": "on_success", "eagle3_serve": serve, "eagle3_serve_api_key": "k" * 32}, 1)
    assert any(p.startswith(f"eagle3_teardown on_success tears down a fleet that eagle3_serve {serve}") for p in found), found
    assert not [p for p in S.meaning_problems({"eagle3_teardown": "always", "eagle3_serve": "none"}, 1) if "teardown" in p]


def test_the_last_lines_say_when_each_host_goes_and_how_to_keep_it():
    lines = infra.eagle3_deadman_lines({
        "i-1": {"armed": True, "deadline": "2026-12-07 03:00:00 UTC", "keep": D.KEEP, "serving": False},
        "i-2": {"armed": False, "deadline": "", "keep": D.KEEP, "serving": True}, "i-3": None}, "ec2")
    assert lines == [
        "i-1: powers itself off at 2026-12-07 03:00:00 UTC and terminates unless a run pushes it; to keep it, run "
        "`sudo systemctl disable --now eagle3-deadman.timer` on it or rerun with -e eagle3_deadman=false",
        "i-2: no dead-man switch (it serves, or eagle3_deadman is false): it runs until eagle3.trn2.teardown",
        "i-3: its dead-man switch was not set in this run (no host phase ran there)"]


# A DescribeImages answer as EC2 gives it for the DLAMI search (owner amazon, the name pattern of
# provision_ec2_ami_name_pattern): the Image shape of botocore's EC2 model (botocore/data/ec2/2016-11-15/service-2.json,
# DescribeImagesResult), which the Stubber validates it against; the newest 2.32 image is deprecated
# (DeprecationTime in the past: AWS deprecates older DLAMIs), the 2.33 one is not. Names and descriptions follow the
# DLAMI's (aws-neuron-sdk deploy/environments/dlami.rst selects a release by "description=*Neuron SDK 2.32.0*").
def _image(image_id, date, sdk, deprecated=None):
    image = {"ImageId": image_id, "Name": f"Deep Learning AMI Neuron (Ubuntu 24.04) {date}", "State": "available",
             "OwnerId": "898082745236", "ImageOwnerAlias": "amazon", "Architecture": "x86_64",
             "CreationDate": f"{date[:4]}-{date[4:6]}-{date[6:]}T08:00:00.000Z", "Public": True,
             "Description": f"Deep Learning AMI Neuron, Neuron SDK {sdk}, Ubuntu 24.04",
             "RootDeviceName": "/dev/sda1", "RootDeviceType": "ebs", "VirtualizationType": "hvm", "EnaSupport": True}
    if deprecated:
        image["DeprecationTime"] = deprecated
    return image


ANSWER = {"Images": [_image("ami-0a1b2c3d4e5f60001", "20260912", "2.32.0", "2026-11-20T00:00:00.000Z"),
                     _image("ami-0a1b2c3d4e5f60002", "20261019", "2.33.0")]}


def test_the_dlami_search_asks_for_deprecated_images_and_finds_the_releases_deprecated_dlami():
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="FIXTURE", aws_secret_access_key="FIXTURE")
    filters = {"name": "Deep Learning AMI Neuron (Ubuntu 24.04)*", "state": "available"}
    with Stubber(client) as stub:
        stub.add_response("describe_images", ANSWER, E.request(["amazon"], filters))
        images = E.find_images(client, ["amazon"], filters)
        stub.assert_no_pending_responses()
    assert E.request(["amazon"], filters)["IncludeDeprecated"] is True
    found = infra.dlamis_of_release(images, "2.32.0")
    assert [(i["image_id"], i["deprecation_time"]) for i in found] == [("ami-0a1b2c3d4e5f60001", "2026-11-20T00:00:00.000Z")]


def test_an_instance_types_offering_and_shape_and_none_where_it_is_not_offered():
    """What ec2_instance_type_offering returns, from DescribeInstanceTypeOfferings (region, then zones) and
    DescribeInstanceTypes; a region without the type is asked nothing more."""
    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="FIXTURE", aws_secret_access_key="FIXTURE")
    where = [{"Name": "instance-type", "Values": ["trn2.48xlarge"]}]
    with Stubber(client) as stub:
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [
            {"InstanceType": "trn2.48xlarge", "LocationType": "region", "Location": "us-east-2"}]},
            {"LocationType": "region", "Filters": where})
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [
            {"InstanceType": "trn2.48xlarge", "LocationType": "availability-zone", "Location": z}
            for z in ("us-east-2c", "us-east-2b")]}, {"LocationType": "availability-zone", "Filters": where})
        stub.add_response("describe_instance_types", {"InstanceTypes": [{
            "InstanceType": "trn2.48xlarge", "VCpuInfo": {"DefaultVCpus": 192},
            "InstanceStorageInfo": {"TotalSizeInGB": 7600},
            "NeuronInfo": {"NeuronDevices": [{"Count": 16, "Name": "Trainium2"}]}}]},
            {"InstanceTypes": ["trn2.48xlarge"]})
        assert E.offering(client, "trn2.48xlarge") == {"offered": True, "zones": ["us-east-2b", "us-east-2c"],
                                                        "neuron_devices": 16, "instance_storage_gb": 7600, "vcpus": 192}
        for location in ("region", "availability-zone"):
            stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []},
                              {"LocationType": location, "Filters": where})
        assert E.offering(client, "trn2.48xlarge") == {"offered": False, "zones": [], "neuron_devices": 0,
                                                        "instance_storage_gb": 0, "vcpus": 0}
        stub.assert_no_pending_responses()


def test_the_provision_role_searches_dlamis_with_deprecated_ones():
    tasks = yaml.safe_load((ROOT / "roles/provision/tasks/ec2_ami.yml").read_text())
    assert not [t["name"] for t in tasks if "amazon.aws.ec2_ami_info" in t]
    assert len([t for t in tasks if "eagle3.trn2.ec2_ami_find" in t]) == 2


def test_each_start_keeps_its_start_to_ready_its_cache_and_the_engines_compile_metrics():
    starts = eagle3_starts({"baseline": {"start": 100.0, "ready": 129.4, "compile_cache": "cold"},
                            "eagle3.round2": {"start": 200.0, "ready": 212.0, "compile_cache": "local",
                                              "compile_metrics": {"vllm_neuron:compilation_time_seconds": 11.5}},
                            "eagle3": {"start": 150.0, "failed": True}})
    assert starts == {"baseline": {"start_to_ready_s": 29.4, "compile_cache": "cold", "compile_metrics": {}},
                      "eagle3": {"start_to_ready_s": None, "compile_cache": None, "compile_metrics": {}},
                      "eagle3.round2": {"start_to_ready_s": 12.0, "compile_cache": "local",
                                        "compile_metrics": {"vllm_neuron:compilation_time_seconds": 11.5}}}


@pytest.mark.parametrize("playbook", ["host.yml", "service.yml", "benchmark.yml"])
def test_every_host_phase_pushes_the_switch_before_its_work(playbook):
    play = yaml.safe_load((ROOT / "playbooks" / playbook).read_text())[-1]
    roles = [r["role"] if isinstance(r, dict) else r for r in play["roles"]]
    assert roles[:2] == ["eagle3.trn2.settings", "eagle3.trn2.deadman"], roles


class Systemd:
    """systemctl as set_switch sees it through `run`: the serving unit enabled or not, the timer active or not, and the
    verbs that fail; each command it was given kept in `calls`."""

    def __init__(self, serving=False, active=False, failing=()):
        self.serving, self.active, self.failing, self.calls = serving, active, set(failing), []

    def __call__(self, argv):
        self.calls.append(argv)
        verb = argv[1]
        if verb == "is-enabled":
            return (0, "enabled\n", "") if self.serving else (1, "disabled\n", "")
        if verb == "is-active":
            return (0 if self.active else 3, "active\n" if self.active else "inactive\n", "")
        if verb in self.failing:
            return 1, "", f"Failed to {verb}: Access denied\n"
        self.active = {"enable": self.active, "restart": True, "disable": False}.get(verb, self.active)
        return 0, "", ""


NOW = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def test_the_switch_is_armed_kept_while_enough_is_left_and_pushed_when_not(tmp_path):
    systemd = Systemd()
    checked = D.set_switch(systemd, "armed", 3, check=True, now=NOW, unit_dir=str(tmp_path))
    assert checked == {"changed": True, "armed": True, "deadline": "2027-01-15 12:30:00 UTC",
                       "deadline_epoch": NOW + 4.5 * 3600, "command": D.COMMAND, "keep": D.KEEP, "serving": False}
    assert list(tmp_path.iterdir()) == [] and [c[1] for c in systemd.calls] == ["is-enabled", "is-active"]
    armed = D.set_switch(systemd, "armed", 3, now=NOW, unit_dir=str(tmp_path))
    assert armed == checked
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == D.units(NOW + 4.5 * 3600)
    assert oct((tmp_path / D.TIMER).stat().st_mode & 0o777) == "0o644"
    assert systemd.calls[-3:] == [["systemctl", "daemon-reload"], ["systemctl", "enable", D.TIMER],
                                  ["systemctl", "restart", D.TIMER]]
    # an hour later 3.5 h are left: kept, nothing run
    systemd.calls = []
    assert D.set_switch(systemd, "armed", 3, now=NOW + 3600, unit_dir=str(tmp_path)) == {**armed, "changed": False}
    assert len(systemd.calls) == 2
    # a longer run, or a timer that is not active, pushes it
    assert D.set_switch(systemd, "armed", 4, now=NOW + 3600, unit_dir=str(tmp_path))["deadline"] == "2027-01-15 15:00:00 UTC"
    systemd.active = False
    assert D.set_switch(systemd, "armed", 1, now=NOW + 3600, unit_dir=str(tmp_path))["changed"] is True


def test_a_serving_host_or_state_absent_removes_the_switch_and_then_changes_nothing(tmp_path):
    systemd = Systemd()
    D.set_switch(systemd, "armed", 3, now=NOW, unit_dir=str(tmp_path))
    systemd.serving = True
    systemd.calls = []
    # the hours are not checked on a host that serves: it keeps no switch
    removed = D.set_switch(systemd, "armed", 0, check=True, now=NOW, unit_dir=str(tmp_path))
    assert removed == {"changed": True, "armed": False, "deadline": "", "deadline_epoch": 0.0, "command": D.COMMAND,
                       "keep": D.KEEP, "serving": True}
    assert len(list(tmp_path.iterdir())) == 2 and len(systemd.calls) == 2
    assert D.set_switch(systemd, "armed", 0, now=NOW, unit_dir=str(tmp_path)) == removed
    assert list(tmp_path.iterdir()) == [] and systemd.calls[-2:] == [["systemctl", "disable", "--now", D.TIMER],
                                                                      ["systemctl", "daemon-reload"]]
    systemd.serving = False
    assert D.set_switch(systemd, "absent", now=NOW, unit_dir=str(tmp_path)) == {**removed, "changed": False,
                                                                                  "serving": False}


def test_a_refusal_and_a_failed_systemctl_say_what_and_why(tmp_path):
    for hours in (0, -1.5):
        with pytest.raises(D.DeadmanError) as refused:
            D.set_switch(Systemd(), "armed", hours, now=NOW, unit_dir=str(tmp_path))
        assert str(refused.value) == f"hours must be more than 0 (got {hours:g})"
    with pytest.raises(D.DeadmanError) as failed:
        D.set_switch(Systemd(failing={"restart"}), "armed", 3, now=NOW, unit_dir=str(tmp_path))
    assert str(failed.value) == "systemctl restart eagle3-deadman.timer failed (rc 1): Failed to restart: Access denied"
    with pytest.raises(D.DeadmanError) as failed:
        D.set_switch(Systemd(failing={"daemon-reload"}), "absent", now=NOW, unit_dir=str(tmp_path))
    assert str(failed.value) == "systemctl daemon-reload failed (rc 1): Failed to daemon-reload: Access denied"
    assert list(tmp_path.iterdir()) == []  # the units were removed before the reload failed
    with pytest.raises(D.DeadmanError, match=r"^systemctl is-enabled x failed \(rc 4\): out$"):
        D.systemctl(lambda argv: (4, " out \n", ""), "is-enabled", "x")
