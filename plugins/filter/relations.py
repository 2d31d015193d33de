"""Relations between the hosts of one inventory, checked before any change (a clash found later would stop a run
halfway)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks import reference_problems
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import port_problems, workload_problems

DOCUMENTATION = r"""
  name: relations
  short_description: Refusals of what one inventory's hosts would collide on
  description:
    - C(eagle3_port_problems) takes host name -> {network, ports} (each host's ports as they resolved for it, the
      network they live on) and refuses every port two services would take on one network.
    - C(eagle3_workload_problems) takes host name -> {workload} and the run's recorded workload (run.json; empty for a
      new run) and refuses a host that would measure something else than the others, or than the run it resumes.
    - C(eagle3_reference_problems) takes a reference file's text and the name to give it, and refuses a text that is
      not a reference (strict JSON of the shape roles/bench_report/files/references/ has).
"""


def eagle3_port_problems(hosts: Any) -> list[str]:
    """port_problems (plugins/module_utils/settings/settings.py) as a filter."""
    return port_problems(hosts if isinstance(hosts, dict) else {})


def eagle3_workload_problems(hosts: Any, recorded: Any = None, run_id: str = "") -> list[str]:
    """workload_problems (plugins/module_utils/settings/settings.py) as a filter."""
    return workload_problems(hosts if isinstance(hosts, dict) else {}, recorded if isinstance(recorded, dict) else None,
                             str(run_id))


def eagle3_reference_problems(text: Any, where: str) -> list[str]:
    """reference_problems (plugins/module_utils/results/result_checks.py) as a filter."""
    return reference_problems(text, where)


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_port_problems": eagle3_port_problems, "eagle3_workload_problems": eagle3_workload_problems,
                "eagle3_reference_problems": eagle3_reference_problems}
