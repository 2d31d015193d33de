"""Helpers the plugins share (so no plugin imports another plugin file's private name)."""
from __future__ import annotations

from typing import Any


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a bool (True is an int in Python, not a figure)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def median(values: list[float]) -> float:
    """The median of a non-empty list of numbers (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
