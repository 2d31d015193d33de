"""The trn2 inventory refuses bad input before anything is created: the host roles' inputs are
checked on the controller while the fleet does not exist yet (playbooks/preflight.yml).

Only inventories/aws/hosts.yml is used (not the aws_ec2 plugin), so nothing reaches AWS.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What an operator must type (the least: not the Neuron apt key's fingerprint, the role's default is AWS's public key;
# the tests below pass the up-front checks without it).
OPERATOR = {"provision_ec2_admin_cidr": "203.0.113.0/24",
            "model_assets_dataset_checksum": "sha256:" + "0" * 64}
NEURON_KEY = "00FA2C1079260870A76D2C285749CAD8646D9185"
# The operator's token comes from the environment, as the project asks (a token given with -e is refused).
TOKEN = "hf_OperatorToken0123456789abcdefgh"


def site(extra: dict, results: Path) -> tuple[int, str]:
    # results: a fresh directory of the test's (a fixed path under /tmp is shared with anything else on the machine).
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), AWS_EC2_METADATA_DISABLED="true",
               EAGLE3_RUN_ID="aws-preflight", EAGLE3_RESULTS_DIR=str(results), HF_TOKEN=TOKEN)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ROOT / "inventories/aws/hosts.yml"),
                           str(ROOT / "site.yml"), "-e", json.dumps(extra)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_unset_operator_settings_are_named(tmp_path):
    rc, out = site({}, tmp_path)
    assert rc != 0 and "Refused before any change: provision_ec2_admin_cidr must be a CIDR" in out
    assert "Provision the hosts" not in out  # the provisioning play never started


def test_host_inputs_are_checked_before_the_fleet_exists(tmp_path):
    rc, out = site({**OPERATOR, "eagle3_tensor_parallel_size": 3}, tmp_path)
    assert rc != 0
    assert "eagle3_tensor_parallel_size) must divide the host's 64 logical NeuronCores (got 3)" in out
    assert "Provision the hosts" not in out


def test_refusal_names_only_the_variable_it_is_about(tmp_path):
    # vllm_bench_dataset_path contains vllm_bench_dataset: the refusal names the first only (as a whole token),
    # so the setting behind the second (eagle3_bench_dataset) is not blamed.
    rc, out = site({**OPERATOR, "vllm_bench_dataset_path": "data/sonnet.txt"}, tmp_path)
    assert rc != 0
    assert ('Refused before any change: vllm_bench_dataset_path must be an absolute path without spaces or "."/".." parts, '
            'not an OS prefix (/, /usr, /etc, /var/lib, ...) (got "data/sonnet.txt") '
            "(vllm_bench_dataset_path is set from eagle3_dataset_path)") in out
    assert "eagle3_bench_dataset" not in out


def test_the_shipped_inventory_needs_no_apt_key_fingerprint():
    """The neuron_sdk default is AWS's public Neuron key (sources in its defaults and docs/aws.md); no shipped
    inventory overrides it (an empty value there would outrank the default and be refused)."""
    import yaml
    defaults = yaml.safe_load((ROOT / "roles/neuron_sdk/defaults/main.yml").read_text())
    specs = yaml.safe_load((ROOT / "roles/neuron_sdk/meta/argument_specs.yml").read_text())
    assert defaults["neuron_sdk_apt_key_fingerprint"] == NEURON_KEY
    assert specs["argument_specs"]["main"]["options"]["neuron_sdk_apt_key_fingerprint"]["default"] == NEURON_KEY
    assert NEURON_KEY.endswith("5749CAD8646D9185")          # the long id AWS's troubleshooting page shows
    for f in [*ROOT.glob("inventories/*/group_vars/**/*.yml"), *ROOT.glob("inventories/*/hosts.yml"),
              *ROOT.glob("roles/settings/defaults/main/*.yml")]:
        assert "neuron_sdk_apt_key_fingerprint" not in (yaml.safe_load(f.read_text()) or {}), f
