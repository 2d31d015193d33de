"""A fleet finishes as fast as its slowest host (issue 15, item 1): a host that lags at one step never holds the others.

Two local hosts run the benchmark flow of tests/playbooks/tasks/stragglers.yml: per profile, in order, the vllm_bench role's
real compile-cache steps, a start, the canary's real publish, a benchmark. Host a (the canary, the first host as in
playbooks/benchmark.yml) is delayed by D seconds at its baseline start, host b at its EAGLE3 start. The play's keywords
(strategy, serial, ...) are copied from playbooks/benchmark.yml, so the test runs what the benchmark play would.

Lock step (the linear strategy, or a host waiting for the canary's compile) makes b's baseline wait for a's delayed
start, and a's EAGLE3 for b's: each host then pays both delays. Independent hosts each pay their own: b has finished
its baseline before a's baseline is even ready, and a its EAGLE3 before b's. D is large against a task's cost
(under a second here, 2 s on a slow loaded machine; the flow between the delays is a few tasks), so the order, not
a wall time, decides. The same flow in lock step is run too, to show the check fails on it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DELAY = 40
DELAYS = {"a": {"baseline": DELAY}, "b": {"eagle3": DELAY}}


def benchmark_play() -> dict:
    """The keywords of playbooks/benchmark.yml's play on the vLLM hosts, without its hosts, roles and privileges."""
    (play,) = [p for p in yaml.safe_load((ROOT / "playbooks/benchmark.yml").read_text()) if p.get("hosts") == "vllm_hosts"]
    return {k: v for k, v in play.items() if k not in ("name", "hosts", "roles", "tasks", "become", "gather_facts", "vars")}


def fleet(tmp_path: Path, play: dict, **extra) -> tuple[dict[str, dict], float, str]:
    """Run the flow on hosts a and b with the play keywords `play`; (per host record, wall s, log)."""
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
        "name": "The benchmark flow of two hosts, each delayed at another step", "hosts": "all", "gather_facts": False,
        **play,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", "vllm_bench_run_id": "stragglers",
                 "vllm_bench_results_dir": "{{ base }}/results", "vllm_bench_compile_cache_dir": "{{ base }}/results/compile-cache",
                 "vllm_bench_config_dir": "{{ base }}/{{ inventory_hostname }}/etc", "vllm_bench_poll_window": 1,
                 "vllm_bench_host_results_dir": "{{ base }}/{{ inventory_hostname }}/results",
                 "__vllm_bench_canary_host": "{{ ansible_play_hosts_all | first }}",
                 "__vllm_bench_deployed": {"pip": {"vllm": "0.29.0", "torch": "2.13.0"}, "deb": {}}},
        "tasks": [{"name": "The flow", "ansible.builtin.include_tasks": str(ROOT / "tests/playbooks/tasks/stragglers.yml")}],
    }], sort_keys=False))
    start = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(book),
                           "-e", json.dumps({"base": str(tmp_path), "delays": DELAYS, **extra})],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    wall = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return {h: json.loads((tmp_path / f"{h}.json").read_text()) for h in ("a", "b")}, wall, proc.stdout


def overlap(got: dict[str, dict]) -> float:
    """Seconds during which a's delayed baseline start and b's delayed EAGLE3 start ran at the same time. Lock step
    allows none: b reaches its EAGLE3 start only after every host (linear) or the canary (a wait for its compile) is
    past a's baseline start. Independent hosts overlap them by about D less b's baseline flow (a few tasks)."""
    a, b = got["a"]["times"]["baseline"], got["b"]["times"]["eagle3"]
    return min(a["delay_to"], b["delay_to"]) - max(a["delay_from"], b["delay_from"])


def test_the_benchmark_play_lets_each_host_pay_only_its_own_delay(tmp_path):
    got, wall, log = fleet(tmp_path, benchmark_play())
    a, b = got["a"]["times"], got["b"]["times"]
    assert overlap(got) > 0, json.dumps(got, indent=1)
    # Nobody waited for the canary's compile: each compiled where nothing was shipped yet (the default).
    assert got["b"]["cache"] == {"baseline": "cold", "eagle3": "cold"}
    assert "hosts do not wait for the canary" in log
    # Each host's own work: its delay plus the flow; the fleet's end is the later host's, not the sum of both delays.
    assert wall < 2 * DELAY + 60, wall
    print(f"fleet {wall:.1f} s; the two delays of {DELAY} s overlapped {overlap(got):.1f} s")


def test_the_check_fails_on_lock_step(tmp_path):
    """The same flow with the linear strategy: b's baseline waits for a's delayed start."""
    got, _, _ = fleet(tmp_path, {**benchmark_play(), "strategy": "linear"})
    assert overlap(got) <= 0
    a, b = got["a"]["times"], got["b"]["times"]
    assert b["baseline"]["bench_end"] > a["baseline"]["ready"]


def test_waiting_for_the_canary_couples_the_hosts_and_ships_its_cache(tmp_path):
    """With vllm_bench_compile_cache_wait set (strict compile once), b waits for a's delayed baseline start and then
    starts from a's shipped cache: the trade-off the setting makes (docs/how-it-works.md, "Compile once per fleet")."""
    got, _, log = fleet(tmp_path, benchmark_play(), vllm_bench_compile_cache_wait=3 * DELAY)
    assert overlap(got) <= 0
    assert got["b"]["cache"]["baseline"] == "shipped" and got["a"]["cache"]["baseline"] == "cold"
    assert got["b"]["times"]["baseline"]["ready"] > got["a"]["times"]["baseline"]["ready"]
    assert "shipped from the canary a and applied" in log
