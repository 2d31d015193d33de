"""The release's own server environment: a Neuron row's `environment` reaches the unit's environment file through the
setting eagle3_neuron_environment and vllm_service's input (on 2.33 and later VLLM_NEURON_BACKEND=neuron_native, which
turns the plugin's precompile cache on: vllm-neuron guide "How to use the Precompile Cache"), and so the compile
cache's key, which the shipped cache (everything under VLLM_CACHE_ROOT, the precompile cache included) is found by.
Rendered as the role renders it: the schema's default, the role's default and vars, vllm.env.j2, in Ansible's
templar in this process (an integration test: its subject is the roles' YAML and templates, not the project's Python,
and a render costs seconds in the unit lane's long-lived, coverage-traced workers)."""
from __future__ import annotations

import functools

import pytest
import yaml
from ansible.template import trust_as_template

from conftest import ROOT, templar
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.key import (eagle3_compile_cache_material,
                                                                                   eagle3_env_file)
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S

RELEASES = yaml.safe_load((ROOT / "roles/settings/defaults/main/neuron_releases.yml").read_text())["eagle3_neuron_releases"]
DEFAULTS = yaml.safe_load((ROOT / "roles/vllm_service/defaults/main.yml").read_text())
VARS = yaml.safe_load((ROOT / "roles/vllm_service/vars/main.yml").read_text())


def trusted(value):
    """A value as Ansible loads it from a role's files: every string in it a template."""
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trusted(v) for v in value]
    return trust_as_template(value) if isinstance(value, str) else value


def env_file(accelerator: str, release: str, own: dict | None = None) -> str:
    """vllm.env.j2 for a host of `accelerator` on Neuron release `release`, with the operator's vllm_service_environment
    (each distinct one rendered once: a render through Ansible's templar is the costly part of this file)."""
    return _env_file(accelerator, release, tuple(sorted((own or {}).items())))


@functools.lru_cache(maxsize=None)
def _env_file(accelerator: str, release: str, own_items: tuple) -> str:
    own = dict(own_items)
    render = templar({"eagle3_accelerator": accelerator, "eagle3_neuron_sdk_version": release,
                      "eagle3_neuron_releases": RELEASES})
    setting = render.template(trust_as_template(S.schema()["properties"]["eagle3_neuron_environment"]["default"]))
    render.available_variables = {
        "eagle3_neuron_environment": setting, "vllm_service_environment": own or {}, "vllm_service_accelerator": accelerator,
        "vllm_service_venv": "/opt/eagle3/venv", "vllm_service_home": "/var/lib/eagle3",
        "vllm_service_cache_root": "/var/lib/eagle3/cache", "vllm_service_efa": "auto", "ansible_managed": "managed"}
    render.available_variables = {**render.available_variables,
                                  "vllm_service_release_environment": render.template(
                                      trust_as_template(DEFAULTS["vllm_service_release_environment"])),
                                  **{name: trusted(VARS[name]) for name in ("__vllm_service_env_by_accelerator",
                                                                   "__vllm_service_efa_env", "__vllm_service_env")}}
    return render.template(trust_as_template((ROOT / "roles/vllm_service/templates/vllm.env.j2").read_text()))


@pytest.mark.parametrize("release", [r for r in RELEASES if tuple(map(int, r.split("."))) >= (2, 33, 0)])
def test_the_unit_of_a_233_or_later_row_carries_the_backend_variable(release):
    assert eagle3_env_file(env_file("neuron", release))["VLLM_NEURON_BACKEND"] == "neuron_native"
    assert RELEASES[release]["environment_source"].startswith("vllm-neuron guide 'How to use the Precompile Cache'")


def test_232_keeps_its_environment_and_the_cpu_rehearsal_gets_none_of_a_rows():
    assert "VLLM_NEURON_BACKEND" not in eagle3_env_file(env_file("neuron", "2.32.0"))
    assert "VLLM_NEURON_BACKEND" not in eagle3_env_file(env_file("cpu", "2.33.1"))


def test_the_operators_environment_wins_over_the_rows():
    """TORCH_CACHING_PRECOMPILE=0 (the guide's way to turn the cache off) or another backend, through the setting
    operators already have (vllm_service_environment, a role input set in the inventory)."""
    env = eagle3_env_file(env_file("neuron", "2.33.1", {"VLLM_NEURON_BACKEND": "neuron", "TORCH_CACHING_PRECOMPILE": "0"}))
    assert env["VLLM_NEURON_BACKEND"] == "neuron" and env["TORCH_CACHING_PRECOMPILE"] == "0"


def test_the_backend_variable_is_part_of_the_compile_cache_key():
    """A cache made without the variable (no precompile cache in it) is never taken for one made with it."""
    deployed, config = {"pip": {"vllm-neuron": "0.29.0.1.2.0"}}, {"tensor-parallel-size": 8}
    on = eagle3_compile_cache_material(deployed, config, env_file("neuron", "2.33.1"), "neuron", "eagle3")
    off = eagle3_compile_cache_material(deployed, config, env_file("neuron", "2.33.1", {"VLLM_NEURON_BACKEND": ""}),
                                        "neuron", "eagle3")
    assert on["env"]["VLLM_NEURON_BACKEND"] == "neuron_native" and on != off
