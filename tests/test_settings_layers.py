"""Settings layers (issue 36, item 6): an operator's mapping settings merge over the project's instead of replacing
them, and the precedence of the layers is Ansible's own. Asserted on what Ansible itself resolves (an ad-hoc run with
the project's group_vars/all, an inventory's group_vars and host_vars, and -e), and on the merge filter over generated
mappings."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT
from ansible_collections.eagle3.trn2.plugins.filter.layers import eagle3_merged

KEYS = st.sampled_from(["a", "b", "c", "d"])
LEAF = st.one_of(st.integers(), st.booleans(), st.text(max_size=3))
TREE = st.recursive(st.dictionaries(KEYS, LEAF, max_size=4), lambda inner: st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=12)
GIVEN = st.recursive(st.dictionaries(KEYS, st.one_of(LEAF, st.none()), max_size=4),
                     lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=12)


@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(TREE, GIVEN)
def test_a_given_mapping_merges_key_by_key_and_null_drops_a_key(defaults, given):
    merged = eagle3_merged(defaults, given)
    for key, value in given.items():
        if value is None:
            assert key not in merged
        elif isinstance(value, dict) and isinstance(defaults.get(key), dict):
            assert merged[key] == eagle3_merged(defaults[key], value)
        else:
            assert merged[key] == value
    for key, value in defaults.items():
        if key not in given:
            assert merged[key] == value  # what the operator did not name stays the project's
    assert eagle3_merged(defaults, "not a mapping") == "not a mapping"  # left for the schema to refuse by name


INVENTORY = """---
all:
  children:
    eagle3:
      children:
        vllm_hosts:
          hosts:
            layers-1: {}
            layers-2: {eagle3_bench_num_prompts: 7}
"""
# An ops team's trn2 inventory that sets one gate key and one server option: the rest stays the project's.
GROUP_VARS = """---
eagle3_accelerator: neuron
eagle3_gates: {acceptance: {min_rate: 50}}
eagle3_server_options: {enforce-eager: true, enable-prefix-caching: null}
eagle3_bench_num_prompts: 10
eagle3_bench_max_concurrency: 4
"""
SHOW = ("{{ {'gates': bench_report_gates | eagle3.trn2.eagle3_gate_settings, 'options': vllm_service_options, "
        "'max_model_len': vllm_bench_max_model_len, 'prompts': eagle3_bench_num_prompts, "
        "'concurrency': eagle3_bench_max_concurrency, 'rate': eagle3_bench_temperature, "
        "'alert': monitoring_acceptance_threshold} | to_json }}")


def resolved(tmp_path: Path, *extra: str) -> dict[str, dict]:
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(INVENTORY)
    (inventory / "group_vars" / "eagle3.yml").write_text(GROUP_VARS)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible"), "all", "-i", str(inventory), "--playbook-dir",
                           str(ROOT), "-c", "local", "-m", "ansible.builtin.debug", "-a", f"msg={SHOW}", *extra],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json",
                                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hosts = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]
    return {host: json.loads(result["msg"]) for host, result in hosts.items()}


def test_an_inventory_that_sets_one_key_keeps_the_projects_others_and_the_layers_rank_as_ansibles(tmp_path):
    hosts = resolved(tmp_path, "-e", "eagle3_bench_max_concurrency=3")
    one = hosts["layers-1"]
    # the inventory's gate key, over the project's neuron defaults (parity 61, reference informational), over the
    # role's (speedup 1.0 enforced)
    assert one["gates"]["acceptance"]["min_rate"] == 50
    assert one["gates"]["parity"]["min_match_rate"] in (61, "61")
    assert one["gates"]["reference"]["enforce"] in (False, "False")
    assert one["gates"]["speedup"] == {"enforce": True, "min": 1.0}
    # the serving alert fires below the same merged acceptance floor
    assert float(one["alert"]) == 0.5
    # the inventory's option added, the dropped one gone, the tutorial's others kept
    assert one["options"] == {"max-num-seqs": 2, "max-model-len": 2048, "enforce-eager": True}
    assert one["max_model_len"] in (2048, "2048")
    # precedence: project group_vars/all < inventory group_vars < host_vars < -e
    assert one["rate"] is None  # the project's, nobody set it
    assert one["prompts"] == 10 and hosts["layers-2"]["prompts"] == 7
    assert one["concurrency"] in (3, "3") and hosts["layers-2"]["concurrency"] in (3, "3")
