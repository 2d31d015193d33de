"""The collection eagle3.trn2 as an ops team gets it: built from this checkout, installed into a fresh path,
run from there (no checkout, no playbook_dir): its group_vars defaults apply, its refusals name the settings,
its provenance says which copy ran, and ansible-doc shows every role's inputs."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())


def run(*argv: str, env: dict | None = None, cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)


def test_the_archive_holds_the_collection_and_not_the_test_bed(built):
    with tarfile.open(built) as tar:
        names = set(tar.getnames())
    tops = {name.split("/")[0] for name in names}
    for wanted in ["roles", "playbooks", "plugins", "group_vars", "templates", "meta", "MANIFEST.json", "FILES.json"]:
        assert wanted in tops
    for role in ROLES:
        assert f"roles/{role}/meta/argument_specs.yml" in names
    assert {"playbooks/site.yml", "meta/runtime.yml", "plugins/lookup/provenance.py",
            "plugins/callback/eagle3_progress.py", "templates/report.html.j2"} <= names
    assert not tops & {"molecule", ".config", "tests", "scripts", "inventories", ".venv", "results", "artifacts", ".ansible", ".git"}


def installed_env(installed: Path, tmp_path: Path) -> dict:
    # No ANSIBLE_CONFIG: the checkout's ansible.cfg (and its link to the checkout) is not used.
    return {"ANSIBLE_COLLECTIONS_PATH": str(installed), "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"),
            "EAGLE3_RESULTS_DIR": str(tmp_path / "results"), "EAGLE3_RUN_ID": "collection", "ANSIBLE_NOCOLOR": "1"}


def test_installed_playbooks_get_the_project_defaults_and_name_the_setting(installed, tmp_path):
    """The preflight of the installed copy, started outside the checkout: it needs every default of
    group_vars/ (it reads them all) and refuses a bad setting by its project name."""
    inventory = str(ROOT / "inventories" / "rehearsal" / "hosts.yml")
    env = installed_env(installed, tmp_path)
    ok = run("ansible-playbook", "-i", inventory, "eagle3.trn2.preflight", env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    bad = run("ansible-playbook", "-i", inventory, "eagle3.trn2.preflight", "-e", "eagle3_bench_num_prompts=1",
              env=env, cwd=tmp_path)
    out = " ".join((bad.stdout + bad.stderr).split())
    assert bad.returncode != 0
    assert "Refused before any change" in out and "eagle3_bench_num_prompts" in out
    # the settings behind the role inputs it names, from the installed copy's own declaration (its group_vars)
    assert "(vllm_bench_num_prompts is set from eagle3_bench_num_prompts;" in out, out[-3000:]


def provenance(env: dict, cwd: Path) -> str:
    proc = run("ansible", "localhost", "-m", "ansible.builtin.debug", "-a", "msg={{ lookup('eagle3.trn2.provenance') }}",
               env=dict(env, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1"), cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The checkout's ansible.cfg also enables profile_tasks, whose lines surround the JSON document.
    document, _ = json.JSONDecoder().raw_decode(proc.stdout[re.search(r"(?m)^\{", proc.stdout).start():])
    return document["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]


def test_provenance_of_an_installed_copy_is_its_version_and_files(installed, tmp_path):
    root = installed / "ansible_collections" / "eagle3" / "trn2"
    files = hashlib.sha256((root / "FILES.json").read_bytes()).hexdigest()[:16]
    version = json.loads((root / "MANIFEST.json").read_text())["collection_info"]["version"]
    assert provenance(installed_env(installed, tmp_path), tmp_path) == f"eagle3.trn2 {version} installed, files sha256 {files}"


def test_provenance_of_the_checkout_is_its_git_revision(tmp_path):
    described = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
                               capture_output=True, text=True, check=True).stdout.strip()
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections")}
    assert provenance(env, ROOT) == f"eagle3.trn2 1.0.0 checkout, git {described}"


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_shows_every_documented_input(installed, tmp_path, role):
    proc = run("ansible-doc", "-j", "-t", "role", f"eagle3.trn2.{role}", env=installed_env(installed, tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)[f"eagle3.trn2.{role}"]["entry_points"]
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert set(shown) == set(specs)
    for entry, spec in specs.items():
        assert set(shown[entry].get("options") or {}) == set(spec.get("options") or {}), entry
        for name, option in (spec.get("options") or {}).items():
            assert shown[entry]["options"][name].get("description"), f"{role} {entry} {name} has no description"


@pytest.mark.parametrize("plugin", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "plugins").glob("*/*.py")
                                          if p.parent.name != "module_utils" and p.name != "__init__.py"))
def test_plugin_documentation_is_yaml_ansible_doc_can_read(plugin):
    # ansible-doc and ansible-lint read these strings as YAML; a colon or brace in a plain scalar breaks them
    # (ansible-lint then prints "Unable to parse documentation" and the plugin's page is empty).
    tree = ast.parse((ROOT / plugin).read_text())
    docs = {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ("DOCUMENTATION", "EXAMPLES", "RETURN") and isinstance(node.value, ast.Constant)}
    for name, text in docs.items():
        assert yaml.safe_load(text) is not None, f"{plugin}: {name} is empty"
