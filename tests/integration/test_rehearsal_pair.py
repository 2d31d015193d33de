"""eagle3_rehearsal_pair's bad values are refused by the preflight before any change (playbooks/preflight.yml
on a rehearsal inventory whose host does not exist: nothing is contacted or created)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def preflight(tmp_path: Path, extra: dict) -> tuple[int, str]:
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "group_vars").symlink_to(ROOT / "inventories/rehearsal/group_vars")
    rehearsal = (ROOT / "inventories/rehearsal/hosts.yml").read_text()
    # The rehearsal's own inventory with its host renamed: a host that is never created.
    (inventory / "hosts.yml").write_text(rehearsal.replace("rehearsal-1:", "pair-check-1:"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), EAGLE3_RUN_ID="pair-check",
               EAGLE3_RESULTS_DIR=str(tmp_path / "results"))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(ROOT / "playbooks/preflight.yml"), "-e", json.dumps(extra)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize(("extra", "refusal"), [
    ({"eagle3_rehearsal_pair": "trainde"},
     # the settings schema's refusal (plugins/module_utils/settings/settings_schema.yml), before the role's argument_specs
     'Refused before any change: eagle3_rehearsal_pair must be one of: trained, agreeing, random (got "trainde")'),
    # The weak draft exists only with the trained pair (the default; the agreeing pair has none).
    ({"eagle3_rehearsal_pair": "agreeing", "eagle3_draft_model": "/var/lib/eagle3/models/draft-weak"},
     "model_assets_draft_model (eagle3_draft_model) must be /var/lib/eagle3/models/draft with source rehearsal, "
     "or /var/lib/eagle3/models/draft-weak (the acceptance drill's draft) with eagle3_rehearsal_pair trained "
     '(got "/var/lib/eagle3/models/draft-weak")')])
def test_bad_rehearsal_pair_settings_are_refused_by_name(tmp_path, extra, refusal):
    rc, out = preflight(tmp_path, extra)
    assert rc != 0 and refusal in out, out[-3000:]
