"""An operator's mapping setting merged over the project's (so setting one key does not drop the project's others; the
filter eagle3.trn2.eagle3_merged and the settings checks use it): mappings merge recursively, key by key; any other
value of the operator's replaces the project's; a key set to null drops the project's; a value that is not a mapping is
returned as it is, for the settings schema to refuse by name."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def eagle3_merged(defaults: Any, given: Any) -> Any:
    if not isinstance(given, Mapping):
        return given
    if not isinstance(defaults, Mapping):
        defaults = {}
    out = {key: value for key, value in defaults.items()}
    for key, value in given.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = eagle3_merged(out[key], value)
        else:
            out[key] = value
    return out
