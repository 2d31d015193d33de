"""The neuron units and environment file as vllm_service renders them, where the Neuron DLAMI
mounted the instance store at /opt/dlami/nvme and on an EBS-only host: the role's own cache_disk.yml runs `lsblk` on
this controller with a FIXTURE lsblk first on PATH (tests/playbooks/rendered_unit.yml), so the disk choice, the cache
path, the limits and the environment come from the role's code unchanged; systemd-analyze then reads each unit.
systemd's live reading of the units on a host is molecule neuron's (test_neuron.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from test_cache_disk import ROOT as ROOT_DISK, disk, raid_member

LAYOUTS = {
    # lsblk -J -o NAME,PATH,MODEL,SERIAL,TYPE,FSTYPE,LABEL,MOUNTPOINT as tests/unit/test_cache_disk.py builds it (the shape
    # util-linux prints: one object per device, children nested).
    "dlami-raid0": [ROOT_DISK] + [raid_member(f"nvme{n}n1") for n in range(1, 5)],
    "ebs-only": [ROOT_DISK],
}


# The project's count for the instance type (roles/settings/defaults/main/settings.yml, eagle3_neuron_devices), as the role's default takes it.
DEVICES = yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())["eagle3_neuron_devices"]["trn2.48xlarge"]


def unit_file(text: str) -> dict[str, list[str]]:
    """Key -> values of a unit file, in order (systemd's keys repeat: EnvironmentFile, DeviceAllow)."""
    keys: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            keys.setdefault(key, []).append(value)
    return keys


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def rendered(request, tmp_path_factory):
    base = tmp_path_factory.mktemp(request.param)
    (base / "bin").mkdir()
    fixture = base / "bin/lsblk"
    fixture.write_text("#!/bin/sh\n# FIXTURE lsblk: a %s host's block devices\ncat <<'JSON'\n%s\nJSON\n"
                       % (request.param, json.dumps({"blockdevices": LAYOUTS[request.param]})))
    fixture.chmod(0o755)
    (base / "out").mkdir()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(ROOT / "tests/playbooks/rendered_unit.yml"),
                           "-e", json.dumps({"out": str(base / "out"), "devices": DEVICES})], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
                                   PATH=f"{base / 'bin'}:{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return request.param, base / "out"


def test_the_cache_goes_where_the_dlami_mounted_the_instance_store_else_the_root_volume(rendered):
    layout, out = rendered
    env = dict(line.split("=", 1) for line in (out / "vllm.env").read_text().splitlines() if "=" in line and not line.startswith("#"))
    unit = unit_file((out / "vllm-eagle3-k3.service").read_text())
    if layout == "dlami-raid0":
        assert env["VLLM_CACHE_ROOT"] == "/opt/dlami/nvme/eagle3/vllm"
        assert env["TORCHINDUCTOR_CACHE_DIR"] == "/opt/dlami/nvme/eagle3/vllm/torchinductor"
        assert unit["Requires"] == ["eagle3-cache.service"] and "eagle3-cache.service" in unit["After"]
        assert unit["ReadWritePaths"] == ["/var/lib/eagle3 /opt/dlami/nvme/eagle3/vllm"]
    else:
        assert env["VLLM_CACHE_ROOT"] == "/var/lib/eagle3/cache"
        assert "Requires" not in unit and unit["ReadWritePaths"] == ["/var/lib/eagle3"]


def test_the_units_carry_the_library_path_the_limits_and_the_cache_hit_only_file(rendered):
    _, out = rendered
    env = (out / "vllm.env").read_text()
    assert "LD_LIBRARY_PATH=/opt/aws/neuron/lib:/opt/amazon/efa/lib:/opt/amazon/efa/lib64\n" in env
    for name in ("vllm-baseline.service", "vllm-eagle3-k3.service", "vllm-serve.service"):
        unit = unit_file((out / name).read_text())
        assert unit["LimitNOFILE"] == ["65535"] and unit["LimitMEMLOCK"] == ["infinity"], name
        files = unit["EnvironmentFile"]
        assert files[0] == "/etc/eagle3/vllm.env", name
        # The benchmark units read the cache-hit-only file vllm_bench writes; the serving unit never does.
        assert ("-/etc/eagle3/cache-hit-only.env" in files) == (name != "vllm-serve.service"), name
        assert unit["DeviceAllow"] == [f"/dev/neuron{n} rw" for n in range(16)] and DEVICES == 16, name
        assert unit["DevicePolicy"] == ["closed"] and "PrivateDevices" not in unit, name


def test_the_serving_unit_names_the_sha256_of_its_config_so_a_changed_config_restarts_it(rendered):
    # Serve what was measured: a config put back with the same name but other values must not leave the old server
    # running.
    _, out = rendered
    line = "# Serves serve.yaml as it was when this unit was written (sha256 " + "5e" * 32 + "): a changed"
    assert line in (out / "vllm-serve.service").read_text().splitlines()
    assert "5e" * 32 not in (out / "vllm-eagle3-k3.service").read_text()


def test_systemd_reads_every_key(rendered):
    """systemd-analyze verify names unknown keys and values it cannot parse; what it cannot find on this controller
    (the venv's vllm, eagle3-cache.service, the service user) is not the unit's fault."""
    _, out = rendered
    proc = subprocess.run(["systemd-analyze", "verify", *sorted(str(p) for p in out.glob("*.service"))],
                          capture_output=True, text=True, timeout=60)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                if re.search(r"Unknown (key|section|lvalue)|[Ff]ailed to parse|Invalid|[Ii]gnoring", line)]
    assert problems == []
