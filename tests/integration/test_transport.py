"""One transport configuration (what the tests prove holds for real runs): the molecule scenarios reach their hosts as
real runs do, with ansible.cfg's SSH settings (pipelining, ControlPersist, host key checking against the pinned
known_hosts). Molecule writes an ansible.cfg of its own for each scenario (pipelining and host key checking off unless
set), so each scenario's config_options must carry the same values (the shared .config/molecule/config.yml with the
scenario's molecule.yml merged over it): read from the files molecule and ansible-playbook read."""
from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, molecule_config

CFG = configparser.ConfigParser(interpolation=None)
CFG.read(ROOT / "ansible.cfg")


@pytest.mark.parametrize("scenario", ["default", "neuron", "ec2"])
def test_each_scenario_uses_the_transport_of_real_runs(scenario):
    options = molecule_config(scenario)["provisioner"]["config_options"]
    ssh = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options["ssh_connection"].items()}
    assert ssh == {k: v.lower() if v in ("True", "False") else v for k, v in CFG["ssh_connection"].items()}
    assert str(options["defaults"]["host_key_checking"]) == CFG["defaults"]["host_key_checking"]
    # The same callbacks: the preload (plugins loaded once, not in every task's worker) and the progress output.
    for key in ("callbacks_enabled", "stdout_callback"):
        assert [v.strip() for v in str(options["defaults"][key]).split(",")] == [v.strip() for v in CFG["defaults"][key].split(",")], key


def _evaluations(tmp_path, resolve: bool) -> int:
    """How many times a host's connection settings were templated in a run of 20 tasks that never connect (the host is
    unreachable: every task runs in the controller's process), with or without playbooks/run_id.yml before them."""
    counter = tmp_path / f"counter-{resolve}"
    inv = tmp_path / f"hosts-{resolve}.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"eagle3": {"children": {
        "controller": {"hosts": {"localhost": {"ansible_connection": "local",
                                               "ansible_python_interpreter": sys.executable}}},
        "vllm_hosts": {"hosts": {"counted-1": {
            "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_user": "nobody",
            # Each evaluation appends one byte to the counter, as $HOME's env lookup in the rehearsal's settings costs.
            "ansible_ssh_common_args": f"{{{{ lookup('ansible.builtin.pipe', 'printf . >> {counter}') }}}}-o IdentitiesOnly=yes",
        }}}}}}}}))
    (tmp_path / "group_vars").mkdir(exist_ok=True)
    book = tmp_path / f"book-{resolve}.yml"
    plays = [{"import_playbook": str(ROOT / "playbooks/run_id.yml")}] if resolve else []
    plays.append({"name": "Twenty tasks in the controller's process", "hosts": "vllm_hosts", "gather_facts": False,
                  "tasks": [{"name": f"task {i}", "ansible.builtin.set_fact": {"n": i}} for i in range(20)]
                  + [{"name": "The value the tasks saw", "ansible.builtin.assert": {
                      "that": "ansible_ssh_common_args == '-o IdentitiesOnly=yes'"}}]})
    book.write_text(yaml.safe_dump(plays))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv), str(book),
                           "-e", "eagle3_run_id=transport-test"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return len(counter.read_text()) if counter.exists() else 0


def test_connection_settings_are_templated_once_per_run(tmp_path):
    """Every task templates its host's connection settings in its worker: run_id.yml (imported by every playbook)
    keeps their values as facts, so a lookup in them runs once per run instead of once per task. The run without it
    shows the counter counts: once per task at least."""
    assert _evaluations(tmp_path, resolve=False) >= 21
    # Three, all in the resolving task: its condition, its value, and its own worker's connection settings.
    assert _evaluations(tmp_path, resolve=True) <= 3
