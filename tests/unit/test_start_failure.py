"""A failed start's journal read for a cause with a known way out (plugins/module_utils/server/start_failure.py), and
that way out as the project takes and renders it.

The cause: the Neuron plugin refusing speculative decoding without on-device sampling, which AWS's EAGLE3 tutorial does
not set while its reference configuration calls it required. The journal is tests/fixtures/startup/
neuron-0.24.0-eagle3-on-device-sampling.log: the lines of a failed vLLM start as vllm_bench's profile_failed.yml
collects them (`journalctl -u vllm-eagle3 -o cat`), the engine core's ERROR lines ending in the plugin's config check
(its text a placeholder: the plugin's own message was not readable here), the API server's raw traceback, systemd's
lines. The lines that must not count are a real failed start's (tests/fixtures/runs/failed: a WARNING carrying
`OSError:` in its text, pydantic's ValidationError) and warnings, INFO lines and unrelated errors that name or hold
the setting. The reason is worded by profile_failed.yml's own expression, rendered here by Ansible's templar in this
process; the setting is judged by the settings schema and by what vllm serve accepts, and rendered by the role's own
default and serve.yaml.j2, then read back as vLLM's config loader reads it.
"""
from __future__ import annotations

import copy
import functools
import json
import shlex
from pathlib import Path

import pytest
import yaml
from ansible.template import trust_as_template

from conftest import ROOT, RUNS, templar
from test_vllm_effective import ROOT_VLLM_OPTIONS, load_config_file_024, load_config_file_029
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.key import (
    eagle3_compile_cache_failure, eagle3_compile_cache_key, eagle3_compile_cache_material)
from ansible_collections.eagle3.trn2.plugins.module_utils.server.start_failure import (
    ON_DEVICE_SAMPLING_ARGUMENT, ON_DEVICE_SAMPLING_SETTING, error_line, on_device_sampling_errors, start_failure_hints)
from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_inputs import vllm_option_problems
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S

JOURNAL = (ROOT / "tests/fixtures/startup/neuron-0.24.0-eagle3-on-device-sampling.log").read_text().splitlines()
REAL_FAILED = json.loads((RUNS / "failed/rehearsal-1/failure.json").read_text())["journal_errors"]
SETTING = {"additional-config": {"neuron_config": {"on_device_sampling_config": {}}}}
PLUGIN_LINE = ("(EngineCore_DP0 pid=30688) ERROR 12-07 10:41:07 [core.py:866] "
               "ValueError: on_device_sampling_config is required for speculative decoding")
REASON = 'vllm-eagle3.service did not become ready: {"ActiveState": "failed", "health": "URLError"}'
PROJECT = yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())
SERVE_OPTIONS = ROOT / "roles/vllm_service/files/serve_options"


def test_the_plugins_refusal_in_a_failed_starts_journal_is_found():
    assert on_device_sampling_errors(JOURNAL) == [PLUGIN_LINE]
    assert on_device_sampling_errors("\n".join(JOURNAL)) == [PLUGIN_LINE]  # the journal's stdout as one text too


@pytest.mark.parametrize("line", [
    PLUGIN_LINE,
    # the API server's own check (a platform's config check runs where VllmConfig is built), in its raw traceback
    "(APIServer pid=30511) ValueError: Speculative decoding requires on-device sampling (on_device_sampling_config)",
    "(APIServer pid=30511)   Value error, on_device_sampling_config must be set for speculative decoding "
    "[type=value_error, input_value=ArgsKwargs((), {...}), input_type=ArgsKwargs]",
    "(APIServer pid=30511)   Assertion failed, OnDeviceSamplingConfig is needed with a speculative_config",
    "(EngineCore_DP0 pid=30688) ERROR 12-07 10:41:07 [core.py:866] AssertionError: ON-DEVICE SAMPLING missing",
    "(EngineCore_DP0 pid=30688) CRITICAL 12-07 10:41:07 [neuron.py:12] speculation needs On-Device Sampling",
    "NotImplementedError: speculative decoding without ondevicesampling",
])
def test_an_error_line_naming_on_device_sampling_in_any_spelling_counts(line):
    assert error_line(line)
    assert on_device_sampling_errors(["(APIServer pid=1) INFO 12-07 10:02:11 [x.py:1] starting", line]) == [line]
    assert start_failure_hints([line])


@pytest.mark.parametrize("line", [
    # a warning is not what stopped the start, whatever it says
    "(EngineCore_DP0 pid=30688) WARNING 12-07 10:02:40 [config.py:88] on_device_sampling_config is not set: "
    "speculative decoding may fail (ValueError: on-device sampling)",
    # vLLM logs its non-default args at INFO, the setting in them once it is set
    "(APIServer pid=30511) INFO 12-07 10:02:14 [api_utils.py:271] non-default args: {'additional_config': "
    "{'neuron_config': {'on_device_sampling_config': {}}}, 'max_num_seqs': 2}",
    "(EngineCore_DP0 pid=30688) DEBUG 12-07 10:02:40 [neuron.py:5] OnDeviceSamplingConfig(do_sample=False) error-free",
    # errors that are about something else
    "(EngineCore_DP0 pid=30688) ERROR 12-07 10:41:07 [core.py:866] ValueError: max_model_len 999999 exceeds the model's",
    "(APIServer pid=30511) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    # a line naming it that reports no error
    "(APIServer pid=30511) on-device sampling: see the reference configuration",
])
def test_a_line_that_is_no_error_or_does_not_name_it_does_not_count(line):
    assert on_device_sampling_errors([line]) == []
    assert start_failure_hints([line]) == []


def test_a_real_failed_start_and_the_rest_of_the_fixture_give_no_hint():
    assert start_failure_hints(REAL_FAILED) == []
    assert error_line(REAL_FAILED[2]) and error_line(REAL_FAILED[3]) and not error_line(REAL_FAILED[0])
    assert start_failure_hints([line for line in JOURNAL if line != PLUGIN_LINE]) == []


@pytest.mark.parametrize("lines", [None, "", [], {"stdout": PLUGIN_LINE}, [None, 3]])
def test_no_journal_or_not_lines_give_no_hint(lines):
    assert start_failure_hints(lines) == []


def test_the_reason_names_the_setting_literally():
    reason = eagle3_compile_cache_failure(REASON, {}, JOURNAL)
    assert reason.startswith(REASON + "; the server's journal names on-device sampling in an error")
    assert ON_DEVICE_SAMPLING_SETTING in reason
    assert "eagle3_server_options: {additional-config: {neuron_config: {on_device_sampling_config: {}}}}" in reason
    assert """--additional-config '{"neuron_config": {"on_device_sampling_config": {}}}'""" in reason
    # the setting as written is YAML for the very mapping the tests below render
    assert yaml.safe_load(ON_DEVICE_SAMPLING_SETTING) == {"eagle3_server_options": SETTING}
    assert eagle3_compile_cache_failure("", None, JOURNAL).startswith("the server's journal names on-device sampling")


HIT_ONLY = {"hit_only": True, "key": "k", "state": "shipped", "canary": "h1", "parts": ['pip.vllm-neuron: "0.24.0.1.1.0"']}


@pytest.mark.parametrize("cache", [{}, None, {"hit_only": False}, HIT_ONLY])
def test_other_failures_keep_their_reason_byte_for_byte(cache):
    before = eagle3_compile_cache_failure(REASON, cache)
    for journal in (None, [], REAL_FAILED, [line for line in JOURNAL if line != PLUGIN_LINE]):
        assert eagle3_compile_cache_failure(REASON, cache, journal) == before
    # the hint comes after whatever the reason already said
    assert eagle3_compile_cache_failure(REASON, cache, JOURNAL).startswith(before + "; the server's journal")


def test_profile_failed_words_the_reason_from_all_the_journal_lines():
    tasks = yaml.safe_load((ROOT / "roles/vllm_bench/tasks/profile_failed.yml").read_text())
    journal, pick = (task for task in tasks if task["name"].startswith(("Collect the last journal", "Pick the error")))
    word = next(task for task in tasks if task["name"].startswith("Word the reason"))
    assert "-o" in journal["ansible.builtin.command"]["argv"] and "cat" in journal["ansible.builtin.command"]["argv"]
    variables = {"ansible_failed_result": {"msg": REASON}, "__vllm_bench_journal": {"stdout_lines": JOURNAL},
                 "__vllm_bench_error_pattern": yaml.safe_load((ROOT / "roles/vllm_bench/vars/main.yml").read_text())
                 ["__vllm_bench_error_pattern"]}
    render = templar(variables)
    reason = render.template(trust_as_template(word["ansible.builtin.set_fact"]["__vllm_bench_failure_reason"]))
    assert reason == eagle3_compile_cache_failure(REASON, {}, JOURNAL) and ON_DEVICE_SAMPLING_SETTING in reason
    # the error lines the play shows and records still hold the plugin's line
    errors = render.template(trust_as_template(pick["ansible.builtin.set_fact"]["__vllm_bench_journal_errors"]))
    assert PLUGIN_LINE in errors
    render.available_variables = {**variables, "__vllm_bench_journal": {"stdout_lines": REAL_FAILED}}
    assert render.template(trust_as_template(word["ansible.builtin.set_fact"]["__vllm_bench_failure_reason"])) == REASON


def test_the_settings_schema_accepts_the_setting():
    assert S.settings_problems({"eagle3_server_options": SETTING}) == []
    # a mapping for this option only: another option's mapping is still refused as before, a text here by name
    assert S.settings_problems({"eagle3_server_options": {"compilation-config": {"level": 0}}})[0].startswith(
        "eagle3_server_options.compilation-config must be a scalar")
    assert S.settings_problems({"eagle3_server_options": {"additional-config": "{}"}})[0].startswith(
        "eagle3_server_options.additional-config must be a mapping")
    entries = S.role_input_entries("vllm_service")
    options = {**PROJECT["eagle3_server_options_defaults"], **SETTING}
    assert S.input_problems({"vllm_service_options": options}, entries) == []


@pytest.mark.parametrize("version", ["0.24.0", "0.29.0"])  # the vLLM of each Neuron release row
def test_vllm_serve_of_each_neuron_release_takes_additional_config(version):
    known = yaml.safe_load((SERVE_OPTIONS / f"{version}.yml").read_text())
    assert known["options"]["additional-config"]["type"] == "json"
    assert vllm_option_problems({**PROJECT["eagle3_server_options_defaults"], **SETTING}, known) == []


def rendered_config(server_options: dict) -> dict:
    """The profile's `vllm serve --config` file as vllm_service renders it, read back: the role's default merges the
    setting over the project's options, serve.yaml.j2 writes the file (each distinct options rendered once)."""
    return copy.deepcopy(_rendered_config(json.dumps(server_options, sort_keys=True)))


@functools.lru_cache(maxsize=None)
def _rendered_config(options_json: str) -> dict:
    server_options = json.loads(options_json)
    defaults = yaml.safe_load((ROOT / "roles/vllm_service/defaults/main.yml").read_text())
    render = templar({"eagle3_server_options_defaults": PROJECT["eagle3_server_options_defaults"],
                      "eagle3_server_options": server_options})
    options = render.template(trust_as_template(defaults["vllm_service_options"]))
    target, draft = "meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"
    render.available_variables = {
        "ansible_managed": "Ansible managed", "vllm_service_options": options,
        "item": {"name": "eagle3", "speculative_config": {"method": "eagle3", "model": draft, "num_speculative_tokens": 3}},
        "vllm_service_model": target, "vllm_service_served_model_name": target,
        "vllm_service_host": "127.0.0.1", "vllm_service_port": 8000, "vllm_service_tensor_parallel_size": 8}
    text = render.template(trust_as_template((ROOT / "roles/vllm_service/templates/serve.yaml.j2").read_text()))
    return yaml.safe_load(text)


@pytest.mark.parametrize("loader", [load_config_file_024, lambda c: load_config_file_029(c, ROOT_VLLM_OPTIONS)])
def test_the_rendered_config_gives_vllm_serve_the_argument(loader):
    config = rendered_config(SETTING)
    assert config["additional-config"] == {"neuron_config": {"on_device_sampling_config": {}}}
    # merged over the project's options, not instead of them
    assert config["max-num-seqs"] == 2 and config["max-model-len"] == 2048 and config["no-enable-prefix-caching"] is True
    args = loader(config)
    at = args.index("--additional-config")
    assert args[at:at + 2] == shlex.split(ON_DEVICE_SAMPLING_ARGUMENT)
    assert json.loads(args[at + 1]) == {"neuron_config": {"on_device_sampling_config": {}}}
    assert "--additional-config" not in loader(rendered_config({}))


def test_the_setting_changes_the_compile_cache_key():
    # why the reason says the profiles compile again: the unit's config is part of the key
    deployed = {"python": "3.12.3", "pip": {"vllm-neuron": "0.24.0.1.1.0", "neuronx-cc": "2.27.5334.0"}}
    keys = {eagle3_compile_cache_key(eagle3_compile_cache_material(deployed, rendered_config(options), "", "neuron",
                                                                   "eagle3")) for options in ({}, SETTING)}
    assert len(keys) == 2
