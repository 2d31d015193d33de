"""How a mapping setting of an operator meets the project's: merged, not replaced.

Ansible replaces a variable set at a higher precedence whole: an inventory's `eagle3_gates: {acceptance: {min_rate:
50}}` used to drop the project's accelerator-dependent gate settings (on trn2 the reference gate, informational there
by design, was enforced again). The project's values live in `<name>_defaults` and the operator's in `<name>`;
the consuming role's defaults merge them with this filter:
- mappings merge recursively, key by key; any other value of the operator's replaces the project's;
- a key the operator sets to null drops the project's key (eagle3_server_options: {enable-prefix-caching: null}
  passes no prefix-caching option at all);
- a value of the operator's that is not a mapping is returned as it is, for the settings schema to refuse by name.
Merged this way: eagle3_server_options and eagle3_gates. Not merged: bench_report_instance_price (its four keys are
one price quote; half of one and half of another would be no quote at all).
"""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.settings.layers import eagle3_merged

DOCUMENTATION = r"""
  name: eagle3_merged
  short_description: An operator's mapping setting merged over the project's (null drops a key)
  description:
    - Recursive merge of the given mapping over the defaults; a key given as null is removed.
"""


class FilterModule:
    """Settings layer filters."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_merged": eagle3_merged}
