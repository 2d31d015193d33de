"""One transport configuration (issue 38, item 3): the molecule scenarios reach their hosts as real runs do, with
ansible.cfg's SSH settings (pipelining, ControlPersist, host key checking against the pinned known_hosts). Molecule
writes an ansible.cfg of its own for each scenario (pipelining and host key checking off unless set), so each
scenario's config_options must carry the same values: read from the files molecule and ansible-playbook read."""
from __future__ import annotations

import configparser

import pytest
import yaml

from conftest import ROOT

CFG = configparser.ConfigParser(interpolation=None)
CFG.read(ROOT / "ansible.cfg")


@pytest.mark.parametrize("scenario", ["default", "neuron", "ec2"])
def test_each_scenario_uses_the_transport_of_real_runs(scenario):
    options = yaml.safe_load((ROOT / f"molecule/{scenario}/molecule.yml").read_text())["provisioner"]["config_options"]
    ssh = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options["ssh_connection"].items()}
    assert ssh == {k: v.lower() if v in ("True", "False") else v for k, v in CFG["ssh_connection"].items()}
    assert str(options["defaults"]["host_key_checking"]) == CFG["defaults"]["host_key_checking"]
