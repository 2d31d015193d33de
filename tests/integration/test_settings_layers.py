"""Settings layers: an operator's mapping settings merge over the project's instead of replacing
them, and the precedence of the layers is Ansible's own. Asserted on what Ansible itself resolves (an ad-hoc run with
the project's defaults (roles/settings), an inventory's group_vars/all, its groups, host_vars and -e), and on the merge filter over generated
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
            layers-2: {}
"""
# An ops team's trn2 inventory that sets one gate key and one server option: the rest stays the project's. One value
# per level (a setting and a role input an operator sets directly), and two set at two levels.
LEVELS = {
    "group_vars/all.yml": """---
eagle3_bench_rounds: 3
vllm_bench_timeout: 111
eagle3_bench_temperature: 0.5
""",
    "group_vars/eagle3.yml": """---
eagle3_accelerator: neuron
eagle3_gates: {acceptance: {min_rate: 50}}
eagle3_server_options: {enforce-eager: true, enable-prefix-caching: null}
eagle3_bench_num_prompts: 10
eagle3_bench_max_concurrency: 4
eagle3_bench_output_len: 64
vllm_bench_poll_window: 7
eagle3_bench_temperature: 0.7
""",
    "host_vars/layers-2.yml": """---
eagle3_bench_num_prompts: 7
eagle3_bench_input_len: 256
vllm_bench_poll_delay: 3
""",
}
SHOW = ("{{ {'gates': bench_report_gates | eagle3.trn2.eagle3_gate_settings, 'options': vllm_service_options, "
        "'max_model_len': vllm_bench_max_model_len, 'prompts': vllm_bench_num_prompts, 'rounds': vllm_bench_rounds, "
        "'concurrency': vllm_bench_max_concurrency, 'rate': vllm_bench_temperature, 'output_len': vllm_bench_output_len, "
        "'input_len': vllm_bench_input_len, 'timeout': vllm_bench_timeout, 'window': vllm_bench_poll_window, "
        "'delay': vllm_bench_poll_delay, 'tokenizer': vllm_bench_tokenizer, "
        "'alert': monitoring_acceptance_threshold} | to_json }}")
# The roles' defaults as a play sees them, none of their tasks run: the project's settings, then the roles that read
# them (what each role receives).
PLAY = """---
- name: Resolve the layers
  hosts: vllm_hosts
  gather_facts: false
  roles:
    - role: eagle3.trn2.settings
    - {role: eagle3.trn2.vllm_bench, when: false}
    - {role: eagle3.trn2.vllm_service, when: false}
    - {role: eagle3.trn2.bench_report, when: false}
    - {role: eagle3.trn2.monitoring, when: false}
  tasks:
    - name: Show what the roles receive
      ansible.builtin.debug:
        msg: "SHOW"
"""


def resolved(tmp_path: Path, *extra: str) -> dict[str, dict]:
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "host_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(INVENTORY)
    for name, text in LEVELS.items():
        (inventory / name).write_text(text)
    playbook = tmp_path / "layers.yml"
    playbook.write_text(PLAY.replace("SHOW", SHOW.replace('"', '\\"')))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-c", "local",
                           str(playbook), *extra],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json",
                                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    hosts = next(t for t in tasks if t["task"]["name"] == "Show what the roles receive")["hosts"]
    return {host: json.loads(result["msg"]) for host, result in hosts.items()}


def test_an_inventory_that_sets_one_key_keeps_the_projects_others_and_the_layers_rank_as_ansibles(tmp_path):
    hosts = resolved(tmp_path, "-e", "eagle3_bench_max_concurrency=3", "-e", "vllm_bench_tokenizer=tok")
    one, two = hosts["layers-1"], hosts["layers-2"]
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
    # Each level over the project's defaults, a setting and a role input alike:
    # an inventory's group_vars/all,
    assert one["rounds"] == 3 and one["timeout"] == 111
    # one of its groups (and over group_vars/all),
    assert one["output_len"] == 64 and one["window"] == 7 and float(one["rate"]) == 0.7
    # host_vars (and over the groups),
    assert two["input_len"] == 256 and two["delay"] == 3 and one["input_len"] == 512 and one["delay"] == 10
    assert one["prompts"] == 10 and two["prompts"] == 7
    # -e (over every other level).
    assert one["concurrency"] in (3, "3") and two["concurrency"] in (3, "3")
    assert one["tokenizer"] == two["tokenizer"] == "tok"
