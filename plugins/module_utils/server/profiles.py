"""Server profiles as data: the baseline and one speculative profile per k, each with its unit and config names.

The names of a profile's systemd unit (vllm-<name>.service) and `vllm serve` config file (<name>.yaml) are
made here and nowhere else: the roles and playbooks read them from the profile (eagle3_profile_files).
"""
from __future__ import annotations

import copy
from typing import Any, Iterable

from ansible_collections.eagle3.trn2.plugins.module_utils.collection import collection_root
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import convert, schema

BASELINE = "baseline"
# Every vLLM unit is vllm-<name>.service: the profiles' (eagle3_profile_files), the serving unit, and the pattern that
# finds them all (LAYOUT's unit_pattern) are made from these two.
UNIT_PREFIX, UNIT_SUFFIX = "vllm-", ".service"
SERVING_UNIT = f"{UNIT_PREFIX}serve{UNIT_SUFFIX}"
# What crosses roles, named once (docs/how-it-works.md, "Roles and who calls them"): vllm_service writes these files and
# units; vllm_bench, compile_cache, vllm_serving and neuron_sdk read or stop them; bench_report renders the templates.
LAYOUT: dict[str, Any] = {
    "config_dir": "/etc/eagle3",                # the units' configs and environment files (vllm_service_config_dir)
    "env_file": "vllm.env",                     # every unit's environment (the compile cache key hashes it)
    "secrets_env_file": "secrets.env",          # root only: HF_TOKEN
    "serve_env_file": "serve.env",              # root only: the serving unit's API key
    "hit_only_env_file": "cache-hit-only.env",  # compile_cache: a neuron benchmark start with a cache miss fatal
    "unit_dir": "/etc/systemd/system",
    "unit_pattern": f"{UNIT_PREFIX}*{UNIT_SUFFIX}",  # every profile unit and the serving unit (vllm-*.service)
    "serving_unit": SERVING_UNIT,
    # `systemctl is-active` states of a unit that a stop changes (vllm_bench's and vllm_serving's one-call stops)
    "running_states": ["active", "activating", "deactivating", "reloading"],
    # the helpers the units run (vllm_service: eagle3_stop.py, eagle3_api_guard.py) and the rehearsal's model maker
    # (model_assets: make_rehearsal_models.py), root-owned
    "lib_dir": "/usr/local/lib/eagle3",
    # The collection's templates/ (report.md.j2, report.csv.j2, report.html.j2), in a checkout or an installed copy.
    "templates_dir": str(collection_root() / "templates"),
    # The collection's plugins/module_utils: what the roles' controller scripts import (compile_cache_ctl.py,
    # window_lock.py) and the free-space probe vllm_bench runs on its hosts.
    "module_utils_dir": str(collection_root() / "plugins" / "module_utils"),
}


# What the baseline's server is given to schedule as the speculative servers do: vllm-neuron turns async scheduling off
# when --speculative-config is set (its features guide, "Speculative decoding (EAGLE3)"), so a baseline left at the
# default (async) is compared with sync speculative servers. vLLM's --no-async-scheduling (0.24 and 0.29 alike).
SAME_SCHEDULING = {"no-async-scheduling": True}


def eagle3_profiles(ks: Iterable[int] | int, draft: str, method: str = "eagle3",
                    baseline: str = BASELINE, same_scheduling: bool | str = False) -> list[dict[str, Any]]:
    """Baseline first, then one speculative profile per k.

    One k gives the profile name "<method>" (the tutorial's plain run); several give
    "<method>-k<k>" each (a sweep). With same_scheduling (eagle3_bench_same_scheduling) the baseline carries
    server_options {no-async-scheduling: true}, which its config gets over the shared server options.
    """
    # -e eagle3_num_speculative_tokens=2,3,4 passes a text: converted as the schema converts it. The values are
    # judged by the schema only (plugins/module_utils/settings/settings_schema.yml: the setting, and each profile made here).
    ks = convert(ks, schema()["properties"]["eagle3_num_speculative_tokens"])
    same_scheduling = convert(same_scheduling, schema()["properties"]["eagle3_bench_same_scheduling"])
    values = ks if isinstance(ks, list) else [ks]
    profiles: list[dict[str, Any]] = [{"name": baseline}]
    if same_scheduling is True:
        profiles[0]["server_options"] = dict(SAME_SCHEDULING)
    for k in values:
        name = method if len(values) == 1 else f"{method}-k{k}"
        profiles.append({
            "name": name,
            "speculative_config": {"method": method, "model": draft, "num_speculative_tokens": k},
        })
    return profiles


def eagle3_profile_files(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each profile with its unit name (vllm-<name>.service) and config file name (<name>.yaml) added."""
    return [{"unit": f"{UNIT_PREFIX}{p.get('name', '')}{UNIT_SUFFIX}", "config": f"{p.get('name', '')}.yaml", **p}
            for p in profiles]


def eagle3_serving_unit(_: Any = None) -> str:
    """The serving unit's name (vllm-serve.service): one profile's config on the serving address, with the key."""
    return SERVING_UNIT


def eagle3_layout(_: Any = None) -> dict[str, Any]:
    """The paths and names shared across roles (LAYOUT), a copy."""
    return copy.deepcopy(LAYOUT)
