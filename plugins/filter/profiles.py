"""Server profiles as data: the baseline and one speculative profile per k, each with its unit and config names.

The names of a profile's systemd unit (vllm-<name>.service) and `vllm serve` config file (<name>.yaml) are
made here and nowhere else: the roles and playbooks read them from the profile (eagle3_profile_files).
"""
from __future__ import annotations

from typing import Any, Iterable

DOCUMENTATION = r"""
  name: profiles
  short_description: EAGLE3 server profiles and the names of their units and config files
  description:
    - C(eagle3_profiles) expands num_speculative_tokens values into server profiles (baseline first).
    - C(eagle3_profile_files) gives each profile its C(unit) (vllm-<name>.service) and C(config) (<name>.yaml)
      names, unless it already carries them.
    - C(eagle3_serving_unit) names the unit that serves the chosen profile after the benchmark (any input).
"""

BASELINE = "baseline"
SERVING_UNIT = "vllm-serve.service"


def eagle3_profiles(ks: Iterable[int] | int, draft: str, method: str = "eagle3",
                    baseline: str = BASELINE) -> list[dict[str, Any]]:
    """Baseline first, then one speculative profile per k.

    One k gives the profile name "<method>" (the tutorial's plain run); several give
    "<method>-k<k>" each (a sweep).
    """
    if isinstance(ks, str):  # -e eagle3_num_speculative_tokens=3 or =2,3,4
        ks = [int(k) if k.strip().isdigit() else k.strip() for k in ks.split(",")]
    values = [ks] if isinstance(ks, int) else list(ks)
    if not values:
        raise ValueError("eagle3_num_speculative_tokens: expected one or more integers 1..8, got none")
    if len(set(map(str, values))) != len(values):
        raise ValueError(f"eagle3_num_speculative_tokens: values must be distinct, got {values}")
    profiles: list[dict[str, Any]] = [{"name": baseline}]
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
            raise ValueError(f"eagle3_num_speculative_tokens: expected integers 1..8, got {k!r}")
        name = method if len(values) == 1 else f"{method}-k{k}"
        profiles.append({
            "name": name,
            "speculative_config": {"method": method, "model": draft, "num_speculative_tokens": k},
        })
    return profiles


def eagle3_profile_files(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each profile with its unit name (vllm-<name>.service) and config file name (<name>.yaml) added."""
    return [{"unit": f"vllm-{p.get('name', '')}.service", "config": f"{p.get('name', '')}.yaml", **p} for p in profiles]


def eagle3_serving_unit(_: Any = None) -> str:
    """The serving unit's name (vllm-serve.service): one profile's config on the serving address, with the key."""
    return SERVING_UNIT


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_profiles": eagle3_profiles, "eagle3_profile_files": eagle3_profile_files,
                "eagle3_serving_unit": eagle3_serving_unit}
