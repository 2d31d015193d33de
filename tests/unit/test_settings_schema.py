"""The settings schema (a wrong setting is refused by name before anything runs):
plugins/module_utils/settings/settings_schema.yml and its validator.

The schema knows every name the project defines (group_vars, the inventories, molecule's inventories, the plays'
facts) and docs/settings.md names only settings it knows; the defaults as committed are valid; for every setting,
generated values of every wrong class (a type it does not take, a control character, an unknown key of a closed
mapping, a misspelt name) are refused with a message naming it, never an exception. The real site.yml refusals of a
sample are in tests/integration/test_bad_inputs.py, the bad-input matrix's other schema cases in test_bad_inputs_code.py.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import ROOT
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import eagle3_cli_text_names

NAME = re.compile(r"^\s*(eagle3_[a-z0-9_]+):", re.M)


def defined_names() -> set[str]:
    files = [*ROOT.glob("roles/settings/defaults/main/*.yml"), *ROOT.glob("inventories/*/group_vars/*.yml"),
             *ROOT.glob("inventories/*/hosts.yml"), *ROOT.glob("molecule/*/inventory/**/*.yml")]
    return {m for f in files for m in NAME.findall(f.read_text())}


def test_the_schema_knows_every_name_the_project_defines_and_nothing_else_is_a_fact():
    known = set(S.settings()) | set(S.facts())
    assert defined_names() - known == set()
    assert set(S.settings()) - defined_names() <= {"eagle3_roll_batches"}  # -e only


def test_docs_name_only_known_settings():
    docs = (ROOT / "docs/settings.md").read_text()
    named = set(re.findall(r"`(eagle3_[a-z0-9_]+)`", docs))
    assert named - set(S.settings()) - set(S.facts()) == set()


def test_every_default_the_schema_gives_that_is_not_a_template_is_valid():
    # settings and the role inputs an operator sets directly alike: the generated defaults are these values
    plain = {k: v["default"] for k, v in S.schema()["properties"].items() if "default" in v and "{{" not in str(v["default"])}
    assert len(plain) > 100
    assert S.settings_problems(plain) == []


WRONG = {
    "string": [True, 5, 1.5, [], {}],
    "integer": [True, "x", 1.5, [], {}],
    "number": [True, "x", [], {}],
    "boolean": ["yes", 1, [], {}],
    "array": ["x", 5, True, {}],
    "object": ["x", 5, True, []],
}


def _kinds(node):
    node = S._resolve(node)
    if "enum" in node:
        return ["enum"]
    kinds = node.get("type", [])
    return kinds if isinstance(kinds, list) else [kinds]


@pytest.mark.parametrize("name", sorted(S.schema()["properties"]))
def test_every_setting_refuses_every_wrong_type_by_name(name):
    node = S.schema()["properties"][name]
    kinds = _kinds(node)
    wrong = []
    for kind in kinds or ["string"]:
        wrong += [v for v in WRONG.get(kind, [5, True, [], {}])
                  if not any(S._schema._is_number(None, v) if k == "number" else
                             (S._schema._is_integer(None, v) if k == "integer" else False) for k in kinds)]
    if "null" in kinds:
        wrong = [v for v in wrong if v is not None]
    if "number" in kinds:
        wrong = [v for v in wrong if isinstance(v, bool) or not isinstance(v, (int, float))]
    if "string" in kinds and "anyOf" not in node:
        wrong = [v for v in wrong if not isinstance(v, str)]
    for value in wrong:
        found = S.settings_problems({name: value})
        assert found and all(line.startswith(name) for line in found), (name, value, found)


STRINGS = [n for n in S.schema()["properties"] if "string" in _kinds(S.schema()["properties"][n])]


@hsettings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(STRINGS), st.text(max_size=8),
       # C0, DEL, and (they hide or reorder text in a log or a unit) every character of Unicode's control, format and
       # separator categories: U+0085, a zero-width space, a bidi override, U+2028
       st.one_of(st.sampled_from(["\n", "\r", "\x00", "\x1b", "\x7f", "\x85", "\u200b", "\u202e", "\u2028"]),
                 st.characters(categories=["Cc", "Cf", "Zl", "Zp"])),
       st.text(max_size=8))
def test_a_control_character_in_any_string_setting_is_refused_naming_it(name, head, control, tail):
    found = S.settings_problems({name: head + control + tail})
    assert found and found[0].startswith(name), found
    if S._resolve(S.schema()["properties"][name]).get("x-secret"):
        assert all(head + control + tail not in line for line in found if head or tail)


CLOSED = [("eagle3_gates",), ("eagle3_gates", "acceptance"), ("eagle3_gates", "parity"), ("eagle3_gates", "acceptance_band"), ("eagle3_bench_environment",),
          ("bench_report_instance_price",)]


@hsettings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from(CLOSED), st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True))
def test_an_unknown_key_at_every_level_of_a_closed_mapping_is_refused_by_path(path, key):
    value: dict = {key: 1}
    for part in reversed(path[1:]):
        value = {part: value}
    node = S._resolve(S.schema()["properties"][path[0]])
    for part in path[1:]:
        node = node["properties"][part]
    if key in node.get("properties", {}):
        return
    found = S.settings_problems({path[0]: value})
    assert any(line.startswith(".".join([*path, key]) + " is not a key of") for line in found), found


@hsettings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from(S.settings()), st.integers(min_value=0), st.sampled_from(["drop", "double", "swap", "add"]))
def test_a_misspelt_setting_is_refused_with_the_setting_it_was_meant_to_be(name, at, how):
    body = name[len("eagle3_"):]
    i = at % len(body)
    if how == "drop":
        body = body[:i] + body[i + 1:]
    elif how == "double":
        body = body[:i] + body[i] + body[i:]
    elif how == "swap" and i + 1 < len(body):
        body = body[:i] + body[i + 1] + body[i] + body[i + 2:]
    else:
        body = body[:i] + "x" + body[i:]
    typo = "eagle3_" + body
    if typo in S.settings() or typo in S.facts():
        return
    found = S.settings_problems({typo: 1})
    assert found and found[0].startswith(f"{typo} is not a setting"), found
    assert "did you mean" in found[0] or len(name) < 14


def test_the_allow_list_and_the_plays_facts_pass_and_a_wrong_allow_list_is_refused():
    assert S.settings_problems({"eagle3_mine": 1, "eagle3_run": "r"}, allowed=["eagle3_mine"]) == []
    assert S.settings_problems({"eagle3_mine": 1}, allowed="eagle3_mine")[0].startswith("eagle3_settings_allow must")


@pytest.mark.parametrize(("name", "text", "value"), [
    ("eagle3_bench_num_prompts", "20", 20), ("eagle3_num_speculative_tokens", "2,3,4", [2, 3, 4]),
    ("eagle3_compile_cache", "false", False), ("eagle3_bench_temperature", "0.5", 0.5),
    ("eagle3_roll_batches", "1,50%,100%", [1, "50%", "100%"])])
def test_a_text_from_the_command_line_is_converted_once_by_the_declared_type(name, text, value):
    assert S.convert(text, S.schema()["properties"][name]) == value
    assert S.settings_problems({name: text}, as_text=[name]) == []
    assert S.settings_problems({name: text})  # the same text from YAML is not a number


def test_a_true_is_not_a_count_even_from_the_command_line():
    assert S.settings_problems({"eagle3_bench_num_prompts": "true"}, as_text=["eagle3_bench_num_prompts"])


def test_a_fraction_for_a_percentage_is_refused_with_the_percentage():
    found = S.settings_problems({"eagle3_gates": {"acceptance": {"min_rate": 0.3}}})
    assert found == ["eagle3_gates.acceptance.min_rate is a fraction where a percentage is expected: "
                     "did you mean 30 (%)? (got 0.3)"]


def test_a_value_a_template_made_is_refused_only_when_no_given_value_is():
    both = {"eagle3_port": "abc", "eagle3_serve_port": "abc"}
    assert S.settings_problems(both, as_text=["eagle3_port"], templated=["eagle3_serve_port"]) == [
        'eagle3_port must be a TCP port 1024..65535 (got "abc")']
    assert S.settings_problems({"eagle3_serve_port": "80"}, templated=["eagle3_serve_port"])


def test_loader_variables_need_the_opt_in():
    env = {"vllm_service_environment": {"LD_PRELOAD": "/x.so"}}
    assert S.settings_problems(env)
    assert S.settings_problems({**env, "eagle3_environment_allow_loader": True}) == []
    # a role's own check of its inputs (eagle3.trn2.input_problems) takes the same opt-in
    entries = S.role_input_entries("vllm_service")
    assert S.input_problems(env, entries)[0].startswith("vllm_service_environment")
    assert S.input_problems(env, entries, allow_loader=True) == []


def test_a_role_input_is_checked_by_the_entry_that_describes_it_and_named_by_itself():
    entries = S.role_input_entries("vllm_bench")
    assert entries["vllm_bench_port"] == "eagle3_port" and entries["vllm_bench_prompts"] == "vllm_bench_prompts"
    assert S.input_problems({"vllm_bench_port": 80}, entries) == ["vllm_bench_port must be a TCP port 1024..65535 (got 80)"]
    assert S.input_problems({"vllm_bench_port": "8000"}, entries)  # a YAML string is not a port
    assert S.input_problems({"vllm_bench_port": "8000"}, entries, converted=["vllm_bench_port"]) == []  # -e text
    assert S.input_problems({"vllm_bench_unknown": 1, "eagle3_port": 80}, entries) == []  # not this role's inputs


def test_the_command_line_names_given_as_text():
    argv = ["ansible-playbook", "-e", "eagle3_port=80 eagle3_serve=best", "-e", '{"eagle3_bench_num_prompts": 5}',
            "--extra-vars=eagle3_run_id=x", "-e", "@vault.yml", "site.yml"]
    assert eagle3_cli_text_names(argv) == ["eagle3_port", "eagle3_serve", "eagle3_run_id"]


# --- Where a role input comes from (the refusals name it: playbooks/tasks/refuse.yml) ---------------------------------
def test_every_role_input_the_project_makes_has_its_settings():
    sources = S.input_sources()
    fed = {i: name for name, node in S.schema()["properties"].items() for i in node.get("inputs", [])}
    assert {i: found for i, found in sources.items() if i in fed} == {i: [name] for i, name in fed.items()}
    assert sources["vllm_service_port"] == ["eagle3_port"]
    assert sources["vllm_bench_dataset_path"] == ["eagle3_dataset_path"]
    assert sources["bench_report_band_key"] == ["eagle3_band_key"]
    # an input a role computes in its own defaults: the settings its value names, each once, in that order
    assert sources["vllm_service_options"] == ["eagle3_server_options_defaults", "eagle3_server_options"]
    assert sources["model_assets_hf_token"] == ["eagle3_hf_token", "eagle3_model_source"]


def test_a_refusal_names_the_settings_behind_the_inputs_it_names_as_whole_tokens():
    assert S.refusal_sources("vllm_service_port must be 1024..65535 (got 80).") == [
        "vllm_service_port is set from eagle3_port"]
    # vllm_bench_dataset_path contains vllm_bench_dataset: only the whole token counts
    assert S.refusal_sources("vllm_bench_dataset_path must be an absolute path") == [
        "vllm_bench_dataset_path is set from eagle3_dataset_path"]
    found = S.refusal_sources("vllm_bench_max_concurrency (4) exceeds vllm_bench_num_prompts (1)")
    assert sorted(found) == ["vllm_bench_max_concurrency is set from eagle3_bench_max_concurrency",
                             "vllm_bench_num_prompts is set from eagle3_bench_num_prompts"]
    assert S.refusal_sources("eagle3_port must be a TCP port") == []  # a setting is not a role input
    assert S.refusal_sources("") == []


# --- Rules that span settings (item 4) --------------------------------------------------------------------------------
@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(min_value=1, max_value=60), st.one_of(st.integers(min_value=1, max_value=80),
                                                         st.integers(min_value=1, max_value=100).map(lambda p: f"{p}%")))
def test_the_first_roll_batch_is_refused_exactly_when_ansible_would_put_the_whole_fleet_in_it(fleet, first):
    from ansible.utils.helpers import pct_to_int  # how the play iterator sizes a serial batch
    whole = (pct_to_int(first, fleet) if isinstance(first, str) else first) >= fleet
    found = S.meaning_problems({"eagle3_roll_batches": [first, "100%"]}, fleet)
    assert bool(found) == (whole and fleet > 1), (fleet, first, found)
    assert all(line.startswith("eagle3_roll_batches' first batch") for line in found)


BENCH = {"eagle3_accelerator": "neuron", "eagle3_bench_stream_rate": {"cpu": 48, "neuron": 92},
         "eagle3_bench_max_hours": 2, "eagle3_num_speculative_tokens": [3], "eagle3_server_options": {"max-num-seqs": 2}}


@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(min_value=1, max_value=100000), st.integers(min_value=1, max_value=4096),
       st.integers(min_value=1, max_value=64), st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True),
       st.booleans())
def test_a_benchmark_longer_than_the_bound_is_refused_unless_confirmed(prompts, tokens, concurrency, ks, confirmed):
    values = {**BENCH, "eagle3_bench_num_prompts": prompts, "eagle3_bench_output_len": tokens,
              "eagle3_bench_max_concurrency": concurrency, "eagle3_num_speculative_tokens": ks,
              "eagle3_bench_long_confirmed": confirmed}
    hours = (1 + len(ks)) * prompts * tokens / (92 * min(concurrency, 2)) / 3600
    found = S.meaning_problems(values, 1)
    assert bool(found) == (hours > 2 and not confirmed), (hours, found)
    assert all(line.startswith(f"eagle3_bench_num_prompts {prompts}: the benchmark would take about") for line in found)


def test_the_tutorials_benchmark_is_well_within_the_bound():
    hours, _ = S.bench_hours({**BENCH, "eagle3_bench_num_prompts": 50, "eagle3_bench_output_len": 128,
                              "eagle3_bench_max_concurrency": 2, "eagle3_num_speculative_tokens": [2, 3, 4]})
    assert hours * 3600 == pytest.approx(4 * 50 * 128 / 184)  # 139 s for the sweep of k 2, 3, 4 on trn2


def _tagged(value):
    """The value as Ansible 2.19 hands it over from a YAML file: every str, int, float, list and dict tagged with its
    origin (_AnsibleTaggedStr, _AnsibleTaggedInt, ...; a bool cannot be tagged, as in Ansible)."""
    from ansible._internal._datatag._tags import Origin

    origin = Origin(path="/inventory/group_vars/eagle3.yml", line_num=1)
    if isinstance(value, dict):
        return origin.tag({_tagged(k): _tagged(v) for k, v in value.items()})
    if isinstance(value, list):
        return origin.tag([_tagged(v) for v in value])
    return value if isinstance(value, bool) or value is None else origin.tag(value)


@pytest.mark.parametrize("name", sorted(S.schema()["properties"]))
def test_tagged_values_get_the_verdict_of_their_plain_selves(name):
    values = [5, "x", True, [], {}, ["a\nb"], {"k": "v"}, -1, 10 ** 9, 0.5]
    defaults = yaml.safe_load((ROOT / "roles/settings/defaults/main/settings.yml").read_text())
    if name in defaults and "{{" not in str(defaults[name]):
        values.append(defaults[name])
    assert type(_tagged("x")).__name__ == "_AnsibleTaggedStr" and type(_tagged({})).__name__ == "_AnsibleTaggedDict"
    for value in values:
        assert S.settings_problems({name: _tagged(value)}) == S.settings_problems({name: value}), (name, value)


SERVING = {"eagle3_accelerator": "neuron", "eagle3_instance_type": "trn2.48xlarge", "eagle3_provider": "ec2",
           "eagle3_neuron_cores": {"trn2.48xlarge": 64}, "eagle3_neuron_devices": {"trn2.48xlarge": 16},
           "eagle3_serve": "best", "eagle3_profiles": [{"name": "baseline"}, {"name": "eagle3"}],
           "eagle3_serve_api_key": "k" * 16, "eagle3_serve_bind_address": "0.0.0.0", "eagle3_bind_address": "127.0.0.1",
           "eagle3_model_source": "hub"}


@pytest.mark.parametrize(("change", "refusal"), [
    ({}, None),
    ({"eagle3_instance_type": "c7i.48xlarge"}, "eagle3_instance_type c7i.48xlarge has no Neuron devices the project knows of"),
    ({"eagle3_serve": "eagle3-k9"}, "eagle3_serve must be none, best or one of the run's profiles baseline, eagle3"),
    ({"eagle3_serve_api_key": ""}, "eagle3_serve best needs an API key"),
    ({"eagle3_serve": "none", "eagle3_serve_api_key": ""}, None),
    ({"eagle3_provider": "podman"}, "eagle3_serve_bind_address must be 127.0.0.1 on podman hosts"),
    ({"eagle3_accelerator": "cpu"}, "eagle3_model_source must be rehearsal with accelerator cpu"),
])
def test_the_rules_between_settings_name_what_to_change(change, refusal):
    found = S.meaning_problems({**SERVING, **change}, 1)
    assert (found[0].startswith(refusal) and len(found) <= 2) if refusal else found == []


def test_x_multiline_exempts_only_its_own_part_of_a_value():
    """x-multiline on a property (the compile cache plan's env_text, a unit's environment file) lets that property
    hold lines; every other string of the same value still may not hold a control character, and a missing option
    is named."""
    from ansible_collections.eagle3.trn2.plugins.action.compile_cache_plan import SCHEMA
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema
    defs = S.schema()["$defs"]
    good = {"deployed": {"pip": {}}, "served": {}, "env_text": "A=1\nB=2\n", "accelerator": "cpu", "profile": "eagle3",
            "look": None, "cache_dir": "/c", "manifest": "/r/m.json", "canary": "h1", "wait": 0,
            "s3": {"bucket": "", "prefix": "eagle3/cc", "region": "", "endpoint_url": ""}}
    assert schema.problems(good, SCHEMA, "compile_cache_plan", defs) == []
    bad = {**good, "profile": "eagle3\n", "s3": {**good["s3"], "prefix": "a\u200bb"}, "cache_dir": "relative"}
    del bad["canary"]
    said = schema.problems(bad, SCHEMA, "compile_cache_plan", defs)
    assert any(line.startswith("compile_cache_plan.profile holds") for line in said), said
    assert any(line.startswith("compile_cache_plan.s3.prefix holds") for line in said), said
    assert "compile_cache_plan.cache_dir must be an absolute path on the controller (got \"relative\")" in said, said
    assert "compile_cache_plan.canary is required" in said, said
    assert not any("env_text" in line for line in said), said
    # the same text where no x-multiline is said is refused
    assert schema.problems({"text": "A=1\nB=2"}, {"type": "object", "properties": {"text": {"type": "string"}}}, "x")
