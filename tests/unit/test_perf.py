"""scripts/perf/: the readiness-lag arithmetic on the JSON callback's report shape (lab.py's report helpers, perf.py's
lags), the perf inventory, the peer's client options, the stragglers' CPU halves; the scripts' imports form no circle."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "scripts/perf"
sys.path.insert(0, str(PERF))  # as `python scripts/perf/X.py` has it: the scripts import each other by name
import lab  # noqa: E402
import perf  # noqa: E402


def task(name, start, end, hosts=("h1",)):
    return {"task": {"name": name, "duration": {"start": start, "end": end}}, "hosts": {h: {} for h in hosts}}


REPORT = {"plays": [{"tasks": [
    task("vllm_bench : Start vllm-baseline.service", "2026-11-30T03:20:00.000000Z", "2026-11-30T03:20:00.300000Z"),
    task("vllm_bench : Wait for /health (a retry line every window) {{ x }}", "2026-11-30T03:20:00.300000Z",
         "2026-11-30T03:20:41.250000Z"),
    task("vllm_bench : Wait for /health (a retry line every window) {{ x }}", "2026-11-30T03:21:10.000000Z",
         "2026-11-30T03:21:50.500000Z"),
]}]}


def test_task_ends_match_role_prefixed_names():
    ends = lab.task_ends(REPORT, "Wait for /health")
    assert [h for h, _ in ends] == ["h1", "h1"]
    assert ends[1][1] - ends[0][1] == 69.25
    assert lab.task_seconds(REPORT, "Start vllm-baseline") == 0.3


def test_lag_is_measured_from_the_latest_startup_before_each_end():
    ends = [e for _, e in lab.task_ends(REPORT, "Wait for /health")]
    starts = [ends[0] - 0.4, ends[1] - 1.1, ends[1] + 5]  # the last one is after: ignored
    assert perf.readiness_lags(starts, ends) == [0.4, 1.1]
    assert perf.readiness_lags([], ends) == []


def test_the_peer_takes_our_clients_options_from_its_namespace_line():
    """scripts/perf/peer.py passes `vllm bench sweep serve` the workload our run's client used, read back from the
    Namespace line it printed (a real one); the --metadata list's NAME=value strings are not options."""
    import peer

    line = (ROOT / "tests/fixtures/bench/namespace-vllm-0.29.0-cpu.txt").read_text()
    assert "'temperature=0'" in line  # in the metadata list, not the option
    args = peer.client_args(line)
    assert args == {"base_url": "http://127.0.0.1:8342", "model": "/var/lib/eagle3/models/target", "dataset_name": "sonnet",
                    "dataset_path": "/var/lib/eagle3/models/dataset/sonnet.txt", "num_prompts": "10", "max_concurrency": "2",
                    "sonnet_input_len": "512", "sonnet_output_len": "128", "sonnet_prefix_len": "200",
                    "custom_output_len": "256", "temperature": "0.0", "seed": "0"}
    assert peer.bench_command(args).startswith("/opt/eagle3/venv/bin/vllm bench serve --base-url http://127.0.0.1:8342 ")


def test_own_cores_gives_each_straggler_host_its_own_half_of_the_cpus(monkeypatch):
    """scripts/perf.sh --stragglers --own-cores: A the first half of the CPUs this process may use, B the second, never
    one CPU for both; one CPU is refused."""
    import stragglers

    monkeypatch.setattr(stragglers.os, "sched_getaffinity", lambda pid: {3, 0, 2, 1})
    assert stragglers.own_cores("a", "b") == {"a": "0,1", "b": "2,3"}
    monkeypatch.setattr(stragglers.os, "sched_getaffinity", lambda pid: {4, 5, 7})
    assert stragglers.own_cores("a", "b") == {"a": "4", "b": "5,7"}
    monkeypatch.setattr(stragglers.os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(SystemExit, match="at least 2 CPUs"):
        stragglers.own_cores("a", "b")


def test_the_rerun_counts_the_tasks_each_host_ran_as_the_json_callback_counts_them():
    # ansible.posix.json's stats: Ansible's AggregateStats, whose ok counts the changed tasks too (a changed result
    # increments both); failures apart.
    stats = {"stats": {"perf-site-1": {"ok": 49, "changed": 0, "failures": 0, "skipped": 31, "unreachable": 0},
                       "localhost": {"ok": 45, "changed": 2, "failures": 1, "skipped": 20, "unreachable": 0}}}
    assert lab.tasks_run(stats) == {"perf-site-1": {"ran": 49, "skipped": 31}, "localhost": {"ran": 46, "skipped": 20}}
    assert lab.changed(stats) == {"perf-site-1": 0, "localhost": 2}


def test_breakdown_counts_each_task_where_it_ran():
    """The JSON callback's shape (ansible.posix.json, as scripts/perf/perf.py saves it): per host, the result with its
    `action`; a delegated task's `_ansible_delegated_vars` (a loop's in each item); `skipped` on a skipped host."""
    def at(name, start, end, **hosts):
        return {"task": {"name": name, "duration": {"start": f"2026-12-05T03:00:{start}Z", "end": f"2026-12-05T03:00:{end}Z"}},
                "hosts": hosts}
    local = {"ansible_connection": "local", "ansible_host": "localhost"}
    report = {"plays": [{"tasks": [
        at("pip", "00.000000", "40.000000", h1={"action": "ansible.builtin.command"}),
        at("probe", "40.000000", "40.300000", h1={"action": "ansible.builtin.command"}),
        at("stat", "40.300000", "40.700000", h1={"action": "ansible.builtin.stat", "_ansible_delegated_vars": local}),
        at("loop", "40.700000", "41.000000", h1={"action": "ansible.builtin.stat", "results": [{"_ansible_delegated_vars": local}]}),
        at("fact", "41.000000", "41.020000", h1={"action": "ansible.builtin.set_fact"}),
        at("record", "41.020000", "41.050000", h1={"action": "eagle3.trn2.controller_file"}),
        at("skipped", "41.050000", "41.060000", h1={"action": "ansible.builtin.copy", "skipped": True}),
        at("report", "41.060000", "41.460000", localhost={"action": "ansible.builtin.find"}),
        {"task": {"name": "running", "duration": {"start": "2026-12-05T03:00:41.460000Z"}}, "hosts": {}},
    ]}]}
    got = lab.breakdown(report)
    assert got["heavy"] == [{"task": "pip", "s": 40.0}] and got["heavy_s"] == 40.0
    assert got["short"] == {"host": {"tasks": 1, "s": 0.3}, "controller": {"tasks": 3, "s": 1.1},
                            "in_process": {"tasks": 2, "s": 0.1}, "skipped": {"tasks": 1, "s": 0.0}}
    assert got["short_s"] == 1.5


def test_the_perf_scripts_import_each_other_in_no_circle():
    """Each scripts/perf/*.py's imports of its siblings (any `import X` / `from X import`, at any depth in the file):
    lab.py imports none of them, and the graph among them is acyclic."""
    scripts = {path.stem: path for path in PERF.glob("*.py")}
    graph = {}
    for name, path in scripts.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
        graph[name] = sorted(found & set(scripts) - {name})
    assert {"lab", "perf", "peer", "stragglers"} <= set(graph)
    assert graph["lab"] == []
    assert "perf" not in graph["peer"] + graph["stragglers"] + graph["compile_cache"]

    done, on_path = set(), []

    def visit(name):
        assert name not in on_path, f"import circle: {' -> '.join(on_path[on_path.index(name):] + [name])}"
        if name in done:
            return
        on_path.append(name)
        for imported in graph[name]:
            visit(imported)
        on_path.pop()
        done.add(name)

    for name in graph:
        visit(name)
