"""Tests of plugins/module_utils/report/compare.py and profiles.py on results from real rehearsal runs."""
from __future__ import annotations

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import eagle3_compare, eagle3_table
from ansible_collections.eagle3.trn2.plugins.module_utils.server.profiles import eagle3_profile_files, eagle3_profiles
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import settings_problems


def test_one_k_is_the_tutorials_plain_run():
    profiles = eagle3_profiles([3], "draft-dir")
    assert profiles == [
        {"name": "baseline"},
        {"name": "eagle3", "speculative_config": {"method": "eagle3", "model": "draft-dir", "num_speculative_tokens": 3}},
    ]


def test_several_k_expand_into_a_sweep():
    names = [p["name"] for p in eagle3_profiles([2, 3, 4], "d")]
    assert names == ["baseline", "eagle3-k2", "eagle3-k3", "eagle3-k4"]


@pytest.mark.parametrize("bad", [[], [0], [9], [3, 3], ["3"], [True], "", "2,x", "3,3", "12"])
def test_bad_k_is_refused_once_by_the_schema_naming_the_setting(bad):
    # The filter judges nothing (each value is checked once): the schema refuses the setting, and the profiles made
    # from it are not refused a second time.
    made = eagle3_profiles(bad, "d")
    found = settings_problems({"eagle3_num_speculative_tokens": bad, "eagle3_profiles": made},
                              as_text=["eagle3_num_speculative_tokens"] if isinstance(bad, str) else [],
                              templated=["eagle3_profiles"])
    assert found and all(p.startswith("eagle3_num_speculative_tokens must be one or more distinct integers 1..8")
                         or p.startswith("eagle3_num_speculative_tokens[") for p in found), found


@pytest.mark.parametrize(("given", "names"), [("3", ["baseline", "eagle3"]),
                                              ("2,3,4", ["baseline", "eagle3-k2", "eagle3-k3", "eagle3-k4"])])
def test_k_from_the_command_line_is_parsed(given, names):
    # ansible-playbook -e eagle3_num_speculative_tokens=2,3,4 passes a string.
    assert [p["name"] for p in eagle3_profiles(given, "d")] == names


@pytest.mark.parametrize("same", [True, "true"])
def test_same_scheduling_gives_the_baseline_no_async_scheduling(same):
    # eagle3_bench_same_scheduling: the baseline alone is told to schedule sync, as vllm-neuron's speculative servers
    # do; -e passes a text, converted as the schema converts it.
    profiles = eagle3_profiles([2, 3], "/var/lib/eagle3/models/draft", same_scheduling=same)
    assert profiles[0] == {"name": "baseline", "server_options": {"no-async-scheduling": True}}
    assert all("server_options" not in p for p in profiles[1:])
    assert settings_problems({"eagle3_profiles": profiles}, templated=["eagle3_profiles"]) == []


def test_by_default_no_profile_has_options_of_its_own():
    assert all("server_options" not in p for p in eagle3_profiles([2, 3], "d"))
    assert all("server_options" not in p for p in eagle3_profiles([3], "d", same_scheduling="false"))


def test_each_profile_carries_its_unit_and_config_names():
    files = eagle3_profile_files(eagle3_profiles([2, 3], "d"))
    assert [(p["name"], p["unit"], p["config"]) for p in files] == [
        ("baseline", "vllm-baseline.service", "baseline.yaml"),
        ("eagle3-k2", "vllm-eagle3-k2.service", "eagle3-k2.yaml"),
        ("eagle3-k3", "vllm-eagle3-k3.service", "eagle3-k3.yaml")]
    assert files[1]["speculative_config"]["num_speculative_tokens"] == 2
    # Names a profile already carries are kept.
    assert eagle3_profile_files([{"name": "a", "unit": "u.service", "config": "c.yaml"}]) == [
        {"name": "a", "unit": "u.service", "config": "c.yaml"}]


def test_compare_puts_baseline_first_with_ratios(agree_run):
    rows = eagle3_compare(agree_run)
    assert [r["profile"] for r in rows] == ["baseline", "eagle3"]
    base, spec = rows
    assert base["speedup"] == pytest.approx(1.0)
    assert spec["speedup"] == pytest.approx(agree_run["eagle3"]["output_throughput"] / agree_run["baseline"]["output_throughput"])
    assert spec["tpot_ratio"] == pytest.approx(agree_run["eagle3"]["median_tpot_ms"] / agree_run["baseline"]["median_tpot_ms"])
    assert spec["acceptance_rate"] == pytest.approx(100.0)
    assert spec["acceptance_length"] == pytest.approx(4.0)
    assert base["acceptance_rate"] is None


def test_compare_without_baseline_has_no_ratios(agree_run):
    rows = eagle3_compare({"eagle3": agree_run["eagle3"]})
    assert rows[0]["speedup"] is None


def test_table_formats_every_profile(agree_run):
    lines = eagle3_table(eagle3_compare(agree_run))
    assert lines[0].split()[0] == "profile"
    assert lines[1].split()[0] == "baseline" and lines[1].split()[-1] == "-"
    assert lines[2].split()[-2:] == ["100.0", "4.00"]
