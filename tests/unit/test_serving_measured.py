"""Serve what was measured: vllm_serving compares the profile's unit and server config on the host with the sha256 the
run's manifest.json recorded (eagle3_serving_drift), refuses with the commands that recover (eagle3_serving_refusal),
and serving.json records the k and sha256 of the config that serves (eagle3_served_config; the role's record task in
tests/integration/test_serving_measured_playbook.py). Generated configs, and the manifest of a real rehearsal sweep."""
from __future__ import annotations

import copy
import hashlib
import json

import yaml
from hypothesis import assume, given, settings, strategies as st

from conftest import RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import (
    eagle3_served_config, eagle3_serving_drift, eagle3_serving_refusal)

SWEEP = json.loads((RUNS / "sweep/rehearsal-1/manifest.json").read_text())
UNIT, CONFIG = "/etc/systemd/system/vllm-eagle3.service", "/etc/eagle3/eagle3.yaml"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def manifest_of(files: dict[str, str]) -> dict:
    """A manifest.json as roles/vllm_bench/tasks/manifest.yml writes it: the files and their sha256."""
    return {"files": dict(files), "sha256": {path: sha(text) for path, text in files.items()}}


def rendered(config: dict) -> str:
    """A server config as vllm_service's serve.yaml.j2 writes it (to_nice_yaml, keys in order)."""
    return "#\n# Ansible managed\n#\n" + yaml.safe_dump(config, indent=2, sort_keys=False)


KEYS = st.text("abcdefghijklmnopqrstuvwxyz-_", min_size=1, max_size=12)
LEAVES = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text("abcdefghij /:.-0123456789", max_size=20)
CONFIGS = st.dictionaries(KEYS, LEAVES | st.dictionaries(KEYS, LEAVES, min_size=1, max_size=4), min_size=1, max_size=8)
UNITS = st.lists(st.text("ABCDEFGHIJ=/-. abc0123", min_size=1, max_size=30), min_size=1, max_size=12).map("\n".join)


def leaf_keys(config: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in config.items():
        dotted = f"{prefix}.{key}" if prefix else key
        out += leaf_keys(value, dotted) if isinstance(value, dict) else [dotted]
    return out


@settings(max_examples=60, deadline=None)
@given(config=CONFIGS, unit=UNITS)
def test_files_as_measured_serve(config, unit):
    files = {UNIT: unit, CONFIG: rendered(config)}
    drift = eagle3_serving_drift(manifest_of(files), dict(files), [UNIT, CONFIG], "run-1")
    assert drift == []
    assert eagle3_serving_refusal(drift, "h1", "eagle3", "run-1", manifest_of(files)) == ""


@settings(max_examples=120, deadline=None)
@given(config=CONFIGS, unit=UNITS, data=st.data())
def test_any_change_of_any_key_is_refused_naming_that_key(config, unit, data):
    key = data.draw(st.sampled_from(leaf_keys(config)), label="key")
    *parents, last = key.split(".")
    changed = copy.deepcopy(config)
    holder = changed
    for part in parents:
        holder = holder[part]
    how = data.draw(st.sampled_from(["value", "removed"]), label="how")
    if how == "value":
        holder[last] = data.draw(LEAVES, label="new value")
        assume(json.dumps(holder[last]) != json.dumps(config_at(config, key)))
    else:
        del holder[last]
    measured = manifest_of({UNIT: unit, CONFIG: rendered(config)})
    drift = eagle3_serving_drift(measured, {UNIT: unit, CONFIG: rendered(changed)}, [UNIT, CONFIG], "run-1")
    assert len(drift) == 1 and drift[0].startswith(f"{CONFIG} differs from what run run-1 measured ("), drift
    assert f"{key}: " in drift[0]
    refusal = eagle3_serving_refusal(drift, "h1", "eagle3", "run-1", measured, ["inventories/aws"])
    assert refusal.startswith("h1: refusing to serve eagle3 for run run-1:") and f"{key}: " in refusal
    assert "vllm-serve.service on h1 was left as it was" in refusal


def config_at(config: dict, key: str):
    for part in key.split("."):
        config = config[part]
    return config


@settings(max_examples=40, deadline=None)
@given(config=CONFIGS, unit=UNITS, missing=st.sampled_from([UNIT, CONFIG]))
def test_a_file_the_manifest_did_not_record_is_refused_saying_so(config, unit, missing):
    files = {UNIT: unit, CONFIG: rendered(config)}
    measured = manifest_of(files)
    del measured["sha256"][missing]
    drift = eagle3_serving_drift(measured, dict(files), [UNIT, CONFIG], "run-1")
    assert drift == [f"{missing}: run run-1 did not record it (its manifest.json has no sha256 for it)"]
    assert "did not record it" in eagle3_serving_refusal(drift, "h1", "eagle3", "run-1", measured)


@settings(max_examples=40, deadline=None)
@given(unit=UNITS, extra=st.text("ABCDEFGHIJ=/-. abc0123", min_size=1, max_size=30))
def test_a_changed_unit_is_refused_with_its_lines(unit, extra):
    assume(extra not in unit.splitlines())
    measured = manifest_of({UNIT: unit, CONFIG: "a: 1\n"})
    drift = eagle3_serving_drift(measured, {UNIT: unit + "\n" + extra, CONFIG: "a: 1\n"}, [UNIT, CONFIG], "run-1")
    assert drift == [f"{UNIT} differs from what run run-1 measured (on the host only: {json.dumps(extra)})"]


def test_no_manifest_a_missing_file_and_no_run_are_refused():
    assert eagle3_serving_drift(None, {}, [UNIT, CONFIG], "run-1") == [
        "run run-1 recorded no manifest.json for this host: it did not benchmark here"]
    measured = manifest_of({UNIT: "u\n", CONFIG: "a: 1\n"})
    assert eagle3_serving_drift(measured, {CONFIG: "a: 1\n"}, [UNIT, CONFIG], "run-1") == [f"{UNIT}: not on the host"]
    assert "vllm_serving_measured_run is empty" in eagle3_serving_drift(measured, {}, [UNIT, CONFIG], "")[0]
    # Without the manifest's settings, the only way back is a new run.
    refusal = eagle3_serving_refusal(eagle3_serving_drift(None, {}, [CONFIG], "run-1"), "h1", "eagle3", "run-1")
    assert "eagle3.trn2.service" not in refusal and "-i INVENTORY eagle3.trn2.site -e eagle3_run_id=NEW" in refusal


# F6 on a real manifest (a rehearsal sweep, k 2, 3, 4): the host's eagle3-k3 config was rolled to k=2.
def test_a_rolled_k_is_refused_with_both_values_and_the_command_that_renders_the_run_again():
    paths = ["/etc/systemd/system/vllm-eagle3-k3.service", "/etc/eagle3/eagle3-k3.yaml"]
    now = {path: SWEEP["files"][path] for path in paths}
    assert eagle3_serving_drift(SWEEP, now, paths, "sweep-1") == []
    now[paths[1]] = now[paths[1]].replace("num_speculative_tokens: 3", "num_speculative_tokens: 2")
    drift = eagle3_serving_drift(SWEEP, now, paths, "sweep-1")
    assert drift == ["/etc/eagle3/eagle3-k3.yaml differs from what run sweep-1 measured "
                     "(speculative-config.num_speculative_tokens: 2 on the host, 3 measured)"]
    refusal = eagle3_serving_refusal(drift, "rehearsal-1", "eagle3-k3", "sweep-1", SWEEP, ["inventories/rehearsal"])
    assert ("ansible-playbook -i inventories/rehearsal eagle3.trn2.service -e '{\"eagle3_num_speculative_tokens\": "
            "[2, 3, 4], \"eagle3_draft_model\": \"/var/lib/eagle3/models/draft\", \"eagle3_speculative_method\": "
            "\"eagle3\"}'") in refusal
    assert "then serve run sweep-1 again" in refusal and "-e vllm_serving_unmeasured=true" in refusal


def test_the_served_config_gives_its_k_and_the_manifests_sha256():
    # The manifest's sha256 were made by Ansible's hash('sha256') on the host's text: the same digest here.
    for name, k in (("baseline", None), ("eagle3-k2", 2), ("eagle3-k3", 3), ("eagle3-k4", 4)):
        path = f"/etc/eagle3/{name}.yaml"
        assert eagle3_served_config(SWEEP["files"][path]) == {"method": k and "eagle3", "k": k,
                                                               "config_sha256": SWEEP["sha256"][path]}
    assert eagle3_served_config(None) == {"method": None, "k": None, "config_sha256": None}
    as_json = 'speculative-config: \'{"method": "eagle3", "num_speculative_tokens": 5}\'\n'
    assert eagle3_served_config(as_json)["k"] == 5
