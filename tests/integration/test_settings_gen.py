"""One description per setting (nothing to keep in step by hand): the schema entry is all a new setting needs.

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
      How many demo lines the report role says (a setting added by tests/integration/test_settings_gen.py).
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
    schema = dest / "plugins/module_utils/settings/settings_schema.yml"
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
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S

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
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
    text = (ROOT / "playbooks/preflight.yml").read_text()
    enums = [name for name, node in S.schema()["properties"].items() if "enum" in node]
    repeated = [name for name in enums if re.search(rf"\b{name} in \[", text)]
    assert repeated == [], "\n".join(map(str, repeated))


def _judgements(node, defs, seen=()):
    """The ranges, patterns and choices a schema entry makes, anywhere inside it (items, properties, $refs)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref and ref not in seen:
            yield from _judgements(defs[ref.rsplit("/", 1)[1]], defs, (*seen, ref))
        if "minimum" in node and "maximum" in node:
            yield ("range", node["minimum"], node["maximum"])
        if "pattern" in node:
            yield ("pattern", node["pattern"])
        if "enum" in node:
            yield ("enum", tuple(node["enum"]))
        for value in node.values():
            yield from _judgements(value, defs, seen)
    elif isinstance(node, list):
        for value in node:
            yield from _judgements(value, defs, seen)


def _repeats(text: str, judgement: tuple) -> bool:
    if judgement[0] == "range":
        low, high = judgement[1], judgement[2]
        return bool(re.search(rf"\b{low}\s*\.\.\s*{high}\b|between {low} and {high}\b|'ge', {low}\b.*'le', {high}\b"
                              rf"|>= {low}\b.*<= {high}\b", text, re.S))
    if judgement[0] == "pattern":
        return judgement[1].strip("^$") in text
    return bool(judgement[1]) and all(f"'{choice}'" in text for choice in judgement[1]) and " in [" in text


def test_no_rule_of_the_schema_is_repeated_in_a_preflight_a_filter_or_a_playbook():
    """Each value is checked once: a preflight rule (a role's or the project's) that reads an input the schema
    describes does not make the schema's range, pattern or choice again; a filter or lookup judges no setting."""
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
    schema = S.schema()
    repeated = []
    files = sorted(ROOT.glob("roles/*/tasks/preflight.yml")) + [ROOT / "playbooks/preflight.yml"]
    for path in files:
        role = path.parts[-3] if path.parts[-2] == "tasks" else None
        entries = {**(S.role_input_entries(role) if role else {}), **{n: n for n in schema["properties"]}}
        for rule in re.split(r"\n\s*- ok:", path.read_text())[1:]:
            for name in set(re.findall(r"\b(?:eagle3|[a-z0-9]+_[a-z0-9]+)_[a-z0-9_]+\b", rule)) & set(entries):
                node = schema["properties"].get(entries[name], {})
                repeated += [(path.name, name, j) for j in _judgements(node, schema["$defs"]) if _repeats(rule, j)]
    settings = "|".join(sorted(schema["properties"]))
    for path in sorted(ROOT.glob("plugins/filter/*.py")) + sorted(ROOT.glob("plugins/lookup/*.py")):
        repeated += [(path.name, line.strip(), "judges a setting") for line in path.read_text().splitlines()
                     if "raise" in line and re.search(rf"Error\(f?[\"']({settings}):", line)]
    assert repeated == [], "\n".join(map(str, repeated))


def test_the_repeat_finder_finds_a_repeat():
    # the two rules the generated checks replaced, as they were: a k range and a unit-name pattern
    k = ("range", 1, 8)
    assert _repeats("ok: ... reject('ge', 1) | list ... reject('le', 8) ...", k)
    assert _repeats("msg: num_speculative_tokens must be between 1 and 8", k)
    assert _repeats("match('^[a-z0-9][a-z0-9-]{0,39}$')", ("pattern", "[a-z0-9][a-z0-9-]{0,39}"))
    assert not _repeats("vllm_service_limit_nofile | int >= 65535", k)


_CONDITIONS = {"when", "that", "failed_when", "changed_when", "until"}


def _variables_read(text: str) -> set[str]:
    """The variables a Jinja text reads (filters and tests are names of plugins, not variables: any is accepted)."""
    import jinja2
    from jinja2 import meta

    class _Any(dict):
        def __contains__(self, _):
            return True

        def get(self, *_):
            return lambda *a, **k: None

    env = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
    env.filters = env.tests = _Any()
    return meta.find_undeclared_variables(env.parse(text))


def _jinja_of(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _jinja_of(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _jinja_of(v, key)
    elif isinstance(node, str) and (key in _CONDITIONS or "{{" in node or "{%" in node):
        yield node if "{{" in node or "{%" in node else "{{ %s }}" % node


def _reads_of(path) -> set[str]:
    if path.suffix in (".yml", ".yaml") and path.parts[-2] in ("tasks", "handlers", "vars"):
        texts = list(_jinja_of(yaml.safe_load(path.read_text())))
    else:
        texts = [path.read_text()]
    return set().union(*map(_variables_read, texts)) if texts else set()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_no_role_task_or_template_reads_a_project_setting():
    """A role reads its own inputs only: the settings reach it through its defaults (generated from `inputs:`), so a
    role run alone is described by its own argument_specs and the project's names stay out of its tasks. The
    collection's own eagle3.trn2.eagle3_* filters and lookups are plugin names, not variables."""
    files = [p for sub in ("tasks", "handlers", "vars", "templates") for p in sorted(ROOT.glob(f"roles/*/{sub}/*"))
             if p.parts[-3] != "settings" and p.is_file()]
    assert len(files) > 100
    reads = {str(p.relative_to(ROOT)): sorted(n for n in _reads_of(p) if n.startswith("eagle3_")) for p in files}
    assert {path: names for path, names in reads.items() if names} == {}
    # the reader sees reads: a role's own inputs in the unit template, a setting in a condition and in a filter's argument
    assert {"vllm_service_venv", "item"} <= _reads_of(ROOT / "roles/vllm_service/templates/vllm.service.j2")
    assert _variables_read("{{ eagle3_port is defined }}") == {"eagle3_port"}
    assert "eagle3_x" in set().union(*map(_variables_read, _jinja_of(
        {"when": "a | eagle3.trn2.eagle3_profiles(eagle3_x)"})))


SPEC = ("argument_specs:\n  main: &spec\n    options:\n      r_a: {type: int, default: 1, description: a}\n"
        "  preflight: *spec\n")


@pytest.mark.parametrize(("defaults", "specs", "problem"), [
    ("r_a: 1\n", SPEC, None),
    ("r_a: 1\nr_b: 2\n", SPEC, "r: r_b is in defaults/main.yml but not in argument_specs"),
    ("", SPEC, "r: r_a is in argument_specs but not in defaults/main.yml"),
    ("r_a: 1\n", SPEC.replace("description: a", "description: ''"), "r: r_a has no description"),
    ("r_a: 1\n", SPEC.replace("  preflight: *spec\n", ""), "r: the preflight entry point must share the main spec (preflight: *spec)"),
    ("r_a: 1\n", SPEC + "  shared:\n    short_description: s\n    options:\n      r_a: {type: int, default: 2, description: a}\n",
     "r: entry point shared option r_a differs from the main spec's"),
])
def test_what_the_generator_cannot_write_is_named(tmp_path, defaults, specs, problem):
    from settings_gen import spec_problems
    role = tmp_path / "r"
    for sub in ("defaults", "meta", "tasks"):
        (role / sub).mkdir(parents=True)
    (role / "defaults" / "main.yml").write_text(defaults)
    (role / "meta" / "argument_specs.yml").write_text(specs)
    assert spec_problems(role) == ([problem] if problem else [])


def test_every_entry_of_the_schema_has_its_description():
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
    assert [name for name, node in S.schema()["properties"].items() if not str(node.get("description", "")).strip()] == []
