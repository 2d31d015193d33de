"""Issue 53: the relations between one inventory's hosts (plugins/module_utils/settings.py port_problems), proven on
generated inventories: 1-8 hosts, each on the machine's shared network (podman, loopback) or its own, with ports
drawn from a small pool so that collisions are common."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ansible_collections.eagle3.trn2.plugins.module_utils import settings as S

PORTS = st.sampled_from([22, 2201, 2202, 8000, 8001, 9090])
HOST = st.fixed_dictionaries({
    "network": st.sampled_from([S.LOOPBACK, "own"]),
    "ports": st.dictionaries(st.sampled_from(["ansible_port", "eagle3_port", "eagle3_serve_port",
                                              "eagle3_prometheus_listen_address"]), PORTS, min_size=1),
})


def _inventory(hosts: list[dict]) -> dict:
    return {f"h{i}": {**h, "network": h["network"] if h["network"] == S.LOOPBACK else f"h{i}"} for i, h in enumerate(hosts)}


def _collisions(inventory: dict) -> set[tuple[str, int]]:
    """The oracle: every (network, port) two services take, pair by pair; a host's benchmark and serving ports may be
    one port (its units never run together)."""
    uses = [(r["network"], port, host, what) for host, r in inventory.items() for what, port in r["ports"].items()]
    return {(a[0], a[1]) for a, b in itertools.combinations(uses, 2) if a[:2] == b[:2]
            and not (a[2] == b[2] and {a[3], b[3]} <= S.SHARED_PORTS)}


@hsettings(max_examples=400, deadline=None)
@given(st.lists(HOST, min_size=1, max_size=8))
def test_a_port_two_services_take_on_one_network_is_refused_naming_both(hosts):
    inventory = _inventory(hosts)
    found, expected = S.port_problems(inventory), _collisions(inventory)
    assert len(found) == len(expected)
    for (network, port), problem in zip(sorted(expected), found):
        assert problem.startswith(f"port {port} is taken twice on ")
        users = [(h, w) for h, r in inventory.items() for w, p in r["ports"].items() if r["network"] == network and p == port]
        assert all(f"{what} of {host}" in problem for host, what in users)


@hsettings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=99999), st.sampled_from(["127.0.0.1", "0.0.0.0", "monitor.example"]))
def test_the_prometheus_port_is_a_port_1024_to_65535(port, host):
    refused = S.settings_problems({"eagle3_prometheus_listen_address": f"{host}:{port}"})
    assert bool(refused) == (not 1024 <= port <= 65535)


def test_the_tutorial_fleet_and_the_rehearsal_pass():
    rehearsal = {"rehearsal-1": {"network": S.LOOPBACK, "ports": {"ansible_port": 2201, "eagle3_port": 8000,
                                                                  "eagle3_serve_port": 8000}},
                 "monitor": {"network": S.LOOPBACK, "ports": {"ansible_port": 2209, "eagle3_prometheus_listen_address": 9090}}}
    fleet = {f"trn2-{i}": {"network": f"trn2-{i}", "ports": {"ansible_port": 22, "eagle3_port": 8000,
                                                                 "eagle3_serve_port": 8000}} for i in range(4)}
    assert S.port_problems(rehearsal) == [] and S.port_problems(fleet) == []


# ---- Sinks (issue 53): each value against the grammar of the place it lands

def _refs(name: str) -> str:
    return str(S.schema()["properties"][name].get("$ref", "")).rsplit("/", 1)[-1]


PATHS = [n for n in S.schema()["properties"] if _refs(n) in ("path", "path_or_empty")]
OS_PREFIXES = ["/", "/usr", "/etc", "/var/lib", "/usr/local", "/bin", "/lib64", "/opt", "/home", "/root", "/boot"]


@hsettings(max_examples=200, deadline=None)
@given(st.sampled_from(PATHS), st.sampled_from(OS_PREFIXES), st.sampled_from(["", "/", "//"]))
def test_a_path_that_is_an_os_prefix_is_refused(name, prefix, slashes):
    value = (prefix + slashes) if prefix != "/" else "/" + slashes
    found = S.settings_problems({name: value})
    assert found and found[0].startswith(f"{name} must be ") and "not an OS prefix" in found[0]


@hsettings(max_examples=200, deadline=None)
@given(st.sampled_from(PATHS), st.sampled_from(OS_PREFIXES),
       st.from_regex(r"[a-z0-9_-]{1,12}(/[a-z0-9_-][a-z0-9_.-]{0,11}){0,2}", fullmatch=True))
def test_a_path_below_an_os_prefix_is_accepted_and_a_dot_dot_part_refused(name, prefix, below):
    base = prefix.rstrip("/") + "/eagle3-"  # never itself an OS prefix (/usr + local would be one)
    assert S.settings_problems({name: base + below}) == []
    assert S.settings_problems({name: prefix.rstrip("/") + "/eagle3/../" + below})
    assert S.settings_problems({name: prefix.rstrip("/") + "/./eagle3-" + below})


@hsettings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=12).filter(lambda t: not any(c.isspace() for c in t)))
def test_a_value_vllm_reads_from_its_command_line_never_starts_with_a_dash(rest):
    # vLLM's config loader turns the YAML config into argv (docs: verified-upstream, load_config_file)
    assert S.settings_problems({"eagle3_served_model_name": "-" + rest})
    assert S.settings_problems({"eagle3_server_options": {"tokenizer": "-" + rest}})


@pytest.mark.parametrize(("name", "value"), [
    ("eagle3_server_options", {"api-key": "sk-abcdefgh12345678"}),
    ("eagle3_server_options", {"hf-token": "hf_abcdefghijklmnopqrstuvwxyz"}),
    ("eagle3_bench_environment", {"cpu": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz"}}),
    ("eagle3_bench_environment", {"neuron": {"VLLM_API_KEY": "sk-abcdefgh12345678"}}),
])
def test_a_secret_given_through_another_setting_is_refused_naming_its_own_and_never_shown(name, value):
    found = " ".join(S.settings_problems({name: value}))
    secret = next(iter(next(iter(value.values())).values())) if name.endswith("environment") else next(iter(value.values()))
    assert found.startswith(name) and ("eagle3_hf_token" in found or "eagle3_serve_api_key" in found)
    assert not any(secret[i:i + 8] in found for i in range(len(secret) - 7))
