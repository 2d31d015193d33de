"""Project defaults in group_vars/all that depend on the accelerator."""
from __future__ import annotations

import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from conftest import ROOT

MAIN = yaml.safe_load((ROOT / "group_vars/all/main.yml").read_text())


@pytest.mark.parametrize(("accelerator", "enforced"), [("neuron", False), ("cpu", True)])
def test_reference_gate_is_informational_on_trn2(accelerator, enforced):
    # Rendered as Ansible renders a lone expression (native types): a real boolean.
    template = MAIN["eagle3_gates"]["reference"]["enforce"]
    assert NativeEnvironment().from_string(template).render(eagle3_accelerator=accelerator) is enforced
    # The other gates keep their settings from the one place they are defined (eagle3_gate_settings).
    assert list(MAIN["eagle3_gates"]) == ["reference"]
