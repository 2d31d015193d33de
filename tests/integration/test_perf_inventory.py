"""scripts/perf/lab.py's inventory for the perf pair, as ansible-inventory reads it; perf.py's arithmetic, called
directly: tests/unit/test_perf.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_perf import lab


def test_the_perf_inventory_holds_only_the_perf_hosts_in_the_rehearsal_groups(tmp_path):
    """Its hosts in vllm_hosts under podman_hosts (the connection settings), nothing of the rehearsal's own hosts."""
    import yaml

    inv = lab.inventory(tmp_path / "pair", {"perf-a": 8341, "perf-b": 8342})
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv), "--list"],
                          capture_output=True, text=True, timeout=120, cwd=lab.ROOT)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert sorted(listed["vllm_hosts"]["hosts"]) == ["perf-a", "perf-b"]
    assert "rehearsal-1" not in listed["_meta"]["hostvars"]
    a = listed["_meta"]["hostvars"]["perf-a"]
    assert (a["ansible_port"], a["eagle3_port"], a["ansible_host"], a["eagle3_rehearsal_pair"]) == (2341, 8341, "127.0.0.1", "agreeing")
    assert listed["_meta"]["hostvars"]["localhost"]["eagle3_rehearsal_pair"] == "agreeing"
    assert yaml.safe_load((inv / "hosts.yml").read_text())["all"]["children"]["eagle3"]["children"]["podman_hosts"]
