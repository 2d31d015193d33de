"""One description per setting (issue 52): the schema entry is all a new setting needs.

In a copy of the checkout, a new setting is added by writing only its schema entry and the task that uses it; the
generator writes the rest, and then the role receives the value, the preflight refuses a wrong value naming the
setting, and `ansible-doc -t role` and docs/settings.md describe it. The checkout itself is as the generator writes it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

ENTRY = """  eagle3_demo_count:
    type: integer
    minimum: 1
    maximum: 9
    x-expect: "a demo count 1..9"
    default: 3
    description: >-
      How many demo lines the report role says (a setting added by tests/test_settings_gen.py).
    inputs: [bench_report_demo_count]
"""
TASK = """---
- name: Say the demo count
  ansible.builtin.debug:
    msg: "demo count {{ bench_report_demo_count }}"
"""
PLAY = """---
- name: Use the new setting
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the task that uses it
      ansible.builtin.include_role:
        name: eagle3.trn2.bench_report
        tasks_from: demo
"""


def run(args: list[str], cwd, **env) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ANSIBLE_CONFIG": str(cwd / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "default",
                               **env})


def generator(cwd, mode: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "scripts/settings_gen.py", mode], cwd)


def test_the_checkout_is_as_the_generator_writes_it():
    done = generator(ROOT, "--check")
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The checkout's tracked files (as they are in the working tree), with one new setting written by hand."""
    dest = tmp_path_factory.mktemp("checkout")
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dest / name)
        else:
            shutil.copy2(src, dest / name)
    schema = dest / "plugins/module_utils/settings_schema.yml"
    text = schema.read_text()
    anchor = "  eagle3_accelerator:\n"
    schema.write_text(text.replace(anchor, ENTRY + anchor, 1))
    (dest / "roles/bench_report/tasks/demo.yml").write_text(TASK)
    (dest / "demo.yml").write_text(PLAY)
    written = generator(dest, "--write")
    assert written.returncode == 0, written.stderr
    return dest


def test_a_stale_generated_file_is_named(copy):
    assert generator(copy, "--check").returncode == 0
    defaults = copy / "roles/settings/defaults/main/settings.yml"
    before = defaults.read_text()
    defaults.write_text(before.replace("eagle3_demo_count: 3", "eagle3_demo_count: 4"))
    try:
        done = generator(copy, "--check")
        assert done.returncode == 1 and "roles/settings/defaults/main/settings.yml differs from the schema" in done.stderr, done.stderr
    finally:
        defaults.write_text(before)


def test_the_role_receives_the_new_setting(copy):
    said = run(["ansible-playbook", "-i", "localhost,", "-c", "local", "demo.yml"], copy)
    assert said.returncode == 0, said.stdout[-2000:] + said.stderr[-2000:]
    assert "demo count 3" in said.stdout  # the schema's default
    said = run(["ansible-playbook", "-i", "localhost,", "-c", "local", "demo.yml", "-e", "eagle3_demo_count=7"], copy)
    assert "demo count 7" in said.stdout, said.stdout[-2000:]


def test_the_preflight_refuses_a_wrong_value_naming_the_setting(copy):
    refused = run(["ansible-playbook", "playbooks/preflight.yml", "-e", "eagle3_demo_count=12"], copy)
    assert refused.returncode != 0
    assert "eagle3_demo_count" in refused.stdout and "a demo count 1..9" in refused.stdout, refused.stdout[-3000:]


def test_ansible_doc_and_the_settings_doc_describe_it(copy):
    doc = run(["ansible-doc", "-t", "role", "eagle3.trn2.bench_report"], copy)
    assert doc.returncode == 0, doc.stderr
    assert "bench_report_demo_count" in doc.stdout and "eagle3_demo_count" in doc.stdout
    spec = yaml.safe_load((copy / "roles/bench_report/meta/argument_specs.yml").read_text())
    assert spec["argument_specs"]["main"]["options"]["bench_report_demo_count"]["type"] == "int"
    docs = (copy / "docs/settings.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `eagle3_demo_count` |"))
    assert "`3`" in row and "a demo count 1..9" in row and "How many demo lines" in row and "`bench_report_demo_count`" in row


def _single_input_rules() -> set[tuple[str, str]]:
    """(role, input) of each preflight rule whose condition reads one input the schema describes and nothing else of
    the role (no other input, no internal variable)."""
    from ansible_collections.eagle3.trn2.plugins.module_utils import settings as S

    def rules(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key.endswith("_rules") and isinstance(value, list):
                    yield from (r for r in value if isinstance(r, dict) and "ok" in r)
                else:
                    yield from rules(value)
        elif isinstance(node, list):
            for item in node:
                yield from rules(item)

    found = set()
    for path in sorted(ROOT.glob("roles/*/tasks/preflight.yml")):
        role = path.parts[-3]
        described = S.role_input_entries(role)
        for rule in rules(yaml.safe_load(path.read_text())):
            names = set(re.findall(rf"\b(?:__)?{role}_[a-z0-9_]+\b", str(rule["ok"])))
            if len(names) == 1 and next(iter(names)) in described:
                found.add((role, next(iter(names))))
    return found


def test_a_rule_of_one_input_stays_in_a_role_only_for_a_reason_the_schema_cannot_hold():
    docs = (ROOT / "docs/how-it-works.md").read_text().split("## Each value is checked once", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| ([a-z_0-9]+) \| ([a-z_0-9]+) \| [^|]+\|$", docs, re.M)) - {("role", "input")}
    assert listed and _single_input_rules() == listed


def test_the_project_preflight_repeats_no_choice_of_the_schema():
    # the project's own rules: a choice the schema makes (an enum) is not asked again of the same setting
    from ansible_collections.eagle3.trn2.plugins.module_utils import settings as S
    text = (ROOT / "playbooks/preflight.yml").read_text()
    enums = [name for name, node in S.schema()["properties"].items() if "enum" in node]
    repeated = [name for name in enums if re.search(rf"\b{name} in \[", text)]
    assert repeated == []
