"""A fleet finishes as fast as its slowest host: a host that lags at one step never holds the others.

Two local hosts run the benchmark flow of tests/playbooks/tasks/stragglers.yml: per profile, in order, the vllm_bench
role's real compile-cache steps, a start, the canary's real publish. The play's keywords (strategy, serial, ...) are
copied from playbooks/benchmark.yml, and the compile-cache wait is the project's default (roles/settings), so the
flow runs as the benchmark play would. Host a (the canary, the first host as in playbooks/benchmark.yml) lags at its
baseline start, host b at its EAGLE3 start, each lagging step lasting until the other host has reached its own:

- hosts that progress independently release each other at once: b goes through its baseline while a lags, reaches
  its EAGLE3 start and so ends a's lag; neither lag reaches its limit, however slow the machine;
- in lock step (the linear strategy, or b waiting for the canary's compile) b cannot reach its EAGLE3 start while
  a's baseline start runs, so a's lag lasts its whole limit: a fleet pays both hosts' lags.
The order decides, not a wall time. The same flow in both kinds of lock step is run too, to show the check fails.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LAG = {"a": "baseline", "b": "eagle3"}


def benchmark_play() -> dict:
    """The keywords of playbooks/benchmark.yml's play on the vLLM hosts, without its hosts, roles and privileges."""
    (play,) = [p for p in yaml.safe_load((ROOT / "playbooks/benchmark.yml").read_text()) if p.get("hosts") == "vllm_hosts"]
    return {k: v for k, v in play.items() if k not in ("name", "hosts", "roles", "tasks", "become", "gather_facts", "vars")}


def project_wait() -> int:
    """eagle3_compile_cache_wait as the project sets it (roles/settings/defaults/main/settings.yml; the role's default
    is the setting)."""
    roles = yaml.safe_load((ROOT / "roles/compile_cache/defaults/main.yml").read_text())
    assert roles["compile_cache_wait"] == "{{ eagle3_compile_cache_wait }}"
    return int(yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())["eagle3_compile_cache_wait"])


def fleet(tmp_path: Path, play: dict, limit: int, wait: int) -> tuple[dict[str, dict], str]:
    """Run the flow on hosts a and b with the play keywords `play`; (per host record, log)."""
    hosts = {}
    for host in ("a", "b"):
        etc = tmp_path / host / "etc"
        etc.mkdir(parents=True)
        (tmp_path / host / "cache").mkdir()
        (etc / "vllm.env").write_text(f"# managed\nHOME={tmp_path / host / 'home'}\nVLLM_CACHE_ROOT={tmp_path / host / 'cache'}\n")
        (etc / "baseline.yaml").write_text("model: org/model\nmax-num-seqs: 2\n")
        (etc / "eagle3.yaml").write_text("model: org/model\nmax-num-seqs: 2\n"
                                         "speculative-config: {method: eagle3, model: org/draft, num_speculative_tokens: 3}\n")
        hosts[host] = {"ansible_connection": "local"}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    book = tmp_path / "fleet.yml"
    book.write_text(yaml.safe_dump([{
        "name": "The benchmark flow of two hosts, each lagging at another step", "hosts": "all", "gather_facts": False,
        **play,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "compile_cache_run_id": "stragglers",
                 "compile_cache_results_dir": "{{ base }}/results", "compile_cache_dir": "{{ base }}/results/compile-cache",
                 "compile_cache_config_dir": "{{ base }}/{{ inventory_hostname }}/etc", "compile_cache_poll_window": 1,
                 "compile_cache_work_dir": "{{ base }}/{{ inventory_hostname }}/results/stragglers",
                 "compile_cache_wait": wait,
                 "compile_cache_first_host": "{{ ansible_play_hosts_all | first }}",
                 "compile_cache_deployed": {"pip": {"vllm": "0.29.0", "torch": "2.13.0"}, "deb": {}}},
        "tasks": [{"name": "The flow", "ansible.builtin.include_tasks": str(ROOT / "tests/playbooks/tasks/stragglers.yml")}],
    }], sort_keys=False))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(book),
                           "-e", json.dumps({"base": str(tmp_path), "lag": LAG, "other": {"a": "b", "b": "a"}, "limit": limit})],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return {h: json.loads((tmp_path / f"{h}.json").read_text()) for h in ("a", "b")}, proc.stdout


def test_the_benchmark_play_lets_each_host_pay_only_its_own_lag(tmp_path):
    # The limit is only reached on failure: long enough for b's whole baseline flow on a slow, loaded machine.
    got, log = fleet(tmp_path, benchmark_play(), limit=300, wait=project_wait())
    assert got["a"]["lagging"] == {"baseline": "released", "eagle3": "none"}, got
    assert got["b"]["lagging"] == {"baseline": "none", "eagle3": "released"}, got
    # Nobody waited for the canary's compile: b compiled where nothing was stored yet (the project's default).
    assert got["b"]["cache"] == {"baseline": "cold", "eagle3": "cold"}
    assert "hosts do not wait for the canary" in log


def test_the_check_fails_on_lock_step(tmp_path):
    """The same flow with the linear strategy: b cannot reach its EAGLE3 start while a lags at its baseline."""
    got, _ = fleet(tmp_path, {**benchmark_play(), "strategy": "linear"}, limit=20, wait=project_wait())
    assert got["a"]["lagging"]["baseline"] == "timeout"


def test_waiting_for_the_canary_couples_the_hosts_and_ships_its_cache(tmp_path):
    """With compile_cache_wait (eagle3_compile_cache_wait) above 0 (strict compile once) b waits for a's lagging baseline start and then
    starts from a's shipped cache: the trade-off the setting makes (docs/how-it-works.md, "Compile once per fleet")."""
    got, log = fleet(tmp_path, benchmark_play(), limit=20, wait=120)
    assert got["a"]["lagging"]["baseline"] == "timeout"
    assert got["b"]["cache"]["baseline"] == "shipped" and got["a"]["cache"]["baseline"] == "cold"
    assert "shipped from the canary a through the controller and applied" in log
