"""The profiles' `vllm serve --config` files as vllm_service's serve.yaml.j2 renders them from the project's settings
(tests/playbooks/rendered_config.yml, on this controller): eagle3_bench_same_scheduling gives the baseline alone
`no-async-scheduling: true`, over whatever the shared server options say of async scheduling."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT


def render(tmp_path: Path, extra: dict) -> dict[str, dict]:
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(ROOT / "tests/playbooks/rendered_config.yml"),
                           "-e", json.dumps(dict(extra, out=str(out)))], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))}


def test_by_default_the_baseline_schedules_as_vllm_defaults(tmp_path):
    configs = render(tmp_path, {})
    assert sorted(configs) == ["baseline", "eagle3"]
    assert all("no-async-scheduling" not in c and "async-scheduling" not in c for c in configs.values())


@pytest.mark.parametrize("shared", [{}, {"async-scheduling": True}])
def test_same_scheduling_turns_the_baselines_async_scheduling_off_alone(tmp_path, shared):
    configs = render(tmp_path, {"eagle3_bench_same_scheduling": True, "eagle3_server_options": shared})
    base, spec = configs["baseline"], configs["eagle3"]
    assert base["no-async-scheduling"] is True and "async-scheduling" not in base
    assert (base["max-num-seqs"], base["no-enable-prefix-caching"]) == (2, True)  # the shared options stay
    assert "no-async-scheduling" not in spec and spec.get("async-scheduling") == shared.get("async-scheduling")
    assert spec["speculative-config"]["num_speculative_tokens"] == 3
