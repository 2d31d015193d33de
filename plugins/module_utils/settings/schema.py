"""One validator for the project's inputs and, with another schema, its result files (one set of rules for both: strict
types, whole-value patterns, secrets never echoed).

python-jsonschema's draft 2020-12 validator with the project's rules:
- strict types over the values Ansible 2.19 hands a plugin: a boolean is not an integer or a number (as in JSON
  Schema); a mapping is any Mapping and a list any non-string Sequence (Ansible's lazy containers), a string any str
  (Ansible's tagged strings);
- `pattern` matches the whole value (re.fullmatch), so a final newline never slips through as it does with `$`;
- `x-percent: true`: a fraction 0 < x <= 1 where a percentage is expected is refused with "did you mean";
- no control character (newline, CR, NUL, C1, ...), format character (zero-width space, bidi override) or line or
  paragraph separator in any string or key of a value, outside the parts whose schema node says `x-multiline` (the
  whole value, a property, the items of a list);
- each refusal is one line: the path of the value (setting.key[index]), what was expected (`x-expect`, else the
  failed keyword in words) and what was given, never the value of an `x-secret`.
"""
from __future__ import annotations

import difflib
import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

import yaml

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# What no unit file, environment file, YAML config, name or command line may hold unseen: Unicode's control characters
# (Cc: C0, DEL and C1 such as U+0085), format characters (Cf: zero-width space, bidi overrides, byte order mark) and
# line and paragraph separators (Zl, Zp), as the running Python's Unicode database knows them.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\x00": "a NUL", "\t": "a tab"}


# libyaml's loader where PyYAML was built with it: the same data as yaml.safe_load, about 9x faster (the settings schema,
# 62 KB, took 73 ms in pure Python and 8 ms with libyaml; a preflight parsed it 19 times in its workers).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """yaml.safe_load's result, through libyaml when PyYAML has it."""
    return yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)


def control_found(text: str) -> tuple[int, str] | None:
    """(position, character) of the first character of a refused category in `text`, else None."""
    return next(((i, c) for i, c in enumerate(text) if unicodedata.category(c) in REFUSED_CATEGORIES), None)


def _control_name(char: str) -> str:
    if char in CONTROL_NAMES:
        return CONTROL_NAMES[char]
    if unicodedata.category(char) == "Cc":
        return f"the control character {char!r}"
    return f"the invisible character U+{ord(char):04X} ({unicodedata.name(char, 'unnamed').lower()})"


def _is_array(_checker: Any, value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _is_object(_checker: Any, value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_number(_checker: Any, value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(_checker: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError
    if isinstance(instance, str) and _compiled(pattern).fullmatch(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _percent(validator: Any, on: bool, instance: Any, schema: dict) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError
    if on and _is_number(None, instance) and 0 < instance <= 1:
        yield ValidationError(f"is a fraction where a percentage is expected: did you mean {instance * 100:g} (%)?")


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


@lru_cache(maxsize=1)
def validator_class() -> Any:
    """Draft 2020-12 with the project's types and keywords. jsonschema is imported here, at the first validation:
    Ansible loads every filter file of the collection in each task's worker process to find one filter, and an import
    at the top cost each such task about 55 ms (docs/how-it-works.md, "Plugins loaded once per run")."""
    import jsonschema
    from jsonschema import Draft202012Validator

    types = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"array": _is_array, "object": _is_object, "number": _is_number, "integer": _is_integer})
    return jsonschema.validators.extend(
        Draft202012Validator, validators={"pattern": _pattern, "x-percent": _percent}, type_checker=types)

WORDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
         "array": "a list", "object": "a mapping", "null": "null"}


def path_name(parts: Sequence[Any]) -> str:
    """setting.key[index] for a path of keys and indexes."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# Hugging Face tokens, AWS access keys and secret keys, OpenAI-style keys, JWTs: never shown in a refusal (a refusal is
# logged).
KEY_SHAPED = re.compile(r"hf_[A-Za-z0-9]{8,}|(AKIA|ASIA)[A-Z0-9]{12,}|sk-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{8,}"
                        # a 40-character AWS secret key: mixed case and a digit (a lower-case path of 40 is no key)
                        r"|(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                        r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def shown(value: Any, secret: bool = False) -> str:
    """A value as a refusal shows it: JSON-like, cut to 80 characters; a secret never."""
    if secret:
        return "a value that is not shown (a secret)"
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, float) and not math.isfinite(value):
        text = str(value)
    else:
        try:
            text = json.dumps(plain(value), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    # credentials in a URL (https://user:token@host) are a secret too, and so is anything shaped like a key or token
    # wherever it was put (a Hugging Face token pasted into a model setting, an AWS key in a server option)
    text = re.sub(r"://[^/@\s\"]*@", "://***@", text)
    text = KEY_SHAPED.sub("***", text)
    return text if len(text) <= 80 else text[:77] + "..."


def plain(value: Any) -> Any:
    """Plain Python values for a value from Ansible (tagged scalars, lazy containers)."""
    if isinstance(value, Mapping):
        return {str(k) if isinstance(k, str) else k: plain(v) for k, v in value.items()}
    if _is_array(None, value):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value



def _expectation(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "x-expect" in schema and error.validator not in ("additionalProperties", "x-percent"):
        return str(schema["x-expect"])
    value, keyword = error.validator_value, error.validator
    if keyword == "type":
        kinds = value if isinstance(value, list) else [value]
        return " or ".join(WORDS.get(k, k) for k in kinds)
    return {
        "minimum": f"at least {value}", "maximum": f"at most {value}",
        "exclusiveMinimum": f"more than {value}", "exclusiveMaximum": f"less than {value}",
        "enum": "one of: " + ", ".join(str(v) for v in value) if isinstance(value, list) else "",
        "const": json.dumps(value), "pattern": f"text matching {value}",
        "minItems": f"a list of at least {value} item(s)", "maxItems": f"a list of at most {value} items",
        "uniqueItems": "a list of distinct values", "minLength": f"at least {value} character(s)",
        "maxLength": f"at most {value} characters",
    }.get(keyword, f"valid ({keyword} {value})")


def closest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def _message(error: ValidationError, root: str, secret: bool) -> list[str]:
    parts = [root, *error.absolute_path]
    where = path_name(parts)
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = list((error.schema.get("properties") or {}).keys())
        extra = [k for k in error.instance if k not in known]
        return [f"{path_name([*parts, k])} is not a key of {where} (known: {', '.join(known)})" + closest(str(k), known)
                for k in extra]
    if "propertyNames" in error.absolute_schema_path:
        return [f"{where} has a key that is not {_expectation(error)} (got {shown(error.instance)})"]
    if error.validator == "x-percent":
        return [f"{where} {error.message} (got {shown(error.instance)})"]
    if error.validator == "required" and "x-expect" not in (error.schema if isinstance(error.schema, dict) else {}):
        return [f"{path_name([*parts, k])} is required" for k in error.validator_value if k not in error.instance]
    return [f"{where} must be {_expectation(error)} (got {shown(error.instance, secret)})"]


def _node(schema: Any, definitions: dict) -> dict:
    """A schema node with the keys of the shared definition it refers to ($ref) under its own."""
    if not isinstance(schema, Mapping):
        return {}
    shared = definitions.get(str(schema.get("$ref", "")).rsplit("/", 1)[-1], {})
    return {**shared, **schema}


def _child(schema: dict, key: Any, definitions: dict) -> dict:
    """The schema node of one part of a value: a property, an additional property or a list item."""
    if isinstance(key, int):
        return _node(schema.get("items"), definitions)
    own = schema.get("properties", {})
    return _node(own[key] if key in own else schema.get("additionalProperties"), definitions)


def _control_walk(value: Any, parts: list[Any], schema: dict, definitions: dict) -> Iterator[tuple[list[Any], Any, bool]]:
    """(path, string, is_key) of every string and key holding a control character, skipping the parts whose schema
    node says `x-multiline` (a unit's environment text, a PEM block), wherever they are in the value."""
    if schema.get("x-multiline"):
        return
    if isinstance(value, str):
        if control_found(value):
            yield parts, value, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and control_found(key):
                yield parts, key, True
            yield from _control_walk(item, [*parts, key], _child(schema, key, definitions), definitions)
    elif _is_array(None, value):
        for index, item in enumerate(value):
            yield from _control_walk(item, [*parts, index], _child(schema, index, definitions), definitions)


def control_problems(value: Any, parts: list[Any], secret: bool = False, schema: dict | None = None,
                     definitions: dict | None = None) -> list[str]:
    """A refusal per string (or key) holding a control character, by path; none inside a part whose schema node is
    `x-multiline`."""
    out: list[str] = []
    for path, text, is_key in _control_walk(value, parts, _node(schema, definitions or {}), definitions or {}):
        if is_key:
            out.append(f"{path_name(path)} has a key holding a control character (got {shown(text)})")
            continue
        found = control_found(text)
        out.append(f"{path_name(path)} holds {_control_name(found[1])} at position {found[0]}: a unit file, an "
                   f"environment file, a YAML config or a command line cannot hold it"
                   + (" (the value is not shown)" if secret else f" (got {shown(text)})"))
    return out


def problems(value: Any, schema: dict, root: str, definitions: dict | None = None) -> list[str]:
    """Every refusal of `value` (named `root`) against `schema`: control characters first, then the schema's, one
    per path. A part (a list item, a key) whose schema says nothing of its own is refused with the whole value's
    expectation after its own ("eagle3_num_speculative_tokens[1] must be at most 8 (got 9); eagle3_num_speculative_tokens
    must be one or more distinct integers 1..8")."""
    # a setting's own keys over those of the shared definition it refers to ($ref): x-secret, x-multiline, x-expect;
    # x-multiline on any node (the whole value, a property, the items of a list) exempts that part from the control rule
    node = _node(schema, definitions or {})
    secret = bool(node.get("x-secret"))
    out = control_problems(value, [root], secret, schema, definitions)
    full = dict(schema, **({"$defs": definitions} if definitions else {}))
    top = node.get("x-expect")
    errors = sorted(validator_class()(full).iter_errors(value), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    # a path already refused for a control character is not refused again for the pattern it then fails
    seen: set[tuple] = {tuple(map(str, path[1:])) for path, _, is_key in _control_walk(value, [root], node, definitions or {})
                         if not is_key}
    for error in errors:
        key = tuple(map(str, error.absolute_path))
        if key in seen and error.validator != "additionalProperties":
            continue
        seen.add(key)
        lines = _message(error, root, secret)
        own = isinstance(error.schema, dict) and "x-expect" in error.schema
        if top and error.absolute_path and not own and error.validator != "additionalProperties":
            lines = [f"{line}; {root} must be {top}" for line in lines]
        out += lines
    return out


