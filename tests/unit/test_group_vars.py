"""Project defaults (roles/settings) that depend on the accelerator."""
from __future__ import annotations

import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from conftest import ROOT

MAIN = yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())


@pytest.mark.parametrize(("accelerator", "enforced"), [("neuron", False), ("cpu", True)])
def test_reference_gate_is_informational_on_trn2(accelerator, enforced):
    # Rendered as Ansible renders a lone expression (native types): a real boolean.
    template = MAIN["eagle3_gates_defaults"]["reference"]["enforce"]
    assert NativeEnvironment().from_string(template).render(eagle3_accelerator=accelerator) is enforced
    # The other gates keep their settings from the one place they are defined (eagle3_gate_settings).
    assert list(MAIN["eagle3_gates_defaults"]) == ["parity", "reference"]


@pytest.mark.parametrize(("accelerator", "rate"), [("neuron", 61), ("cpu", 100)])
def test_parity_follows_vllms_rule_on_trn2(accelerator, rate):
    # vLLM's test_eagle_correctness: more than 60 % of its 100 prompts identical, i.e. at least 61 (a floor); CPU exact.
    assert list(MAIN["eagle3_gates_defaults"]["parity"]) == ["min_match_rate"]
    template = MAIN["eagle3_gates_defaults"]["parity"]["min_match_rate"]
    assert NativeEnvironment().from_string(template).render(eagle3_accelerator=accelerator) == rate


@pytest.mark.parametrize(("hostvars", "address"), [
    # An EC2 host serving on every interface: the monitor in the VPC scrapes its private address, not the public
    # ansible_host the controller's SSH uses (provision's add_host and the aws_ec2 inventory both set private_ip_address).
    ({"eagle3_serve_bind_address": "0.0.0.0", "ansible_host": "198.51.100.20", "private_ip_address": "10.0.1.20"},
     "10.0.1.20:8000"),
    # Another host serving on every interface (no private address known): its ansible_host.
    ({"eagle3_serve_bind_address": "0.0.0.0", "ansible_host": "192.0.2.5"}, "192.0.2.5:8000"),
    # The rehearsal: the loopback address it serves on.
    ({"eagle3_serve_bind_address": "127.0.0.1", "ansible_host": "127.0.0.1", "private_ip_address": "10.0.1.20"},
     "127.0.0.1:8000"),
])
def test_the_monitor_scrapes_where_the_host_serves(hostvars, address):
    template = MAIN["eagle3_monitor_address"]
    rendered = NativeEnvironment().from_string(template).render(eagle3_serve_port=8000, inventory_hostname="i-0abc", **hostvars)
    assert rendered == address
