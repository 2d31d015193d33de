#!/usr/bin/env python3
"""Fail when a role's meta/argument_specs.yml and defaults/main.yml disagree.

Every default must be specified with the same default value, and every specified option that
has a default must be in defaults/main.yml. A templated default ("{{ ... }}") is not specified: Ansible templates
the spec when it validates the role's inputs, and a default it never uses could fail there. The preflight entry point (run by playbooks/preflight.yml) must share main's spec; any other
entry point (a shared task file another role includes) must specify its options exactly as main does.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml


def check_role(role: Path) -> list[str]:
    defaults_file = role / "defaults" / "main.yml"
    specs_file = role / "meta" / "argument_specs.yml"
    if not specs_file.exists():
        # a role of defaults only (eagle3.trn2.settings) takes no inputs: no spec, no validation task in every play
        return [] if not (role / "tasks").is_dir() else [f"{role.name}: meta/argument_specs.yml is missing"]
    defaults = yaml.safe_load(defaults_file.read_text()) if defaults_file.exists() else {}
    defaults = defaults or {}
    specs = yaml.safe_load(specs_file.read_text())["argument_specs"]
    options = specs["main"].get("options", {})
    errors = []
    if specs.get("preflight") != specs["main"]:
        errors.append(f"{role.name}: the preflight entry point must share the main spec (preflight: *spec)")
    # Further entry points (shared tasks other roles include) document a subset of the role's inputs, as main does.
    for entry, spec in sorted(specs.items()):
        if entry in ("main", "preflight"):
            continue
        if not spec.get("short_description"):
            errors.append(f"{role.name}: entry point {entry} has no short_description")
        for key, option in sorted((spec.get("options") or {}).items()):
            if options.get(key) != option:
                errors.append(f"{role.name}: entry point {entry} option {key} differs from the main spec's")
    for key in sorted(set(defaults) - set(options)):
        errors.append(f"{role.name}: {key} is in defaults/main.yml but not in argument_specs")
    for key in sorted(set(options) - set(defaults)):
        errors.append(f"{role.name}: {key} is in argument_specs but not in defaults/main.yml")
    for key in sorted(set(options) & set(defaults)):
        want, spec = defaults[key], options[key]
        if "{{" in str(want):
            if "default" in spec:  # Ansible templates the spec when it validates: a default it never uses could fail
                errors.append(f"{role.name}: {key}'s default is a template: argument_specs documents none")
        elif "default" not in spec:
            errors.append(f"{role.name}: {key} has no default in argument_specs")
        elif spec["default"] != want:
            errors.append(f"{role.name}: {key} defaults differ: argument_specs {spec['default']!r}, defaults {want!r}")
        if not spec.get("description"):
            errors.append(f"{role.name}: {key} has no description")
    return errors


def main(argv: list[str]) -> int:
    roles = Path(argv[1] if len(argv) > 1 else "roles")
    errors = [e for role in sorted(p for p in roles.iterdir() if p.is_dir()) for e in check_role(role)]
    for error in errors:
        print(error, file=sys.stderr)
    print(f"argument_specs: {sum(1 for p in roles.iterdir() if p.is_dir())} roles checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
