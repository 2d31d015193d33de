"""The filter files Ansible loads by name (FilterModule.filters()) give the module_utils functions the tests call
directly, and the thin wrappers among them turn what a template can hand them (not a mapping, no recorded run) into
what those functions take."""
from __future__ import annotations

from ansible_collections.eagle3.trn2.plugins.filter import bands, cli_refusal, layers, relations
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as B
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import layers as LY
from ansible_collections.eagle3.trn2.plugins.module_utils.results import result_checks as R
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S


def test_each_filter_name_is_the_function_of_module_utils():
    assert bands.FilterModule().filters() == {
        "eagle3_bands_from_run": B.bands_from_run, "eagle3_bands_merged": B.bands_merged,
        "eagle3_band_live_queries": B.live_queries, "eagle3_bands_from_prometheus": B.bands_from_prometheus,
        "eagle3_alert_bands": B.alert_bands}
    assert layers.FilterModule().filters() == {"eagle3_merged": LY.eagle3_merged}
    assert cli_refusal.FilterModule().filters()["refusal_sources"] is S.refusal_sources
    assert set(relations.FilterModule().filters()) == {"eagle3_port_problems", "eagle3_workload_problems",
                                                       "eagle3_reference_problems"}


def test_the_command_line_refusal_names_the_secrets_and_never_their_values():
    assert cli_refusal.cli_secrets_refusal([]) == ""
    said = cli_refusal.cli_secrets_refusal(["eagle3_hf_token", "eagle3_serve_api_key"])
    assert said.startswith("eagle3_hf_token, eagle3_serve_api_key given on the ansible-playbook command line")
    assert "HF_TOKEN environment variable" in said and "EAGLE3_API_KEY" in said and "(-e @vault.yml)" in said


def test_the_relation_filters_take_what_a_template_hands_them():
    clash = {"a": {"network": "loopback", "ports": {"eagle3_port": 8000}},
             "b": {"network": "loopback", "ports": {"eagle3_port": 8000}}}
    assert relations.eagle3_port_problems(clash) == S.port_problems(clash) != []
    assert relations.eagle3_port_problems("not a mapping") == S.port_problems({}) == []
    assert relations.eagle3_workload_problems("not a mapping", "no run") == S.workload_problems({}, None, "") == []
    assert relations.eagle3_reference_problems("{", "ref.json") == R.reference_problems("{", "ref.json") != []
