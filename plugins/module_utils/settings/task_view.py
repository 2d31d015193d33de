"""The settings and role inputs as one task sees them, resolved with its templar and checked: what the lookups
settings_problems, input_problems and run_hours return (each lookup only hands over its templar and variables).
The checks themselves are settings.py's; the names given on the command line as text are controller_checks.py's."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleError
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import eagle3_cli_text_names
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import (
    RUN_HOURS_NAMES, input_problems, meaning_warnings, resolve, role_input_entries, role_inputs, run_hours,
    settings_problems, typed)

ALLOW_LOADER = "eagle3_environment_allow_loader"


def task_settings_problems(templar: Any, variables: Mapping[str, Any], warn: Callable[[str], Any]) -> list[str]:
    """Every eagle3_* variable and schema-described role input the task sees, each resolved on its own and checked;
    what the settings allow but an operator should hear about goes to `warn` (Ansible's warning shows a repeated text
    once a run)."""
    inputs, groups = set(role_inputs()), variables.get("groups", {})
    names = [name for name in variables.keys() if name.startswith("eagle3_") or name in inputs]
    values, unresolved, templated = resolve(templar, variables, names)
    allowed = values.get("eagle3_settings_allow", [])
    fleet = len(groups.get("vllm_hosts", []))
    others = [name for name in variables.keys() if name not in values and name not in unresolved]
    for warning in meaning_warnings(values):
        warn(warning)
    return settings_problems(values, set(eagle3_cli_text_names()), allowed, unresolved, templated, fleet, others)


def task_input_problems(templar: Any, variables: Mapping[str, Any], role: str) -> list[str]:
    """A role's inputs as the task sees them, each checked by the schema under its own name; an input the role cannot
    resolve is the template's own error, as Ansible would give it."""
    entries = role_input_entries(role)
    names = [name for name in entries if name in variables] + ([ALLOW_LOADER] if ALLOW_LOADER in variables else [])
    values, unresolved, templated = resolve(templar, variables, names)
    if unresolved:
        raise AnsibleError("; ".join(f"{name}: {why}" for name, why in sorted(unresolved.items())))
    allow_loader = values.pop(ALLOW_LOADER, False)
    return input_problems(values, entries, templated | set(eagle3_cli_text_names()), allow_loader)


def task_run_hours(templar: Any, variables: Mapping[str, Any]) -> float:
    """The run's expected hours from the settings the task sees."""
    values, _, _ = resolve(templar, variables, [name for name in RUN_HOURS_NAMES if name in variables])
    return run_hours(typed(values))
