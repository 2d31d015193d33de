"""The collection's plugins are loaded once per run, in ansible-playbook's process (plugins/callback/preload.py).

Ansible forks a worker per task and host; to resolve one of this collection's filters a worker imported every filter
file of the collection, with their imports. The effect is read in the workers themselves: a filter of the test's own
(filter_plugins/ beside its playbook, not the collection's) returns which modules a task's worker holds when the task
starts, before any of the collection's plugins is asked for in it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

CFG_CALLBACKS = "ansible.builtin.profile_tasks, eagle3.trn2.preload"
# Modules the plugin files import (Ansible runs the plugin files themselves under names of its own): one per kind.
MODULES = [
    "ansible_collections.eagle3.trn2.plugins.module_utils.results.bands",               # by filter/bands.py, which no task uses
    "ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings",           # by filter/cli_refusal.py
    "ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks",  # by lookup/dir_problem.py
    "ansible_collections.eagle3.trn2.plugins.module_utils.controller_io",               # by action/controller_file.py
    "jsonschema",                                                                       # the settings' and results' validator
    # MODULE:FUNCTION, the function's cache filled: the parsed settings schema, each role's inputs, the result schema
    "ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings:_effective",
    "ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings:project_names",
    "ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings:role_input_entries",
    "ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks:_shape",
]
PROBE = """import sys


def held(name):
    module, _, function = name.partition(":")
    if module not in sys.modules:
        return False
    return not function or getattr(sys.modules[module], function).cache_info().currsize > 0


def modules_held(names):
    return {name: held(name) for name in names}


class FilterModule:
    def filters(self):
        return {"modules_held": modules_held}
"""


def _stems(kind: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / "plugins" / kind).glob("*.py") if not p.name.startswith("_"))


def _run(tmp_path: Path, callbacks: str | None, held: bool, verbosity: str = "") -> subprocess.CompletedProcess:
    """Two tasks that template the collection's filters and a lookup, then a task whose worker reports which of MODULES
    it holds, which must be all (held) or none; with the project's ansible.cfg, its callbacks replaced when given."""
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    (tmp_path / "filter_plugins").mkdir(exist_ok=True)
    (tmp_path / "filter_plugins" / "probe.py").write_text(PROBE)
    book = tmp_path / "play.yml"
    tasks = "".join(
        f"    - name: task {i}\n      ansible.builtin.set_fact:\n"
        f"        wide{i}: \"{{{{ ['0.0.0.0/0'] | eagle3.trn2.eagle3_cidrs_too_wide }}}}\"\n"
        f"        placeholders{i}: \"{{{{ ['vllm-neuron==0.4.1'] | eagle3.trn2.pypi_placeholders }}}}\"\n"
        f"        problem{i}: \"{{{{ query('eagle3.trn2.dir_problem', '{tmp_path}') | first }}}}\"\n"
        for i in range(2))
    book.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n" + tasks
                    + "    - name: The collection's filters answered\n      ansible.builtin.assert:\n"
                      "        that: [wide0 | length == 1, placeholders1 | length == 0, problem1 == '']\n"
                      "    - name: What a new task's worker holds when it starts\n      ansible.builtin.set_fact:\n"
                      f"        held: \"{{{{ {MODULES!r} | modules_held }}}}\"\n"
                      "    - name: All or none\n      ansible.builtin.assert:\n"
                      f"        that: held.values() | list == [{str(held).lower()}] * {len(MODULES)}\n"
                      "        fail_msg: \"{{ held | to_json }}\"\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    if callbacks is not None:
        env["ANSIBLE_CALLBACKS_ENABLED"] = callbacks
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(book),
                           *([verbosity] if verbosity else [])],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc


def test_the_project_configuration_enables_the_preload():
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "ansible.cfg")
    assert [v.strip() for v in cfg["defaults"]["callbacks_enabled"].split(",")] == [v.strip() for v in CFG_CALLBACKS.split(",")]


def test_a_task_worker_starts_with_the_collection_plugins_loaded(tmp_path):
    _run(tmp_path, None, held=True)


def test_without_the_preload_each_task_worker_loads_them_again(tmp_path):
    """The cost the preload removes, and the proof the probe can tell: the earlier tasks loaded the plugins, each in a
    worker of its own, and the probe's worker starts without them."""
    _run(tmp_path, "ansible.builtin.profile_tasks", held=False)


def test_the_preload_names_every_filter_lookup_and_action_file_it_loaded(tmp_path):
    proc = _run(tmp_path, None, True, "-vvv")
    line = next(line for line in proc.stdout.splitlines() if line.startswith("eagle3.trn2.preload: "))
    loaded = dict(part.strip().split(" ", 1) for part in line.removeprefix("eagle3.trn2.preload: ").split(";"))
    for kind in ("filter", "lookup", "action"):
        assert loaded[kind].split(", ") == _stems(kind), kind
    assert loaded["ansible"] == "filters, tests" and loaded["schema"] == "jsonschema, settings, result_checks"


def test_jsonschema_is_imported_only_when_a_value_is_validated():
    """module_utils/settings/schema.py is imported with every filter file (cli_refusal -> settings -> schema):
    jsonschema, about 55 ms of imports, waits for the first validation."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema, settings\n"
            "assert 'jsonschema' not in sys.modules, 'imported at load'\n"
            "assert schema.problems(3, {'type': 'string'}, 'x') == ['x must be a string (got 3)'], schema.problems(3, {'type': 'string'}, 'x')\n"
            "assert 'jsonschema' in sys.modules\n") % str(ROOT / "collections")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
