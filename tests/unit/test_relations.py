"""The relations between one inventory's hosts (plugins/module_utils/settings/settings.py port_problems), proven on
generated inventories: 1-8 hosts, each on the machine's shared network (podman, loopback) or its own, with ports
drawn from a small pool so that collisions are common."""
from __future__ import annotations

import itertools
import json
import shutil

import pytest
import yaml
from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as B
from ansible_collections.eagle3.trn2.plugins.module_utils.results import result_checks as R
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S

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


# ---- Sinks (a value valid in YAML can still break the file, command line or unit it lands in): each value against the
# grammar of the place it lands

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


# ---- Structured settings that must agree with themselves: acceptance bands, the rate window


BAND = st.integers(min_value=1, max_value=8).flatmap(lambda k: st.fixed_dictionaries({
    "key": st.fixed_dictionaries({"target": st.just("t"), "draft": st.just("d"), "dataset": st.just("sonnet-512-128"),
                                  "k": st.just(k)}),
    "per_position": st.lists(st.floats(min_value=0, max_value=1), min_size=k, max_size=k),
}).map(lambda b: {**b, "acceptance_length": round(1 + sum(b["per_position"]), 4),
                  "acceptance_rate": round(100 * sum(b["per_position"]) / len(b["per_position"]), 2)}))


@hsettings(max_examples=200, deadline=None)
@given(BAND, st.sampled_from(["k", "length", "rate", "twice"]))
def test_a_band_that_contradicts_itself_is_refused_and_one_that_agrees_passes(band, mutation):
    assert B.band_problems([band], "bands") == []
    k = band["key"]["k"]
    broken = {"k": [{**band, "key": {**band["key"], "k": k % 8 + 1}}],
              "length": [{**band, "acceptance_length": band["acceptance_length"] + 0.05 + 0.002 * k}],
              "rate": [{**band, "acceptance_rate": band["acceptance_rate"] + 1}],
              "twice": [band, band]}[mutation]
    found = B.band_problems(broken, "bands")
    assert len(found) == 1 and {"k": "rates but its key's k", "length": "is not 1 + the sum", "rate": "is not the mean",
                                "twice": "one band per key"}[mutation] in found[0]


def test_the_projects_bands_agree_with_themselves():
    import yaml
    assert B.band_problems(yaml.safe_load((ROOT / "roles/bench_report/files/bands.yml").read_text()), "bands.yml") == []


@hsettings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=600), st.integers(min_value=1, max_value=3600))
def test_a_rate_window_of_fewer_than_two_scrape_intervals_is_refused_and_fewer_than_four_warned(interval, window):
    found = S.meaning_problems({"eagle3_monitor_scrape_interval": f"{interval}s", "eagle3_monitor_rate_window": f"{window}s"}, 1)
    assert bool(found) == (window < 2 * interval)
    warned = S.meaning_warnings({"eagle3_monitor_scrape_interval": f"{interval}s", "eagle3_monitor_rate_window": f"{window}s"})
    assert bool(warned) == (2 * interval <= window < 4 * interval), warned


# ---- One workload per run: every host of it, and every rerun of its run id

WORKLOAD = st.fixed_dictionaries({"dataset": st.sampled_from(["auto", "sonnet"]), "input_len": st.sampled_from([256, 512]),
                                  "num_prompts": st.sampled_from([20, 50]), "temperature": st.sampled_from([None, 0.0]),
                                  "profiles": st.sampled_from([["baseline", "eagle3"], ["baseline", "eagle3-k2", "eagle3-k3"]])})


@hsettings(max_examples=300, deadline=None)
@given(st.lists(WORKLOAD, min_size=1, max_size=8), st.one_of(st.none(), WORKLOAD))
def test_a_host_or_a_rerun_measuring_another_workload_is_refused_naming_the_setting(workloads, recorded):
    hosts = {f"h{i}": {"workload": w} for i, w in enumerate(workloads)}
    found = S.workload_problems(hosts, recorded, "r1")
    base = recorded if recorded else workloads[0]
    differing = [f"h{i}" for i, w in enumerate(workloads) if w != base]
    assert len(found) == len(differing)
    for host, problem in zip(differing, found):
        assert host in problem
        changed = [key for key in base if base[key] != hosts[host]["workload"][key]]
        assert all(S.WORKLOAD[key] in problem for key in changed)
        assert ("run r1 was benchmarked" in problem) == bool(recorded)


def test_the_run_json_vllm_bench_writes_holds_the_keys_the_preflight_compares():
    # the two sides of the rerun check name the same workload keys (roles/vllm_bench/vars/main.yml, relations.yml)
    import yaml
    written = yaml.safe_load((ROOT / "roles/vllm_bench/vars/main.yml").read_text())["__vllm_bench_workload"]
    kept = yaml.safe_load((ROOT / "playbooks/tasks/relations.yml").read_text())[0]["ansible.builtin.set_fact"]
    assert set(written) == set(S.WORKLOAD) and all(f"'{key}'" in kept["__eagle3_host_record"]["workload"] for key in S.WORKLOAD)


# ---- One namespace: every name an operator can set, misspelt or in another case

NAMES = sorted(n for n in S.project_names() if n.startswith(("eagle3_",) + S.role_prefixes()))


@hsettings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_a_project_name_misspelt_or_in_capitals_is_refused_with_the_name_meant(name, data):
    assert S.unknown_names([name]) == []
    capitals = S.unknown_names([name.upper()])
    assert len(capitals) == 1 and f"did you mean {name}?" in capitals[0]
    prefix = next(p for p in ("eagle3_", *S.role_prefixes()) if name.startswith(p))
    at = data.draw(st.integers(min_value=len(prefix), max_value=len(name) - 1))
    typo = name[:at] + name[at + 1:]  # one character dropped after the prefix
    if typo not in S.project_names():
        found = S.unknown_names([typo])
        assert len(found) == 1 and found[0].startswith(typo + " is not")
        meant = found[0].split("did you mean ")[1].split("?")[0] if "did you mean" in found[0] else None
        assert meant is None or levenshtein(typo, meant) <= 2


def levenshtein(a: str, b: str) -> int:
    """The full-table Levenshtein distance, the oracle of the bounded one the settings module computes."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


@hsettings(max_examples=300, deadline=None)
@given(st.text("ab_3", max_size=10), st.text("ab_3", max_size=10), st.integers(min_value=0, max_value=3))
def test_the_bounded_distance_is_the_distance_up_to_its_bound(a, b, bound):
    full = levenshtein(a, b)
    assert S._edits_within(a, b, bound) == (full if full <= bound else bound + 1)


def test_a_name_of_your_own_is_left_alone_or_allowed():
    assert S.unknown_names(["monitoring_team_dashboard", "my_eagle3_port", "ansible_port"]) == []
    assert S.unknown_names(["eagle3_team"]) and S.unknown_names(["eagle3_team"], ["eagle3_team"]) == []


# ---- The identity of every round (rounds pooled must measure one workload): rounds5 passes, each mutation class is
# refused by name




def _mutate(path, **change):
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))


MUTATIONS = {
    # the engine upgraded between rounds
    "engine": (lambda d: _mutate(d / "eagle3.round3.json", vllm_version="0.30.0+cpu"), "eagle3.round3.json",
               "the engine changed within the run"),
    # a baseline round measured on a speculative server
    "baseline-spec": (lambda d: _mutate(d / "baseline.round2.json", **{
        k: v for k, v in json.loads((d / "eagle3.round2.json").read_text()).items() if k.startswith("spec_decode_")}),
                      "baseline.round2.json", "its server speculated, so it is no baseline"),
    # a round measured with another k: the manifest records 3
    "k": (lambda d: (d / "manifest.json").write_text((d / "manifest.json").read_text().replace(
        '"num_speculative_tokens": 3', '"num_speculative_tokens": 4')), "eagle3.json", "the profile's k is 4"),
    # a round that is a copy of another (its round number rewritten)
    "copy": (lambda d: (d / "baseline.round3.json").write_text((d / "baseline.round2.json").read_text().replace(
        '"round": "2"', '"round": "3"')), "baseline.round3.json", "a copy, not a measurement"),
    # a round dated before the previous one of its profile
    "date": (lambda d: _mutate(d / "eagle3.round5.json", date="20200101-000000"), "eagle3.round5.json",
             "not measured in this run's order"),
    # a round in order, but measured an hour after its own benchmark window (timeline.json): another pass's file
    "window": (lambda d: _mutate(d / "baseline.round5.json", date="20261204-213949"), "baseline.round5.json",
               "outside its own benchmark window 2026-12-04 20:39:13 to 2026-12-04 20:39:50 UTC"),
}


def _bad(run_dir) -> dict[str, str]:
    checked = R.check_run(read_run(str(run_dir)))
    return {b["file"].split("/", 1)[1]: b["reason"] for e in checked["hosts"].values() for b in e.get("bad_files", [])}


def test_every_round_of_the_kept_runs_passes():
    assert {run.name: _bad(run) for run in sorted(RUNS.iterdir()) if run.is_dir() and _bad(run)} == {}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_round_identity_mutation_is_refused_by_name(tmp_path, mutation):
    change, file, why = MUTATIONS[mutation]
    run = tmp_path / "rounds5"
    shutil.copytree(RUNS / "rounds5", run)
    change(run / "rehearsal-1")
    bad = _bad(run)
    assert file in bad and why in bad[file], bad


# ---- A reference file is read as the report reads it

REFERENCES = sorted((ROOT / "roles/bench_report/files/references").glob("*.json"))


@pytest.mark.parametrize("path", REFERENCES, ids=lambda p: p.name)
def test_the_projects_references_are_references(path):
    assert R.reference_problems(path.read_text(), path.name) == []


@pytest.mark.parametrize(("change", "why"), [
    (lambda d: "the host's name\n", "not JSON"),
    (lambda d: json.dumps({**d, "profiles": {"eagle3": d["profiles"]["eagle3"]}}), "baseline"),
    (lambda d: json.dumps({**d, "profiles": {**d["profiles"], "baseline": {"output_throughput": 0, "median_tpot_ms": 1}}}),
     "profiles.baseline.output_throughput"),
    (lambda d: json.dumps({k: v for k, v in d.items() if k != "source"}), "source"),
    (lambda d: json.dumps(d).replace("184.44", "NaN"), "not JSON"),
])
def test_a_file_that_is_not_a_reference_is_refused_naming_what(change, why):
    data = json.loads(REFERENCES[-1].read_text())
    found = " ".join(R.reference_problems(change(data), "eagle3_reference /tmp/ref.json"))
    assert found.startswith("eagle3_reference /tmp/ref.json") and why in found, found


@hsettings(max_examples=200, deadline=None)
@given(st.sampled_from(["hf_", "AKIA", "sk-"]), st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=20, max_size=30),
       st.sampled_from(["eagle3_target_model", "eagle3_served_model_name", "eagle3_port", "eagle3_run_id"]))
def test_a_key_shaped_value_in_any_setting_is_never_shown(prefix, body, name):
    # a token pasted into the wrong setting is refused there without showing it
    value = f"{prefix}{body} x"
    found = " ".join(S.settings_problems({name: value}))
    assert found.startswith(name) and not any(value[i:i + 8] in found for i in range(len(value) - 8))


def test_a_40_character_secret_key_is_masked_and_a_path_of_40_is_not():
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings.schema import shown
    assert shown("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == '"***"'  # AWS's documented example secret key
    path = "/var/lib/eagle3/results/run/abcdefghijkl"
    assert len(path) == 40 and shown(path) == f'"{path}"'


def test_the_settings_lookup_shows_a_short_rate_window_as_a_warning(monkeypatch):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.utils.display import Display
    from ansible_collections.eagle3.trn2.plugins.lookup.settings_problems import LookupModule
    shown = []
    monkeypatch.setattr(Display, "warning", lambda self, msg, *a, **k: shown.append(msg))
    loader = DataLoader()
    lookup = LookupModule(loader=loader, templar=Templar(loader=loader))
    refused = lookup.run([], {"eagle3_monitor_scrape_interval": "15s", "eagle3_monitor_rate_window": "45s"})
    assert refused == [] and len(shown) == 1 and "fewer than four scrape intervals" in shown[0], (refused, shown)


# ---- Every play that reads the settings checks them (the phase playbooks run alone: tests/integration/test_relations_playbook.py)

def _plays():
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            if not any(key.endswith("import_playbook") for key in play):
                yield path.name, play


@pytest.mark.parametrize(("name", "play"), list(_plays()), ids=lambda v: v if isinstance(v, str) else v.get("name", "")[:40])
def test_every_play_reads_the_settings_through_the_role_that_checks_them(name, play):
    roles = [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
    assert roles[:1] == ["eagle3.trn2.settings"], (name, play.get("name"))
    # pre_tasks run before the play's roles: until the phase shortcut (which checks first), only checks that do not connect
    for task in play.get("pre_tasks", []):
        action = next(k for k in task if k.startswith("ansible.builtin."))
        if task[action] == "tasks/phase_skip.yml":
            break
        assert action == "ansible.builtin.assert", (name, task.get("name"))
    first = yaml.safe_load((ROOT / "playbooks/tasks/phase_skip.yml").read_text())[0]
    assert first.get("ansible.builtin.import_role") == {"name": "eagle3.trn2.settings"}


RELEASES = yaml.safe_load((ROOT / "roles/settings/defaults/main/neuron_releases.yml").read_text())["eagle3_neuron_releases"]


def _neuron(version: str, releases: dict, allow: bool = False) -> list[str]:
    values = {"eagle3_accelerator": "neuron", "eagle3_neuron_sdk_version": version, "eagle3_neuron_releases": releases,
              "eagle3_neuron_allow_superseded": allow}
    return [p for p in S.meaning_problems(values, 1) if "eagle3_neuron_sdk_version" in p]


def test_the_superseded_233_row_is_refused_naming_the_patch_and_its_fix_and_allowed_by_the_setting():
    (refusal,) = _neuron("2.33.0", RELEASES)
    assert refusal.startswith("eagle3_neuron_sdk_version 2.33.0 is superseded by the patch release 2.33.1 of 2026-11-11, "
                              "which fixes: Neuron Runtime: Corrects the internal execution order"), refusal
    assert "can hang the TPB AXI fabric." in refusal and 'eagle3_neuron_sdk_version: "2.33.1"' in refusal
    assert refusal.endswith("or set eagle3_neuron_allow_superseded: true to install 2.33.0 anyway.")
    assert _neuron("2.33.0", RELEASES, allow=True) == []
    assert _neuron("2.33.1", RELEASES) == [] and _neuron("2.32.0", RELEASES) == []
    # the CPU rehearsal installs no Neuron release: the rule is the neuron accelerator's
    assert not [p for p in S.meaning_problems({"eagle3_accelerator": "cpu", "eagle3_neuron_sdk_version": "2.33.0",
                                               "eagle3_neuron_releases": RELEASES}, 1) if "superseded" in p]


@hsettings(max_examples=60, deadline=None)
@given(table=st.dictionaries(st.tuples(st.integers(30, 36), st.integers(0, 4)), st.booleans(), min_size=1, max_size=8),
       data=st.data())
def test_a_release_is_refused_exactly_when_a_newer_patch_of_its_minor_has_a_row(table, data):
    """Any table of rows 2.M.P: the selected row is refused iff a row 2.M.Q with Q > P exists, naming the newest such
    Q (its fixes, when the row has them); rows of other minors never count."""
    releases = {f"2.{m}.{p}": ({"patch": {"fixes": [f"fix of 2.{m}.{p}"], "released": "2026-11-11"}} if fixed else {})
                for (m, p), fixed in table.items()}
    minor, patch = data.draw(st.sampled_from(sorted(table)))
    newer = [p for (m, p) in table if m == minor and p > patch]
    found = _neuron(f"2.{minor}.{patch}", releases)
    if not newer:
        assert found == []
        return
    newest = f"2.{minor}.{max(newer)}"
    assert len(found) == 1 and f"superseded by the patch release {newest}" in found[0], found
    assert (f"fix of {newest}." in found[0]) == bool(table[(minor, max(newer))]), found
    assert _neuron(f"2.{minor}.{patch}", releases, allow=True) == []
