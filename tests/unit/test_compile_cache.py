"""Compile once per fleet, so each start of a fleet does not pay the compile: the cache key
(plugins/module_utils/compile_cache/key.py), where a host's cache comes from (plan.py), the host's pack and unpack (roles/compile_cache/files/probes/compile_cache.py, run as
the role runs it: python -c), the controller's manifest and wait (roles/compile_cache/files/compile_cache_ctl.py). The
role's entry points on two local hosts side by side: tests/integration/test_compile_cache_playbook.py. What vLLM does with a
shipped cache (the hit in its log, the start time) is measured on rehearsal hosts by scripts/perf.sh --compile-cache
(docs/performance.md)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import ROOT
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.manifest import set_state
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.plan import deadline, decide, looks_in_s3, said, settled
from ansible_collections.eagle3.trn2.plugins.module_utils.compile_cache.key import (
    eagle3_compile_cache_diff, eagle3_compile_cache_failure, eagle3_compile_cache_key, eagle3_compile_cache_material,
    eagle3_compile_cache_parts, eagle3_vllm_cache_root)

PROBE = ROOT / "roles/compile_cache/files/probes/compile_cache.py"
CTL = ROOT / "roles/compile_cache/files/compile_cache_ctl.py"
# The provenance probe's shape (roles/vllm_bench/files/probes/versions.py): pip and deb name -> version, as deployed
# by Neuron 2.32 (/work/shared/reference/neuron-facts.md: vllm-neuron 0.24.0.1.1.0 on vLLM 0.24.0, neuronx-cc
# 2.27.5334.0, no torch-neuronx in 2.32; the deb's full version as AWS's DLC build pins it, verified-upstream.md:
# NEURONX_RUNTIME_LIB_VERSION=2.34.10.0-ac18d186d). The upgrade below is 2.33's neuronx-cc 2.28.7631.0.
DEPLOYED = {"python": "3.11.2", "pip": {"vllm": "0.24.0", "vllm-neuron": "0.24.0.1.1.0", "neuronx-cc": "2.27.5334.0"},
            "deb": {"aws-neuronx-runtime-lib": "2.34.10.0-ac18d186d"}}
CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "tensor-parallel-size": 8, "max-num-seqs": 2,
          "max-model-len": 2048, "no-enable-prefix-caching": True,
          "speculative-config": {"method": "eagle3", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                                 "num_speculative_tokens": 3}}
ENV = ("# Ansible managed\nVLLM_CACHE_ROOT=/mnt/eagle3-cache/vllm\nTORCHINDUCTOR_CACHE_DIR=/mnt/eagle3-cache/vllm/torchinductor\n"
       "NEURON_CC_FLAGS=--optlevel 2\nHOME=/var/lib/eagle3\n")


def material(**change):
    args = dict(deployed=DEPLOYED, config=CONFIG, env_text=ENV, accelerator="neuron", profile="eagle3-k3",
                models={CONFIG["model"]: "revision:0e9e39f2"})
    args.update(change)
    return eagle3_compile_cache_material(**args)


def test_the_key_is_stable_and_changes_with_everything_a_compile_depends_on():
    key = eagle3_compile_cache_key(material())
    assert key == eagle3_compile_cache_key(material()) and len(key) == 16
    changed = {
        "a compiler upgrade": material(deployed=dict(DEPLOYED, pip=dict(DEPLOYED["pip"], **{"neuronx-cc": "2.28.7631.0"}))),
        "a runtime deb": material(deployed=dict(DEPLOYED, deb={"aws-neuronx-runtime-lib": "2.35.30.0"})),
        "num_speculative_tokens": material(config=dict(CONFIG, **{"speculative-config": dict(
            CONFIG["speculative-config"], num_speculative_tokens=4)})),
        "TP": material(config=dict(CONFIG, **{"tensor-parallel-size": 32})),
        "compiler flags": material(env_text=ENV.replace("--optlevel 2", "--optlevel 1")),
        "the platform target": material(env_text=ENV + "NEURON_PLATFORM_TARGET_OVERRIDE=trn1\n"),
        "the profile": material(profile="eagle3-k4"),
        "the accelerator": material(accelerator="cpu"),
        "the venv's Python": material(deployed=dict(DEPLOYED, python="3.12.3")),
        "the model's revision": material(models={CONFIG["model"]: "revision:ffff"}),
    }
    keys = {what: eagle3_compile_cache_key(m) for what, m in changed.items()}
    assert key not in keys.values(), [w for w, k in keys.items() if k == key]
    assert len(set(keys.values())) == len(keys)
    # Comments and blank lines of the environment file are not part of it, nor where the host stores the cache.
    assert eagle3_compile_cache_key(material(env_text="# other header\n\n" + ENV.split("\n", 1)[1])) == key
    assert eagle3_compile_cache_key(material(env_text=ENV.replace("/mnt/eagle3-cache/vllm", "/var/lib/eagle3/cache"))) == key
    # Nor where the server listens: the rehearsal's hosts share one loopback, each on its own port.
    assert eagle3_compile_cache_key(material(config=dict(CONFIG, host="127.0.0.1", port=8342))) == \
        eagle3_compile_cache_key(material(config=dict(CONFIG, host="0.0.0.0", port=8000)))


def test_the_diff_names_what_differs():
    mine = material(env_text=ENV.replace("--optlevel 2", "--optlevel 1"))
    diff = eagle3_compile_cache_diff(mine, material())
    assert diff == ['env.NEURON_CC_FLAGS: "--optlevel 1" vs "--optlevel 2"']
    assert eagle3_compile_cache_diff(material(), material()) == []
    upgraded = material(deployed=dict(DEPLOYED, pip={**DEPLOYED["pip"], "neuronx-cc": "2.28.7631.0", "new": "1"}))
    assert eagle3_compile_cache_diff(upgraded, material()) == ['pip.neuronx-cc: "2.28.7631.0" vs "2.27.5334.0"', 'pip.new: "1" vs -']


def test_the_parts_name_every_leaf_of_the_key_and_only_a_cache_hit_only_failure_carries_them():
    parts = eagle3_compile_cache_parts(material())
    assert 'pip.neuronx-cc: "2.27.5334.0"' in parts and 'deb.aws-neuronx-runtime-lib: "2.34.10.0-ac18d186d"' in parts
    assert 'config.tensor-parallel-size: 8' in parts and 'env.NEURON_CC_FLAGS: "--optlevel 2"' in parts
    assert 'profile: "eagle3-k3"' in parts and 'accelerator: "neuron"' in parts
    # Every part of the material is named.
    assert {part.split(":")[0].split(".")[0] for part in parts} == set(material())
    assert eagle3_compile_cache_failure("unit failed", {"hit_only": False, "parts": parts}) == "unit failed"
    assert eagle3_compile_cache_failure("unit failed", {}) == "unit failed"
    local = eagle3_compile_cache_failure("unit failed", {"hit_only": True, "key": "k", "state": "local", "parts": parts})
    assert "compile cache of key k (local) is fatal" in local and "; ".join(parts) in local
    with pytest.raises(ValueError, match="expected a material"):
        eagle3_compile_cache_parts(None)


def test_the_cache_root_is_where_vllm_looks():
    # vllm/envs.py: VLLM_CACHE_ROOT, else $XDG_CACHE_HOME/vllm, else ~/.cache/vllm (HOME from the unit's file).
    assert eagle3_vllm_cache_root(ENV) == "/mnt/eagle3-cache/vllm"
    assert eagle3_vllm_cache_root("HOME=/var/lib/eagle3\n") == "/var/lib/eagle3/.cache/vllm"
    assert eagle3_vllm_cache_root("HOME=/h\nXDG_CACHE_HOME=/x/\n") == "/x/vllm"
    with pytest.raises(ValueError, match="sets none of VLLM_CACHE_ROOT"):
        eagle3_vllm_cache_root("# nothing\n")


@pytest.mark.parametrize("bad", [{}, {"pip": {}}, None, "text"])
def test_material_refuses_a_deployed_without_packages(bad):
    with pytest.raises(ValueError, match="deployed must be the provenance probe's output"):
        material(deployed=bad)


def probe(*args: str) -> dict:
    """As the role runs it: the file's code given to python -c."""
    out = subprocess.run([sys.executable, "-c", PROBE.read_text(), *args], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out)


def cache(root: Path) -> Path:
    (root / "torch_compile_cache/abc/rank_0_0/backbone").mkdir(parents=True)
    (root / "torch_compile_cache/abc/rank_0_0/backbone/graph.py").write_text("compiled\n")
    (root / "modelinfos").mkdir()
    (root / "modelinfos/llama.json").write_text("{}\n")
    return root


def test_pack_then_unpack_applies_the_cache_with_its_key(tmp_path):
    src = cache(tmp_path / "canary")
    packed = probe("pack", str(src), str(tmp_path / "c.tar.gz"), "k1", json.dumps({"canary": "h1"}))
    assert packed["files"] == 2 and packed["bytes"] == len("compiled\n") + 3 and packed["archive_bytes"] > 0
    assert json.loads((src / ".eagle3-compile-cache/k1.json").read_text())["source"] == "compiled"
    dest = tmp_path / "peer"
    dest.mkdir()
    used = probe("unpack", str(dest), str(tmp_path / "c.tar.gz"), "k1")
    assert used == {"used": True, "reason": "", "files": 2, "bytes": packed["bytes"], "canary": "h1"}
    assert (dest / "torch_compile_cache/abc/rank_0_0/backbone/graph.py").read_text() == "compiled\n"
    assert json.loads((dest / ".eagle3-compile-cache/k1.json").read_text())["source"] == "shipped"
    # The canary's own markers are not shipped.
    with tarfile.open(tmp_path / "c.tar.gz") as tar:
        assert not [n for n in tar.getnames() if ".eagle3-compile-cache" in n]
        assert tar.getnames()[0] == "eagle3-compile-cache.json"


def test_unpack_refuses_another_key_and_extracts_nothing(tmp_path):
    probe("pack", str(cache(tmp_path / "canary")), str(tmp_path / "c.tar.gz"), "k1", json.dumps({"canary": "h1"}))
    dest = tmp_path / "peer"
    dest.mkdir()
    refused = probe("unpack", str(dest), str(tmp_path / "c.tar.gz"), "k2")
    assert refused["used"] is False and refused["reason"] == "the archive's key k1 is not this host's key k2"
    assert list(dest.iterdir()) == []


def test_unpack_refuses_members_outside_the_cache_and_foreign_archives(tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        for name, data in (("eagle3-compile-cache.json", json.dumps({"key": "k1"}).encode()), ("../escape", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    dest = tmp_path / "peer"
    dest.mkdir()
    refused = probe("unpack", str(dest), str(evil), "k1")
    assert refused["used"] is False and "../escape" in refused["reason"]
    assert not (tmp_path / "escape").exists()
    plain = tmp_path / "plain.tar.gz"
    with tarfile.open(plain, "w:gz") as tar:
        tar.add(str(evil), arcname="x")
    assert "not packed by this project" in probe("unpack", str(dest), str(plain), "k1")["reason"]
    assert "not a readable cache archive" in probe("unpack", str(dest), str(tmp_path / "missing"), "k1")["reason"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root (the role runs the probe as root)")
def test_unpack_into_a_cache_root_not_made_yet_leaves_it_to_the_service_user(tmp_path):
    """A fresh host: VLLM_CACHE_ROOT ($HOME/.cache/vllm) does not exist before its first start. The probe runs as
    root; what it creates and unpacks must be the service user's (here uid/gid 65534 own the home), or the server
    cannot write inductor's lock files next to the shipped graphs (seen on the rehearsal: PermissionError)."""
    src = cache(tmp_path / "canary")
    probe("pack", str(src), str(tmp_path / "c.tar.gz"), "k1", json.dumps({"canary": "h1"}))
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    root = home / ".cache" / "vllm"
    assert probe("unpack", str(root), str(tmp_path / "c.tar.gz"), "k1")["used"] is True
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in [home / ".cache", root, *root.rglob("*")]}
    assert owners == {(65534, 65534)}, owners


def test_unpack_refuses_an_archive_still_being_written_and_extracts_nothing(tmp_path):
    """Hosts do not wait for the canary: one may find the archive while the controller still writes it."""
    src = cache(tmp_path / "canary")
    (src / "torch_compile_cache/abc/rank_0_0/backbone/weights.bin").write_bytes(os.urandom(256 * 1024))
    probe("pack", str(src), str(tmp_path / "c.tar.gz"), "k1", json.dumps({"canary": "h1"}))
    whole = (tmp_path / "c.tar.gz").read_bytes()
    (tmp_path / "part.tar.gz").write_bytes(whole[: len(whole) // 2])
    dest = tmp_path / "peer"
    dest.mkdir()
    got = probe("unpack", str(dest), str(tmp_path / "part.tar.gz"), "k1")
    assert got["used"] is False and got["reason"].startswith("not a complete cache archive"), got
    assert list(dest.iterdir()) == []


def test_pack_of_an_empty_cache_ships_nothing(tmp_path):
    assert probe("pack", str(tmp_path / "none"), str(tmp_path / "c.tar.gz"), "k1", "{}") == \
        {"files": 0, "bytes": 0, "archive_bytes": 0}
    assert not (tmp_path / "c.tar.gz").exists()


def test_look_reads_the_safetensors_header_the_hub_revision_and_the_keys_held(tmp_path):
    model = tmp_path / "target"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 64}')
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    root = tmp_path / "cache"

    def look(*models: str) -> dict:
        return probe("look", str(tmp_path / "hf"), str(root), *models)

    first = look(str(model))["identity"][str(model)]
    # New weights of the same shapes: the same identity (a compiled graph does not hold them) ...
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\1" * 16)
    assert look(str(model))["identity"][str(model)] == first
    # ... another shape: another one.
    header2 = header.replace(b"[2, 2]", b"[2, 4]")
    (model / "model.safetensors").write_bytes(len(header2).to_bytes(8, "little") + header2 + b"\0" * 32)
    assert look(str(model))["identity"][str(model)] not in (first, "")
    ref = tmp_path / "hf/hub/models--org--name/refs"
    ref.mkdir(parents=True)
    (ref / "main").write_text("0e9e39f2\n")
    assert look("org/name", "org/absent") == {"identity": {"org/name": "revision:0e9e39f2", "org/absent": ""}, "marks": []}
    # The keys the root holds are the ones pack marked (unpack marks the same way), listed in the same call.
    (root / "torch_compile_cache").mkdir(parents=True)
    (root / "torch_compile_cache" / "graph.py").write_text("compiled\n")
    probe("pack", str(root), str(tmp_path / "c.tar.gz"), "k1", "{}")
    assert look()["marks"] == ["k1"]


def ctl(*args: str) -> dict:
    env = dict(os.environ, EAGLE3_MODULE_UTILS=str(ROOT / "plugins/module_utils"))  # as settle.yml sets it
    return json.loads(subprocess.run([sys.executable, str(CTL), *map(str, args)], capture_output=True, text=True,
                                     check=True, timeout=60, env=env).stdout)


def test_wait_ends_on_shipped_failed_gone_or_the_deadline(tmp_path):
    manifest, failure = tmp_path / "baseline.json", tmp_path / "canary/failure.json"
    later = time.time() + 60
    waiting = ctl("wait", manifest, "baseline", 0.5, later, failure)
    assert waiting["done"] is False and "the canary has not started it yet" in waiting["progress"]
    set_state(manifest, {"state": "compiling", "canary": "c1", "key": "k1"})  # the canary's announcement (the action's)
    waiting = ctl("wait", manifest, "baseline", 0.5, later, failure)
    assert waiting["done"] is False and "the canary c1 compiles it since" in waiting["progress"]
    assert ctl("wait", manifest, "baseline", 5, time.time() - 1, failure)["state"] == "timeout"
    set_state(manifest, {"state": "shipped", "archive": "k1.tar.gz"})
    done = ctl("wait", manifest, "baseline", 5, later, failure)
    assert done["done"] and done["state"] == "shipped" and done["key"] == "k1" and done["canary"] == "c1"
    # A canary whose ansible-playbook process is gone (a killed run) ships nothing.
    dead = subprocess.run(["true"])
    record = json.loads(manifest.read_text())
    record.update(state="compiling", owner={"pid": os.getpid(), "start": "not-this-process"})
    manifest.write_text(json.dumps(record))
    del dead
    assert ctl("wait", manifest, "baseline", 5, later, failure)["state"] == "gone"
    # A failure the canary recorded after the manifest: failed.
    set_state(manifest, {"state": "compiling"})
    time.sleep(0.05)
    failure.parent.mkdir()
    failure.write_text("{}")
    assert ctl("wait", manifest, "baseline", 5, later, failure)["state"] == "failed"


# Where a host's cache comes from (plugins/module_utils/compile_cache/plan.py), as the settle step decides it.
PLAN = {"key": "k1", "material": {"pip": {"vllm": "0.24.0"}}, "here": False, "on_controller": False, "s3_sha256": "",
        "looked_in_s3": False, "s3_reason": "", "is_canary": False}


@pytest.mark.parametrize("plan,waited,state,reason", [
    ({"here": True}, {}, "local", "this host already holds it"),
    ({"on_controller": True}, {}, "ship", "on the controller"),
    ({}, {"state": "shipped", "key": "k1", "canary": "c"}, "ship", "on the controller"),
    ({"s3_sha256": "a" * 64}, {}, "ship", "in S3 from an earlier run, not on this controller"),
    ({"is_canary": True}, {}, "cold", "this host is the canary"),
    ({}, {"state": "failed", "canary": "c"}, "cold", "the canary c shipped nothing (failed)"),
    ({"looked_in_s3": True, "s3_reason": "s3://b/k: not there"}, {"state": "gone", "canary": "c"}, "cold",
     "the canary c shipped nothing (gone); s3://b/k: not there"),
])
def test_the_decision_names_where_the_cache_comes_from(plan, waited, state, reason):
    out = decide(dict(PLAN, **plan), waited, "c", 600)
    assert (out["state"], out["key"], out["reason"]) == (state, "k1", reason)


def test_a_cache_of_another_key_is_refused_naming_what_differs_and_wait_0_says_so():
    refused = decide(PLAN, {"state": "shipped", "key": "k2", "canary": "c", "material": {"pip": {"vllm": "0.25.0"}}}, "c", 600)
    assert refused["state"] == "refused" and refused["canary_key"] == "k2"
    assert refused["reason"] == 'the canary c compiled key k2, this host needs k1; differs in: pip.vllm: "0.24.0" vs "0.25.0"'
    no_wait = decide(PLAN, {"state": "timeout"}, "c", 0)
    assert no_wait["state"] == "cold" and "hosts do not wait for the canary c (compile_cache_wait 0" in no_wait["reason"]


def test_the_wait_has_no_deadline_where_nothing_is_awaited():
    assert deadline(1000.4, 600, False, False, False, "") == 1600
    for args in [(True, False, False, ""), (False, True, False, ""), (False, False, True, ""), (False, False, False, "a" * 64)]:
        assert deadline(1000, 600, *args) == 0
    assert looks_in_s3("bucket", False, False) and not looks_in_s3("", False, False) and not looks_in_s3("bucket", True, False)


def test_only_a_later_neuron_host_holding_the_cache_starts_cache_hit_only():
    shipped = settled({"state": "ship", "key": "k1", "reason": "on the controller"}, PLAN,
                      {"used": True, "canary": "c", "files": 3, "bytes": 10, "reason": ""}, "the controller", True, "neuron", "/r")
    assert shipped["state"] == "shipped" and shipped["hit_only"] is True and shipped["parts"] == ['pip.vllm: "0.24.0"']
    assert said(shipped, "eagle3") == ("compile cache of eagle3 (key k1, /r): shipped from the canary c through the controller "
                                       "and applied (3 files, 10 bytes): no compile here; starts in cache-hit-only mode "
                                       "(a miss fails the start)")
    refused = settled({"state": "ship", "key": "k1", "reason": "on the controller"}, PLAN,
                      {"used": False, "reason": "the archive's key is k9"}, "s3://b/k", True, "neuron", "/r")
    assert refused["state"] == "refused" and refused["hit_only"] is False and refused["reason"] == "the archive's key is k9"
    assert settled({"state": "local"}, dict(PLAN, is_canary=True), None, "", True, "neuron", "/r")["hit_only"] is False
    assert settled({"state": "local"}, PLAN, None, "", True, "cpu", "/r")["hit_only"] is False
    assert settled({"state": "local"}, PLAN, None, "", False, "neuron", "/r")["hit_only"] is False
