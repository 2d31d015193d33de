"""Tests of plugins/module_utils/server/vllm_effective.py: options that reach the engine, the engine's effective
configuration read from startup logs (tests/fixtures/startup, in the vLLM source's log formats)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_effective import (
    CPU_RULE, NEURON_DEFAULT, NEURON_SPEC, vllm_config_mismatches, vllm_effective_config, vllm_serve_options)

STARTUP = Path(__file__).resolve().parents[1] / "fixtures" / "startup"
OPTIONS = yaml.safe_load((Path(__file__).resolve().parents[2] / "roles/settings/defaults/main/settings.yml").read_text())["eagle3_server_options_defaults"]


def load_config_file_024(config: dict) -> list[str]:
    """vLLM v0.24.0 FlexibleArgumentParser.load_config_file, its loop (vllm/utils/argparse_utils.py)."""
    args: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                args.append("--" + key)
        elif isinstance(value, dict):
            args += ["--" + key, json.dumps(value)]
        else:
            args += ["--" + key, str(value)]
    return args


def load_config_file_029(config: dict, root_parser_options: set[str]) -> list[str]:
    """vLLM v0.29.0: a false boolean becomes --no-KEY only when the (root `vllm`) parser has it."""
    args: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                args.append("--" + key)
            elif (no_key := f"--no-{key}") in root_parser_options:
                args.append(no_key)
        elif isinstance(value, dict):
            args += ["--" + key, json.dumps(value)]
        else:
            args += ["--" + key, str(value)]
    return args


ROOT_VLLM_OPTIONS = {"-h", "--help", "-v", "--version"}  # serve's options live on the subparser


@pytest.mark.parametrize("loader", [load_config_file_024, lambda c: load_config_file_029(c, ROOT_VLLM_OPTIONS)])
def test_project_options_reach_both_loaders_as_no_enable_prefix_caching(loader):
    args = loader(vllm_serve_options(OPTIONS))
    assert "--no-enable-prefix-caching" in args
    assert args[args.index("--max-num-seqs") + 1] == "2" and args[args.index("--max-model-len") + 1] == "2048"


@pytest.mark.parametrize("loader", [load_config_file_024, lambda c: load_config_file_029(c, ROOT_VLLM_OPTIONS)])
def test_a_plain_false_is_lost_by_both_loaders(loader):
    # Why the rendering exists: the project's options as written, fed to the loader as they were.
    assert "prefix" not in " ".join(loader(OPTIONS))


@pytest.mark.parametrize(("given", "rendered"), [
    ({"enable-prefix-caching": False}, {"no-enable-prefix-caching": True}),
    ({"no-enable-prefix-caching": False}, {"enable-prefix-caching": True}),
    ({"enforce-eager": True, "max-num-seqs": 2}, {"enforce-eager": True, "max-num-seqs": 2}),
    ({"max-num-seqs": 0}, {"max-num-seqs": 0}),
])
def test_false_booleans_become_their_no_form(given, rendered):
    assert vllm_serve_options(given) == rendered


@pytest.mark.parametrize("shared", [{}, {"async-scheduling": True}, {"async-scheduling": False},
                                    {"no-async-scheduling": False}, {"no-async-scheduling": True}])
def test_a_profiles_own_options_win_over_the_shared_ones_in_either_form(shared):
    # The baseline's no-async-scheduling (eagle3_bench_same_scheduling) replaces whatever the shared options say of it.
    got = vllm_serve_options(dict(OPTIONS, **shared), {"no-async-scheduling": True})
    assert got["no-async-scheduling"] is True and "async-scheduling" not in got
    assert got["no-enable-prefix-caching"] is True and got["max-num-seqs"] == 2
    for loader in (load_config_file_024, lambda c: load_config_file_029(c, ROOT_VLLM_OPTIONS)):
        assert "--no-async-scheduling" in loader(got)


def test_an_option_and_its_no_form_together_are_refused():
    with pytest.raises(ValueError, match="given twice"):
        vllm_serve_options({"enable-prefix-caching": False, "no-enable-prefix-caching": True})


def effective(name: str) -> dict:
    return vllm_effective_config((STARTUP / name).read_text())


def test_prefix_caching_left_on_by_the_old_rendering_is_seen():
    got = effective("cpu-0.29.0-prefix-on.log")
    assert got["found"] and got["vllm_version"] == "0.29.0"
    assert got["engine"] == {"max_seq_len": 2048, "tensor_parallel_size": 1, "enable_prefix_caching": True, "speculative": None}
    assert got["non_default_args"]["max_num_seqs"] == 2 and "enable_prefix_caching" not in got["non_default_args"]
    asked = {"max-num-seqs": 2, "max-model-len": 2048, "enable-prefix-caching": False}
    assert vllm_config_mismatches(got, asked) == ["enable_prefix_caching: asked False, engine has True"]


def test_the_fixed_eagle3_profile_agrees():
    got = effective("cpu-0.29.0-eagle3-fixed.log")
    assert got["engine"]["speculative"] == {"method": "eagle3", "model": "/var/lib/eagle3/models/draft", "num_speculative_tokens": 3}
    asked = {"max-num-seqs": 2, "max-model-len": 2048, "no-enable-prefix-caching": True,
             "speculative-config": {"method": "eagle3", "model": "/var/lib/eagle3/models/draft", "num_speculative_tokens": 3}}
    assert vllm_config_mismatches(got, asked) == []


def test_neuron_024_tutorial_configuration_agrees():
    got = effective("neuron-0.24.0-tp8-eagle3.log")
    assert got["vllm_version"] == "0.24.0" and got["engine"]["tensor_parallel_size"] == 8
    asked = {"tensor-parallel-size": 8, "max-num-seqs": 2, "max-model-len": 2048, "no-enable-prefix-caching": True,
             "speculative-config": {"method": "eagle3", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                                    "num_speculative_tokens": 3}}
    assert vllm_config_mismatches(got, asked) == []


def test_every_difference_is_named():
    got = effective("neuron-0.24.0-tp8-eagle3.log")
    asked = {"tensor-parallel-size": 4, "max-num-seqs": 4, "max-model-len": 4096, "enable-prefix-caching": True,
             "speculative-config": {"method": "eagle", "model": "other/draft", "num_speculative_tokens": 5}}
    assert vllm_config_mismatches(got, asked) == [
        "tensor_parallel_size: asked 4, engine has 8",
        "max_model_len: asked 4096, engine has 2048",
        "max_num_seqs: asked 4, engine has 2",
        "enable_prefix_caching: asked True, engine has False",
        "speculative method: asked 'eagle', engine has 'eagle3'",
        "speculative draft model: asked 'other/draft', engine has 'RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3'",
        "num_speculative_tokens: asked 5, engine has 3",
    ]


def test_speculation_asked_but_absent_and_the_reverse():
    base = effective("cpu-0.29.0-prefix-on.log")
    spec = {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}
    assert vllm_config_mismatches(base, {"speculative-config": spec}) == [f"speculative_config: asked {spec!r}, engine has none"]
    fixed = effective("cpu-0.29.0-eagle3-fixed.log")
    assert vllm_config_mismatches(fixed, {})[0].startswith("speculative_config: asked none, engine has {'method': 'eagle3'")


def test_an_ignored_max_num_seqs_is_named():
    got = effective("cpu-0.29.0-prefix-on.log")
    got["non_default_args"].pop("max_num_seqs")
    assert vllm_config_mismatches(got, {"max-num-seqs": 2}) == ["max_num_seqs: asked 2, engine has '(default: not in non-default args)'"]


def test_the_last_start_counts():
    text = (STARTUP / "cpu-0.29.0-prefix-on.log").read_text() + (STARTUP / "cpu-0.29.0-eagle3-fixed.log").read_text()
    assert vllm_effective_config(text)["engine"]["enable_prefix_caching"] is False
    # A restart whose engine line is not there yet: nothing is claimed from the older start.
    text += (STARTUP / "cpu-0.29.0-prefix-on.log").read_text().splitlines()[0] + "\n"
    assert vllm_effective_config(text)["found"] is False


def test_no_engine_line_is_a_mismatch_not_a_pass():
    got = vllm_effective_config(["(APIServer pid=1) INFO Application startup complete."])
    assert got["found"] is False
    assert "effective configuration is unknown" in vllm_config_mismatches(got, {"max-num-seqs": 2})[0]


def test_non_default_args_with_an_object_repr_still_yield_their_scalars():
    line = ("(APIServer pid=7) INFO 11-29 18:00:00 [utils.py:253] non-default args: {'model': 'm', 'max_num_seqs': 2, "
            "'enable_prefix_caching': False, 'compilation_config': CompilationConfig(level=None, mode=3)}")
    got = vllm_effective_config([line])["non_default_args"]
    assert got == {"model": "m", "max_num_seqs": 2, "enable_prefix_caching": False}


# The scheduling mode: VllmConfig.__str__ does not print async_scheduling, so it is read from what does show it.
# vLLM 0.29.0's own messages (vllm/config/vllm.py, VllmConfig.__post_init__), with the journal's prefix.
UPSTREAM_OFF = [
    "(APIServer pid=812) WARNING 11-29 17:41:04 [vllm.py:1281] Async scheduling not supported with ngram-based "
    "speculative decoding and will be disabled.",
    "(APIServer pid=812) WARNING 11-29 17:41:04 [vllm.py:1291] Async scheduling is not compatible with "
    "disable_padded_drafter_batch=True and will be disabled.",
    "(APIServer pid=812) WARNING 11-29 17:41:04 [vllm.py:1297] Async scheduling will be disabled because it is not "
    "supported with the `ray` distributed executor backend. ",
    # another release's wording of the same rule (vllm/config/vllm.py, found in the code index, version not known)
    "(APIServer pid=812) WARNING 11-29 17:41:04 [vllm.py:1270] Async scheduling is not yet supported with "
    "pipeline_parallel_size > 1 and will be disabled.",
]
# Logged when async scheduling is ON: not to be read as off.
UPSTREAM_ON = [
    "(APIServer pid=812) INFO 11-29 17:41:04 [vllm.py:1318] Disabling NCCL for DP synchronization when using async "
    "scheduling.",
    "(APIServer pid=812) WARNING 11-29 17:41:04 [vllm.py:1332] Disabling cascade attention (not yet compatible with "
    "async speculative decoding).",
]


def _engine_on(device: str, text: str) -> list[str]:
    """A start of the baseline fixture with its engine line on another device."""
    return [line.replace("device_config=cpu", f"device_config={device}") for line in text.splitlines()]


def test_the_cpu_build_schedules_sync_by_its_platform_rule():
    # cpu.py forces it and logs nothing: the rule is the evidence, named with its source.
    for name in ("cpu-0.29.0-prefix-on.log", "cpu-0.29.0-eagle3-fixed.log"):
        assert effective(name)["scheduling"] == {"mode": "sync", "why": CPU_RULE}
    assert "vllm/platforms/cpu.py" in CPU_RULE


def test_the_cpu_rule_wins_over_an_asked_async_scheduling():
    # cpu.py runs after the options are resolved: an asked --async-scheduling is overridden, and the config check
    # names the difference.
    lines = (STARTUP / "cpu-0.29.0-prefix-on.log").read_text().splitlines()
    lines[0] = lines[0].replace("'max_num_seqs': 2}", "'max_num_seqs': 2, 'async_scheduling': True}")
    got = vllm_effective_config(lines)
    assert got["non_default_args"]["async_scheduling"] is True and got["scheduling"]["mode"] == "sync"
    assert vllm_config_mismatches(got, {"async-scheduling": True}) == [
        f"async_scheduling: asked True, engine schedules sync ({CPU_RULE})"]
    assert vllm_config_mismatches(got, {"no-async-scheduling": True}) == []


@pytest.mark.parametrize("line", UPSTREAM_OFF)
def test_vllms_own_line_says_sync(line):
    lines = _engine_on("cuda", (STARTUP / "cpu-0.29.0-prefix-on.log").read_text())
    got = vllm_effective_config(lines[:1] + [line] + lines[1:])
    assert got["scheduling"] == {"mode": "sync", "why": line.strip()}


@pytest.mark.parametrize("line", UPSTREAM_ON)
def test_lines_logged_with_async_on_are_not_read_as_off(line):
    lines = _engine_on("cuda", (STARTUP / "cpu-0.29.0-prefix-on.log").read_text())
    got = vllm_effective_config(lines[:1] + [line] + lines[1:])
    assert got["scheduling"]["mode"] == "unknown"


@pytest.mark.parametrize(("asked", "mode"), [(True, "async"), (False, "sync")])
def test_the_non_default_args_decide_elsewhere(asked, mode):
    lines = _engine_on("cuda", (STARTUP / "cpu-0.29.0-prefix-on.log").read_text())
    lines[0] = lines[0].replace("'max_num_seqs': 2}", f"'max_num_seqs': 2, 'async_scheduling': {asked}}}")
    assert vllm_effective_config(lines)["scheduling"] == {
        "mode": mode, "why": f"non-default args: 'async_scheduling': {asked}"}


def test_nothing_said_and_no_rule_is_unknown():
    got = vllm_effective_config(_engine_on("cuda", (STARTUP / "cpu-0.29.0-prefix-on.log").read_text()))
    assert got["scheduling"] == {"mode": "unknown", "why": "no line of this start says (device_config=cuda)"}
    assert vllm_effective_config([])["scheduling"]["mode"] == "unknown"


def test_the_neuron_plugins_warning_says_sync():
    # The plugin's warning, made from its features guide's sentence (tests/fixtures/startup/README.md).
    got = effective("neuron-0.24.0-tp8-eagle3-async-warning.log")
    assert got["scheduling"]["mode"] == "sync"
    assert got["scheduling"]["why"].endswith("Setting --speculative-config disables async scheduling automatically.")


def test_neuron_without_the_warning_follows_its_features_guide():
    assert effective("neuron-0.24.0-tp8-eagle3.log")["scheduling"] == {"mode": "sync", "why": NEURON_SPEC}
    lines = (STARTUP / "neuron-0.24.0-tp8-eagle3.log").read_text().splitlines()
    baseline = [line.replace(SPEC_TEXT, "speculative_config=None") for line in lines]
    assert vllm_effective_config(baseline)["scheduling"] == {"mode": "async", "why": NEURON_DEFAULT}
    # The same-scheduling baseline (--no-async-scheduling): the args say sync.
    baseline[1] = baseline[1].replace("'max_num_seqs': 2,", "'max_num_seqs': 2, 'async_scheduling': False,")
    assert vllm_effective_config(baseline)["scheduling"]["mode"] == "sync"


SPEC_TEXT = ("speculative_config=SpeculativeConfig(method='eagle3', model='RedHatAI/Llama-3.1-8B-Instruct-speculator."
             "eagle3', num_spec_tokens=3)")


def test_a_restart_forgets_the_older_starts_warning():
    text = (STARTUP / "neuron-0.24.0-tp8-eagle3-async-warning.log").read_text()
    later = [line.replace(SPEC_TEXT, "speculative_config=None") for line in
             (STARTUP / "neuron-0.24.0-tp8-eagle3.log").read_text().splitlines()]
    assert vllm_effective_config(text.splitlines() + later)["scheduling"]["mode"] == "async"


def test_a_neuron_plugin_declaring_device_cpu_is_not_the_cpu_build():
    # Some vllm-neuron releases declare device_type "cpu": their start has the plugin line, the CPU build's has none.
    lines = [line.replace("device_config=neuron", "device_config=cpu")
             for line in (STARTUP / "neuron-0.24.0-tp8-eagle3.log").read_text().splitlines()]
    assert vllm_effective_config(lines)["scheduling"] == {"mode": "sync", "why": NEURON_SPEC}
    assert vllm_effective_config([line.replace(SPEC_TEXT, "speculative_config=None") for line in lines])[
        "scheduling"] == {"mode": "async", "why": NEURON_DEFAULT}


def test_another_plugin_on_device_cpu_is_unknown():
    lines = (STARTUP / "cpu-0.29.0-prefix-on.log").read_text().splitlines()
    lines.insert(0, "(APIServer pid=812) INFO 11-29 17:41:01 [__init__.py:275] Platform plugin other is activated")
    assert vllm_effective_config(lines)["scheduling"] == {
        "mode": "unknown", "why": "no line of this start says (device_config=cpu, platform plugin other)"}


def test_a_plugin_line_belongs_to_the_start_it_precedes():
    neuron = (STARTUP / "neuron-0.24.0-tp8-eagle3.log").read_text().splitlines()
    cpu = (STARTUP / "cpu-0.29.0-prefix-on.log").read_text().splitlines()
    assert vllm_effective_config(neuron + cpu)["scheduling"] == {"mode": "sync", "why": CPU_RULE}
    assert vllm_effective_config(cpu + neuron)["scheduling"] == {"mode": "sync", "why": NEURON_SPEC}
