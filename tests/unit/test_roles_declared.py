"""Every link between roles is declared, so a role can change inside without breaking another.

- Every include_role/import_role of a collection role, from another role's task files or from a playbook (playbooks/,
  site.yml), names an entry point (tasks_from, else main) that the callee's meta/argument_specs.yml declares, and
  whose task file exists; and every declared entry point has its task file.
- No role and no playbook reads another role's private variables (`__<role>_*`): what crosses roles is a public input
  or a documented output (compile_cache_outcome, vllm_serving_now, vllm_serving_checked, provision_fleet_running, ...).
- The paths and names several roles share come from one place (plugins/module_utils/server/profiles.py, the filter
  eagle3_layout): no role (vllm_service, which writes them, included) and no playbook spells the configuration
  directory, its environment files, the units' directory, their name pattern, the serving unit or the helpers'
  directory, and no role reaches outside itself through role_path.
- No task reads a file of the project outside its own role as text (the project's group_vars, another role's or a
  playbook's files) to learn names: what it needs comes from a declared source (an input, a filter, a lookup).
- No role task file is over 150 lines, and vllm_bench has at most 14.
- No chain of task files is deeper than 4: from a role's tasks/main.yml (counted as 1) through include_tasks,
  import_tasks, include_role and import_role, across roles.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conftest import ROOT

# The settings role (eagle3.trn2.settings): the project's settings every play loads first, and their check; it takes no
# inputs, so it has no spec (scripts/settings_gen.py spec_problems).
NO_INPUTS = ["settings"]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir() and p.name not in NO_INPUTS)
INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")


def _yaml_files() -> Iterator[tuple[str, Path]]:
    """(caller, file): every role's task files (caller: the role) and every playbook file (caller: playbooks)."""
    for role in ROLES:
        for path in sorted((ROOT / "roles" / role / "tasks").glob("*.yml")):
            yield role, path
    for path in sorted((ROOT / "playbooks").rglob("*.yml")):
        if "group_vars" not in path.parts:
            yield "playbooks", path
    yield "playbooks", ROOT / "site.yml"


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def role_calls() -> list[tuple[str, str, str, str]]:
    """(caller, file, callee role, entry point) of every include_role/import_role of a collection role."""
    calls = []
    for caller, path in _yaml_files():
        for node in _walk(yaml.safe_load(path.read_text())):
            for key in INCLUDES:
                if isinstance(node.get(key), dict):
                    args = node[key]
                    callee = str(args["name"]).removeprefix("eagle3.trn2.")
                    entry = str(args.get("tasks_from", "main")).removesuffix(".yml")
                    calls.append((caller, str(path.relative_to(ROOT)), callee, entry))
            # A play's roles: list runs each role's main.
            if isinstance(node.get("roles"), list) and "hosts" in node:
                for item in node["roles"]:
                    name = item if isinstance(item, str) else item.get("role", item.get("name"))
                    calls.append((caller, str(path.relative_to(ROOT)), str(name).removeprefix("eagle3.trn2."), "main"))
    return calls


def entry_points(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())["argument_specs"]


CALLS = role_calls()
CROSS = [c for c in CALLS if c[0] != c[2]]


def test_the_calls_are_found():
    """The walk sees the links the project has (a regression in the walk would make the test below pass vacuously)."""
    found = {(caller, callee, entry) for caller, _, callee, entry in CROSS}
    for link in [("vllm_bench", "compile_cache", "settle"), ("vllm_bench", "compile_cache", "publish"),
                 ("vllm_bench", "compile_cache", "failed"), ("vllm_bench", "vllm_service", "ready"),
                 ("vllm_bench", "vllm_serving", "stop"), ("vllm_serving", "vllm_service", "serve"),
                 ("vllm_serving", "vllm_service", "ready"), ("playbooks", "vllm_serving", "main"),
                 ("playbooks", "vllm_serving", "snapshot"), ("playbooks", "vllm_serving", "drain"),
                 ("playbooks", "provision", "fleet"), ("vllm_bench", "neuron_sdk", "devices")]:
        assert link in found, link
    assert len(CROSS) > 40


@pytest.mark.parametrize("caller,path,callee,entry", CROSS, ids=[f"{c[1]}->{c[2]}.{c[3]}" for c in CROSS])
def test_every_cross_role_call_is_a_declared_entry_point(caller, path, callee, entry):
    if callee in NO_INPUTS:  # loaded for its defaults and its check: no inputs, so no spec to validate them either
        assert (ROOT / "roles" / callee / "tasks" / f"{entry}.yml").is_file(), (path, callee, entry)
        assert not (ROOT / "roles" / callee / "meta/argument_specs.yml").exists(), (path, callee)
        assert (ROOT / "roles" / callee / "defaults" / "main").is_dir()
        return
    assert callee in ROLES, f"{path}: no role {callee}"
    specs = entry_points(callee)
    assert entry in specs, (f"{path} ({caller}) runs {callee}'s entry point {entry}, which "
                            f"roles/{callee}/meta/argument_specs.yml does not declare (it declares {sorted(specs)})")
    assert specs[entry].get("short_description") and specs[entry].get("options"), f"{callee}.{entry} has no spec"
    assert (ROOT / "roles" / callee / "tasks" / f"{entry}.yml").exists(), f"{callee}.{entry}: no tasks/{entry}.yml"


@pytest.mark.parametrize("role", ROLES)
def test_every_declared_entry_point_has_its_task_file(role):
    for entry in entry_points(role):
        assert (ROOT / "roles" / role / "tasks" / f"{entry}.yml").exists(), f"{role}: entry point {entry} has no task file"


# A role's private variables: __<role>_* (the longest role name first, so one role's name that begins another's
# never hides it).
PRIVATE = re.compile(r"__(%s)_[a-z0-9_]+" % "|".join(sorted(ROLES, key=len, reverse=True)))


def test_no_role_or_playbook_reads_another_roles_private_variables():
    """Every file of a role (its own private variables allowed), and outside the roles every playbook, group_vars,
    inventory, molecule scenario, report template, plugin and script: no __<role>_* of another role. (tests/playbooks
    may render a role's templates with its private variables, as tests/integration/test_rendered_unit.py does.)"""
    files = [(caller, path) for caller, path in _yaml_files()]
    files += [(role, p) for role in ROLES for p in sorted((ROOT / "roles" / role).rglob("*"))
              if p.is_file() and p.suffix not in (".pyc", ".gz", ".tar")]
    files += [("outside", p) for top in ("group_vars", "inventories", "molecule", "templates", "plugins", "scripts")
              for p in sorted((ROOT / top).rglob("*")) if p.is_file() and p.suffix in (".yml", ".yaml", ".j2", ".py", ".sh")]
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for caller, path in files
             for m in PRIVATE.finditer(path.read_text()) if m.group(1) != caller]
    assert found == []
    # what the test looks for
    assert [m.group(1) for m in PRIVATE.finditer("{{ __vllm_serving_now }} {{ __vllm_service_units }} __compile_cache_x")] \
        == ["vllm_serving", "vllm_service", "compile_cache"]


# Spelling a shared path or name: the configuration directory and its environment files, the units' directory, their
# name pattern and the serving unit, the helpers' directory, or a reach out of the role through role_path.
SPELLED = re.compile(r"/etc/eagle3|/etc/systemd/system|/usr/local/lib/eagle3|vllm-\*\.service|vllm-serve\.service"
                     r"|\b(?:vllm|secrets|serve|cache-hit-only)\.env\b(?!\.j2)|role_path \}\}/\.\.")
# The rehearsal image's own sshd unit, under the image's build root (provision_podman_build_dir): not a host's units.
SPELLED_ELSEWHERE = {("roles/provision/tasks/podman_image.yml", "/etc/systemd/system/multi-user.target.wants/ssh.service")}


def test_the_shared_paths_come_from_one_place():
    """The paths and names several roles share are spelled only in plugins/module_utils/server/profiles.py (eagle3_layout,
    eagle3_profile_files): every role (vllm_service, which writes them, too) and playbook takes them from there, in its
    tasks, templates, handlers, vars and defaults and its argument specs' defaults. Task names and descriptions may
    name them for the reader."""
    files = [path for _, path in _yaml_files()]
    files += [p for role in ROLES for sub in ("templates", "handlers", "defaults", "vars")
              for p in sorted((ROOT / "roles" / role / sub).rglob("*")) if p.is_file()]
    files += [p for p in sorted((ROOT / "templates").rglob("*")) if p.is_file()]
    found = []
    for path in files:
        for line in path.read_text().splitlines():
            words = line.strip()
            match = SPELLED.search(line)
            if match and not words.startswith(("#", "- name:", "name:")) and not any(
                    str(path.relative_to(ROOT)) == where and what in line for where, what in SPELLED_ELSEWHERE):
                found.append(f"{path.relative_to(ROOT)}: {words}")
    for role in ROLES:
        for entry, spec in entry_points(role).items():
            for name, option in (spec.get("options") or {}).items():
                if SPELLED.search(str(option.get("default", ""))):
                    found.append(f"roles/{role}/meta/argument_specs.yml: {entry}.{name} default {option['default']}")
    assert found == []
    # what the test looks for (a regression in the pattern would make it pass vacuously)
    for spelled in ("dest: /etc/eagle3/vllm.env", "patterns: vllm-*.service", "path: /usr/local/lib/eagle3",
                    'dest: "{{ vllm_service_config_dir }}/serve.env"', "EnvironmentFile=-{{ d }}/cache-hit-only.env",
                    "paths: /etc/systemd/system", "src: \"{{ role_path }}/../../templates\""):
        assert SPELLED.search(spelled), spelled
    assert not SPELLED.search("src: vllm.env.j2")


def test_task_files_are_short_and_vllm_bench_keeps_the_benchmark():
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "roles").glob("*/tasks/*.yml"))
            if (n := len(p.read_text().splitlines())) > 150}
    long.update({str(p.relative_to(ROOT)): n for p in sorted((ROOT / "playbooks/tasks").glob("*.yml"))
                 if (n := len(p.read_text().splitlines())) > 150})
    assert long == {}
    # 14 with reconcile.yml (a rerun settles the host before any server stops) and quarantine.yml (invalid
    # results kept aside, from the reconcile and after a fetch).
    assert len(list((ROOT / "roles/vllm_bench/tasks").glob("*.yml"))) <= 14


def test_no_task_reads_the_projects_own_files_as_text():
    """A lookup (file, template, fileglob, first_found), include_vars or vars_files of a path of the project outside the
    role itself: group_vars/, roles/, playbooks/, plugins/, templates/, or up out of the role or playbook."""
    project = r"""['"](?:\.\./|(?:group_vars|roles|playbooks|plugins|templates)/)"""
    reads = re.compile(r"(?:lookup|query|q)\(\s*['\"](?:ansible\.builtin\.)?(?:file|template|fileglob|first_found)['\"]\s*,\s*"
                       + project + r"|(?:include_vars|vars_files|file):\s*" + project)
    files = list(_yaml_files()) + [(role, p) for role in ROLES for sub in ("defaults", "vars", "handlers")
                                   for p in sorted((ROOT / "roles" / role / sub).glob("*.yml"))]
    found = [f"{path.relative_to(ROOT)}: {line.strip()}" for _, path in files for line in path.read_text().splitlines()
             if reads.search(line) and not line.lstrip().startswith("#")]
    assert found == []
    # the test sees such a read (the one refuse.yml made until it asked the settings module instead)
    assert reads.search("""    __m: "{{ lookup('ansible.builtin.file', 'group_vars/all/roles.yml') | from_yaml }}\"""")


# Task-file chains. A templated file name (`ec2_{{ provision_state }}.yml`, `{{ 'a.yml' if x else 'b.yml' }}`) stands
# for every file it can name: the quoted names it holds, else the role's files its pattern matches.
TASK_INCLUDES = ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks", "include_tasks", "import_tasks")
MAX_DEPTH = 4


def _task_files(role: str, spec: str, roles_dir: Path) -> list[str]:
    quoted = re.findall(r"'([\w/.-]+\.yml)'", spec)
    if quoted:
        return [name.removesuffix(".yml") for name in quoted]
    pattern = re.sub(r"\{\{.*?\}\}", "*", spec)
    return [p.stem for p in sorted((roles_dir / role / "tasks").glob(pattern))] or [spec.removesuffix(".yml")]


def _steps(role: str, entry: str, roles_dir: Path) -> list[tuple[str, str]]:
    """(role, task file) of every file this task file runs directly."""
    steps = []
    for node in _walk(yaml.safe_load((roles_dir / role / "tasks" / f"{entry}.yml").read_text()) or []):
        for key in TASK_INCLUDES:
            if key in node:
                spec = node[key]["file"] if isinstance(node[key], dict) else node[key]
                steps += [(role, name) for name in _task_files(role, str(spec), roles_dir)]
        for key in INCLUDES:
            if isinstance(node.get(key), dict):
                args = node[key]
                steps.append((str(args["name"]).removeprefix("eagle3.trn2."), str(args.get("tasks_from", "main")).removesuffix(".yml")))
    return steps


def longest_chain(roles_dir: Path) -> list[tuple[str, str]]:
    """The longest chain of task files from any role's tasks/main.yml."""
    memo: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def chain(step: tuple[str, str], seen: tuple) -> list[tuple[str, str]]:
        if step in seen:
            raise AssertionError(f"a task file includes itself: {' -> '.join('.'.join(s) for s in seen + (step,))}")
        if step not in memo:
            below = [chain(s, seen + (step,)) for s in _steps(*step, roles_dir)]
            memo[step] = [step] + max(below, key=len, default=[])
        return memo[step]

    mains = [(p.parent.parent.name, "main") for p in sorted(roles_dir.glob("*/tasks/main.yml"))]
    return max((chain(m, ()) for m in mains), key=len)


def test_no_chain_of_task_files_is_deeper_than_four():
    deepest = longest_chain(ROOT / "roles")
    assert len(deepest) <= MAX_DEPTH, " -> ".join(".".join(s) for s in deepest)
    # the project's own chains are found (a walk that saw no include would pass vacuously)
    assert len(deepest) >= 3


def _role(tmp: Path, role: str, files: dict[str, str]) -> None:
    (tmp / role / "tasks").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp / role / "tasks" / f"{name}.yml").write_text(text)


def test_a_fifth_level_is_found_across_roles_and_templated_names(tmp_path):
    """main -> a (import) -> b_{{ x }} (templated include) -> the other role's entry (include_role) -> leaf: 5."""
    _role(tmp_path, "one", {
        "main": "- ansible.builtin.import_tasks: a.yml\n",
        "a": "- name: t\n  ansible.builtin.include_tasks:\n    file: b_{{ x }}.yml\n",
        "b_on": "- block:\n    - ansible.builtin.include_role: {name: eagle3.trn2.two, tasks_from: entry}\n",
        "b_off": "- ansible.builtin.debug: {msg: short}\n"})
    _role(tmp_path, "two", {"main": "- ansible.builtin.debug: {msg: x}\n",
                            "entry": "- ansible.builtin.include_tasks: \"{{ 'leaf.yml' if y else 'other.yml' }}\"\n",
                            "leaf": "- ansible.builtin.debug: {msg: leaf}\n", "other": "[]\n"})
    deepest = longest_chain(tmp_path)
    assert deepest == [("one", "main"), ("one", "a"), ("one", "b_on"), ("two", "entry"), ("two", "leaf")]
    assert len(deepest) > MAX_DEPTH
