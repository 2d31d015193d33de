"""serving.json, as roles/vllm_serving/tasks/record.yml writes it in a real ansible-playbook: the k and sha256 of the
config that serves, and the last line of serve, roll and replace. The comparison filters, called directly:
tests/unit/test_serving_measured.py."""
from __future__ import annotations

import json

from conftest import play_and_read
from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import eagle3_served_config
from test_serving_measured import SWEEP


RECORD = """---
- name: Record what serves
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write serving.json
      ansible.builtin.include_role:
        name: eagle3.trn2.vllm_serving
        tasks_from: record
      vars:
        vllm_serving_results_dir: "{{ base }}"
        vllm_serving_run_id: sweep-1
        vllm_serving_record_mode: best
        vllm_serving_record_hosts: [rehearsal-1, rehearsal-2]
"""


def test_serving_json_records_the_k_and_sha256_of_the_config_that_serves(tmp_path):
    served = eagle3_served_config(SWEEP["files"]["/etc/eagle3/eagle3-k3.yaml"])
    checked = {"profile": "eagle3-k3", "unit": "vllm-serve.service", "url": "http://127.0.0.1:8000",
               "listen": "127.0.0.1:8000", "smoke_test": " 6 7 8", "unauthorized_status": 401, **served, "measured": True}
    base = tmp_path / "results"
    base.mkdir()
    proc, _ = play_and_read(tmp_path, RECORD, {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "rehearsal-1": {"vllm_serving_checked": checked}, "rehearsal-2": {}}, base, [])
    record = json.loads((base / "sweep-1" / "serving.json").read_text())
    assert record["hosts"]["rehearsal-1"]["k"] == 3
    assert record["hosts"]["rehearsal-1"]["config_sha256"] == SWEEP["sha256"]["/etc/eagle3/eagle3-k3.yaml"]
    assert record["hosts"]["rehearsal-1"]["measured"] is True
    assert record["hosts"]["rehearsal-2"] is None  # not checked by this run
    # The last word of serve, roll and replace names method, k and config: what an operator checks before traffic.
    out = " ".join(proc.stdout.split())
    assert (f"rehearsal-1: serves eagle3-k3 (method eagle3, k 3, config sha256 "
            f"{SWEEP['sha256']['/etc/eagle3/eagle3-k3.yaml'][:12]}) at http://127.0.0.1:8000") in out, out[-2000:]
    assert "rehearsal-2: serves nothing" in out
