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


def names_checked(variables: Mapping[str, Any]) -> list[str]:
    """The names the settings check resolves: every eagle3_* variable and each role input the schema describes."""
    inputs = set(role_inputs())
    return [name for name in variables.keys() if name.startswith("eagle3_") or name in inputs]


def checked(values: Mapping[str, Any], unresolved: Mapping[str, str], templated: set[str],
            variables: Mapping[str, Any], cli_text: list[str]) -> list[str]:
    """settings_problems of what `resolve` made of names_checked(variables), with what else it needs from the task's
    variables (the fleet's size, the names that are neither, the operator's allowances) and the names the command line
    gave as text."""
    allowed = values.get("eagle3_settings_allow", [])
    fleet = len(variables.get("groups", {}).get("vllm_hosts", []))
    others = [name for name in variables.keys() if name not in values and name not in unresolved]
    return settings_problems(values, set(cli_text), allowed, unresolved, templated, fleet, others)


def task_settings_problems(templar: Any, variables: Mapping[str, Any], warn: Callable[[str], Any]) -> list[str]:
    """Every eagle3_* variable and schema-described role input the task sees, each resolved on its own and checked;
    what the settings allow but an operator should hear about goes to `warn` (Ansible's warning shows a repeated text
    once a run)."""
    values, unresolved, templated = resolve(templar, variables, names_checked(variables))
    for warning in meaning_warnings(values):
        warn(warning)
    return checked(values, unresolved, templated, variables, eagle3_cli_text_names())


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
