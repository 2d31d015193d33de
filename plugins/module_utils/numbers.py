"""Helpers the plugins share (issue 36: no plugin imports another plugin file's private name)."""
from __future__ import annotations

from typing import Any


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a bool (True is an int in Python, not a figure)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
