"""The infrastructure's filters: CIDRs, the compile cache's disk, DLAMIs, capacity advice and the
dead-man switch's user data and teardown (plugins/module_utils/cloud/infra.py)."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.cloud.infra import (dlamis_of_release, eagle3_cache_disk,
                                                                              eagle3_capacity_advice,
                                                                              eagle3_cidrs_too_wide,
                                                                              eagle3_deadman_lines,
                                                                              eagle3_deadman_user_data, eagle3_is_cidr,
                                                                              eagle3_launch_notice,
                                                                              eagle3_teardown_due, neuron_sdk_of_ami)


DOCUMENTATION = r"""
  name: infra
  short_description: CIDR checks, compile-cache disk choice, DLAMIs, capacity advice, the dead-man switch
  description:
    - C(eagle3_is_cidr) is true for an IPv4/IPv6 network in CIDR form with zero host bits.
    - C(eagle3_cidrs_too_wide) lists the CIDRs of a list that open a port to too much of the internet, that is any
      network wider than a /8 (IPv4) or a /16 (IPv6) however it is written (for example C(0.0.0.0/1)), and the whole
      of an address family when the list's networks together cover it.
    - C(eagle3_cache_disk) picks the instance-store NVMe disk for the compile cache from lsblk's JSON.
    - C(neuron_sdk_of_ami) is the Neuron SDK release an AMI's description names ("Neuron SDK 2.32.0" gives C(2.32.0)),
      empty when it names none (not a DLAMI). C(dlamis_of_release) keeps the images (ec2_ami_info's) whose description
      names a release, oldest first by creation date. AWS documents the selection of a release's DLAMI by the filter
      C(description=*Neuron SDK 2.32.0*) (aws-neuron-sdk deploy/environments/dlami.rst).
    - C(eagle3_deadman_user_data) is the user data (cloud-config) that arms an instance's dead-man switch at first
      boot for the hours given (its deadline is now + 1.5 x hours; plugins/module_utils/cloud/deadman.py).
    - C(eagle3_teardown_due) is whether a run's end tears its fleet down - eagle3_teardown C(always), or C(on_success)
      with a verdict whose C(ok) is true (no verdict is not a success).
    - C(eagle3_deadman_lines) says, per host, when its dead-man switch fires and how to keep the host, from each host's
      last C(deadman_switch) (the deadman role's output; none for a host that ran no phase in this run).
"""


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_capacity_advice": eagle3_capacity_advice, "eagle3_launch_notice": eagle3_launch_notice,
                "eagle3_is_cidr": eagle3_is_cidr,
                "eagle3_cidrs_too_wide": eagle3_cidrs_too_wide,
                "eagle3_cache_disk": eagle3_cache_disk,
                "neuron_sdk_of_ami": neuron_sdk_of_ami, "dlamis_of_release": dlamis_of_release,
                "eagle3_deadman_user_data": eagle3_deadman_user_data, "eagle3_deadman_lines": eagle3_deadman_lines,
                "eagle3_teardown_due": eagle3_teardown_due}
