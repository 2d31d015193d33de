"""Lookup reading one run directory on the controller, as the vllm_bench role fetched it."""
from __future__ import annotations

from typing import Any

from ansible.plugins.lookup import LookupBase
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run


DOCUMENTATION = r"""
  name: eagle3_run
  short_description: Read a run directory of EAGLE3 benchmark results
  description:
    - Reads C(<run_dir>/<host>/*.json) (results, completions, manifest, failure, timeline) and C(<run_dir>/run.json).
    - Never fails on a bad file; it is listed with the reason in the host's C(bad_files).
  options:
    _terms:
      description: Run directories.
      required: true
"""


EXAMPLES = r"""
- name: Read a run's files (eagle3.trn2.run_report reads them the same way to make its report)
  ansible.builtin.set_fact:
    run: "{{ query('eagle3.trn2.eagle3_run', results_dir ~ '/' ~ run_id) | first }}"
"""


RETURN = r"""
  _raw:
    description:
      - "One per run directory: C(hosts) (per host its C(results), C(completions), C(manifest), C(failure),
        C(timeline) and C(bad_files)) and C(run_json) (C(exists), C(data), C(why)); C(hosts) is empty when the directory does not exist."
    type: list
    elements: dict
"""


class LookupModule(LookupBase):
    """Ansible entry point."""

    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return [read_run(str(term)) for term in terms]
