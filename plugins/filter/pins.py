"""The version pins' filters, pip's and apt's way (plugins/module_utils/host/pins.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.host.pins import (apt_pins, apt_unmet, pip_unmet,
                                                                            pip_unmet_explained, pypi_placeholders)

DOCUMENTATION = r"""
  name: pins
  short_description: pip and apt pins compared the way pip and apt do
  description:
    - C(pip_unmet) lists the "name==version" pins the installed versions do not satisfy (PEP 440, local labels allowed).
    - C(pip_unmet_explained) says the same as "name installed VERSION, pinned VERSION" (or "name absent, pinned VERSION").
    - C(apt_pins) writes {package: version} as apt pins "package=version*".
    - C(apt_unmet) lists the packages whose installed version does not match its pinned prefix.
    - C(pypi_placeholders) lists the pins that name one of PyPI's placeholders of the Neuron packages.
"""


class FilterModule:
    """Pin comparison filters."""

    def filters(self) -> dict[str, Any]:
        return {"pip_unmet": pip_unmet, "pip_unmet_explained": pip_unmet_explained, "apt_pins": apt_pins, "apt_unmet": apt_unmet, "pypi_placeholders": pypi_placeholders}
