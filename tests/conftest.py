"""Shared fixtures: runs fetched from real rehearsal runs (see tests/fixtures/README.md)."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# scripts/test.sh unit: coverage.py (EAGLE3_UNIT_COVERAGE, its config file) in each pytest-xdist worker, started
# before this file imports the plugins; the controller, which only hands out tests and prints, is not traced (tracing
# it cost CPU the lane's time budget has no room for). Each worker writes its own data file, combined after the run.
if os.environ.get("EAGLE3_UNIT_COVERAGE") and os.environ.get("PYTEST_XDIST_WORKER"):
    import coverage

    _COVERAGE = coverage.Coverage(config_file=os.environ["EAGLE3_UNIT_COVERAGE"], data_suffix=True)
    _COVERAGE.start()

    def pytest_unconfigure(config):
        _COVERAGE.stop()
        _COVERAGE.save()

ROOT = Path(__file__).resolve().parents[1]
RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
# The head of an inline inventory of the project's shape: the eagle3 group with the controller (localhost, local);
# a test appends its own groups under eagle3's children (8 spaces in).
CONTROLLER_INVENTORY = """---
all:
  children:
    eagle3:
      children:
        controller:
          hosts:
            localhost:
              ansible_connection: local
              ansible_python_interpreter: "{{ ansible_playbook_python }}"
"""
# tests/unit: the unit lane (UNIT below); tests/integration: the tests that run Ansible (playbooks, roles, the
# collection's build) without a container. The files of both directories import helpers from each other by module
# name (from test_cache_disk import ...), whichever directory pytest collects first.
UNIT = Path(__file__).resolve().parent / "unit"
INTEGRATION = Path(__file__).resolve().parent / "integration"
sys.path.insert(0, str(UNIT))
sys.path.insert(0, str(INTEGRATION))
sys.path.insert(0, str(ROOT / "scripts"))
# The plugins that import each other do so as the collection's modules (ansible_collections.eagle3.trn2...):
# the checkout's committed link collections/ansible_collections/eagle3/trn2, where ansible.cfg looks for it.
COLLECTIONS = ROOT / "collections"
sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import load_run  # noqa: E402


def load_file(path: Path, name: str | None = None, register: bool = False):
    """The Python file at `path` imported as a module of its own (`name`, else its stem), as the roles and modules run
    it (python -c, AnsiballZ): the host-side scripts and modules are no package; `register` puts it in sys.modules
    first, for code that looks itself up there (dataclasses of a module)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def molecule_config(scenario: str) -> dict:
    """A molecule scenario's configuration as molecule reads it (before it interpolates ${...}): the shared base config
    .config/molecule/config.yml with molecule/<scenario>/molecule.yml merged over it by molecule's own merge (mappings
    key by key; a list or a scalar in the scenario's file replaces the base's whole value)."""
    import yaml
    from molecule.util import merge_dicts

    base = yaml.safe_load((ROOT / ".config/molecule/config.yml").read_text())
    return merge_dicts(base, yaml.safe_load((ROOT / f"molecule/{scenario}/molecule.yml").read_text()))


# The unit lane (scripts/test.sh unit): tests/unit calls the code directly, on the controller's Python alone, within
# its time budget (docs/testing.md). Its tests carry the `unit` marker (pytest.ini); one that starts an Ansible,
# molecule or podman process fails, so a slow end-to-end test cannot slip into the lane.
REFUSED_IN_UNIT = ("ansible", "molecule", "podman")


def pytest_collection_modifyitems(config, items):
    for item in items:
        parents = Path(str(item.path)).resolve().parents
        if UNIT in parents:
            item.add_marker(pytest.mark.unit)
        elif INTEGRATION in parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _unit_starts_no_ansible(request, monkeypatch):
    """Under tests/unit: subprocess.Popen (subprocess.run and check_output go through it) refuses a command whose
    program is ansible*, molecule* or podman*."""
    if request.node.get_closest_marker("unit") is None:
        return
    popen = subprocess.Popen

    class Guarded(popen):
        def __init__(self, args, *rest, **kwargs):
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
            program = os.path.basename((os.fsdecode(argv[0]).split() or [""])[0]) if argv else ""
            if program.startswith(REFUSED_IN_UNIT):
                pytest.fail(f"a unit test started {program}: tests/unit calls the code directly (a test that needs "
                            f"{program} belongs in tests/)", pytrace=False)
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Guarded)


def play_and_read(tmp_path: Path, playbook: str, hosts: dict, base: Path,
                  registered: list[str]) -> tuple[subprocess.CompletedProcess, dict]:
    """Run `playbook` (its text, ending with its tasks) with ansible.cfg against an inventory of `hosts` and
    `-e base=<base>`, assert it passed, and return what each task registered as `registered` names: a last task,
    added here, writes them to <base>/returned.json on the controller."""
    keep = ", ".join(f"'{name}': {name}" for name in registered)
    book, inventory = tmp_path / "play.yml", tmp_path / "inventory.yml"
    book.write_text(playbook.rstrip("\n") + "\n    - name: Keep what each task returned\n      eagle3.trn2.controller_file:\n"
                    f"        path: \"{{{{ base }}}}/returned.json\"\n        content: \"{{{{ {{{keep}}} | to_json }}}}\"\n")
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(book),
                           "-e", json.dumps({"base": str(base)})],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, json.loads((base / "returned.json").read_text())


def host_of(run: str) -> str:
    """The one host directory of a single-host fixture run under RUNS."""
    (host,) = [p.name for p in (RUNS / run).iterdir() if p.is_dir()]
    return host


@pytest.fixture
def agree_run() -> dict[str, dict]:
    """{profile: bench JSON} of the agreeing-draft run (one host)."""
    return load_run(RUNS / "agree")["rehearsal-1"]["results"]


@pytest.fixture
def run_copy(tmp_path):
    """Copy fixture runs' host directories into one run directory under tmp_path."""
    def make(**hosts: str) -> Path:
        for host, source in hosts.items():
            src_run, src_host = source.split("/")
            shutil.copytree(RUNS / src_run / src_host, tmp_path / "run" / host)
        return tmp_path / "run"
    return make


def _galaxy(*argv: str, env: dict | None = None) -> None:
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-galaxy"), "collection", *argv], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """The collection tarball built from this checkout (once per test session)."""
    import yaml

    out = tmp_path_factory.mktemp("build")
    _galaxy("build", "--output-path", str(out), str(ROOT))
    return out / f"eagle3-trn2-{yaml.safe_load((ROOT / 'galaxy.yml').read_text())['version']}.tar.gz"


@pytest.fixture(scope="session")
def installed(built, tmp_path_factory) -> Path:
    """A collections path holding the tarball installed as an ops team installs it (--no-deps: the pinned
    ansible package brings the dependencies)."""
    dest = tmp_path_factory.mktemp("collections")
    _galaxy("install", "--no-deps", "-p", str(dest), str(built), env={"ANSIBLE_COLLECTIONS_PATH": str(dest)})
    return dest


# Every AWS operation the Ansible runs of a test file make, recorded (molecule/ec2/files/aws_calls/sitecustomize.py,
# the recorder molecule ec2 uses): the S3 files' runs (results export, the S3 relay, wheelhouse, compile cache)
# are checked against iam/controller-policy.json by their last test (`assert_allowed_by_the_policy`).
AWS_RECORDER = ROOT / "molecule" / "ec2" / "files" / "aws_calls"


@pytest.fixture(scope="module")
def aws_calls(tmp_path_factory):
    """The log every Ansible process this module starts writes its AWS operations to (the module's own environment)."""
    log = tmp_path_factory.mktemp("aws_calls") / "aws_calls.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EAGLE3_AWS_CALLS", str(log))
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(AWS_RECORDER), os.environ.get("PYTHONPATH")])))
        yield log


def assert_allowed_by_the_policy(log: Path, expected: set[str]) -> None:
    """The operations recorded in `log` include `expected` (the recorder saw them) and the policy allows every one."""
    import iam_policy

    actions = iam_policy.recorded_actions(log.read_text().splitlines() if log.exists() else [])
    assert expected <= set(actions), sorted(actions)
    policy = json.loads((ROOT / "iam" / "controller-policy.json").read_text())
    assert iam_policy.missing(actions, policy) == [], {a: sorted(actions[a]) for a in iam_policy.missing(actions, policy)}


def templar(variables: dict):
    """Ansible's templar in this process with the collection's filters under their collection names (this process's
    Ansible has not loaded the collection), as the role's tasks and templates call them."""
    import importlib

    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    templar = Templar(loader=DataLoader())
    for path in sorted((ROOT / "plugins/filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.eagle3.trn2.plugins.filter.{path.stem}")
        for name, function in module.FilterModule().filters().items():
            templar.environment.filters[f"eagle3.trn2.{name}"] = function
    templar.available_variables = variables
    return templar
