"""Compile once per fleet: the compile_cache role's entry points on two local hosts side by side
(tests/playbooks/compile_cache.yml): the second host applies the canary's cache, refuses it on a key mismatch, compiles
itself when the canary fails, and with a bucket downloads it from S3 itself (the moto server of test_results_export.py),
nothing of it through the controller. The key, pack, unpack and wait, called directly:
tests/unit/test_compile_cache.py."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, assert_allowed_by_the_policy
from test_results_export import CREDENTIALS, moto, s3  # noqa: F401  (fixtures)

# Every AWS operation this file's Ansible runs make is recorded and checked against the IAM policy (last test).
pytestmark = pytest.mark.usefixtures("aws_calls")


def two_hosts(tmp_path: Path, peer_env: str = "", **extra) -> dict[str, dict]:
    inventory = tmp_path / "hosts.yml"
    hosts = {}
    for host in ("canary", "peer"):
        etc, home = tmp_path / host / "etc", tmp_path / host / "home"
        etc.mkdir(parents=True)
        (tmp_path / host / "cache").mkdir()
        (etc / "vllm.env").write_text(f"# managed\nHOME={home}\nVLLM_CACHE_ROOT={tmp_path / host / 'cache'}\n"
                                      f"NEURON_CC_FLAGS=--optlevel 2\n" + (peer_env if host == "peer" else ""))
        (etc / "baseline.yaml").write_text("model: org/model\nmax-num-seqs: 2\n")
        hosts[host] = {"ansible_connection": "local"}
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    # The peer waits for the canary's publish up to `wait` s: 60 s was too short on a loaded machine (the fresh-clone
    # suite of 2026-12-04 16:45 saw the peer give up and compile while the canary still uploaded to moto); a wait ends
    # as soon as the canary shipped, so a long bound costs nothing when all goes well.
    extra = dict({"wait": 900}, **extra, base=str(tmp_path))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(ROOT / "tests/playbooks/compile_cache.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = {host: json.loads((tmp_path / f"{host}.json").read_text()) for host in ("canary", "peer")}
    out["log"] = proc.stdout
    return out


def test_the_second_host_applies_the_canarys_cache(tmp_path):
    """On neuron (where a compile takes minutes): the peer that applied the canary's cache starts in cache-hit-only
    mode, the canary compiles as usual; a failed start's reason then names the key's parts."""
    got = two_hosts(tmp_path, accelerator="neuron")
    assert got["canary"]["state"] == "cold" and got["canary"]["published"] is True and got["canary"]["files"] == 1
    assert got["peer"]["state"] == "shipped" and got["peer"]["canary"] == "canary" and got["peer"]["key"] == got["canary"]["key"]
    shipped = tmp_path / "peer/cache/torch_compile_cache/abc/rank_0_0/backbone/graph.py"
    assert shipped.read_text() == "compiled graph for canary\n"  # the canary's file, not one the peer wrote
    assert (tmp_path / f"results/compile-cache/{got['canary']['key']}.tar.gz").exists()
    manifest = json.loads((tmp_path / "results/cachetest/compile-cache/baseline.json").read_text())
    assert manifest["state"] == "shipped" and manifest["key"] == got["canary"]["key"]
    assert "shipped from the canary canary through the controller and applied (1 files" in got["log"]
    # The archive copied to the peer is removed after use.
    assert not list((tmp_path / "peer/results").rglob("*.tar.gz"))
    # The peer's next start: a miss is fatal (the file its neuron unit reads, outside the key's vllm.env); the canary's
    # compiles.
    assert got["peer"]["hit_only"] is True and got["canary"]["hit_only"] is False
    env = got["peer"]["hit_only_env"].splitlines()
    assert "VLLM_NEURON_DISABLE_WARMUP_COMPILE=1" in env and "NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1" in env
    assert got["canary"]["hit_only_env"] is None
    assert "starts in cache-hit-only mode (a miss fails the start)" in " ".join(got["log"].split())
    # What a failed start of the peer reports: the unit's failure, the mode, the key and what it was made of.
    failure = got["peer"]["failure"]
    assert failure.startswith("the unit failed; this start ran in cache-hit-only mode")
    assert f"compile cache of key {got['peer']['key']} (shipped, from the canary canary)" in failure
    assert 'pip.vllm: "0.29.0"' in failure and 'env.NEURON_CC_FLAGS: "--optlevel 2"' in failure
    assert 'profile: "baseline"' in failure and "eagle3_compile_cache_hit_only: false" in failure
    assert got["canary"]["failure"] == "the unit failed"
    # A second run: both already hold it; the peer again starts cache-hit-only, the canary never.
    for host in ("canary", "peer"):
        (tmp_path / f"{host}.json").unlink()
    (tmp_path / "inventory-again").mkdir()
    again = two_hosts_again(tmp_path, accelerator="neuron")
    assert again["canary"]["state"] == again["peer"]["state"] == "local"
    assert again["peer"]["hit_only"] is True and again["canary"]["hit_only"] is False


def test_with_a_bucket_the_second_host_downloads_the_cache_from_s3_itself(s3, moto, tmp_path):
    bucket = "eagle3-compile-cache-test"
    s3.create_bucket(Bucket=bucket)
    got = two_hosts(tmp_path, bucket=bucket, endpoint=moto)
    key = got["canary"]["key"]
    assert got["canary"]["state"] == "cold" and got["canary"]["published"] is True
    obj = f"eagle3/compile-cache/{key}.tar.gz"
    assert got["peer"]["state"] == "shipped" and got["peer"]["via"] == f"s3://{bucket}/{obj}"
    # The object is the controller's archive, and what the peer applied is the canary's compile.
    assert s3.get_object(Bucket=bucket, Key=obj)["Body"].read() == (tmp_path / f"results/compile-cache/{key}.tar.gz").read_bytes()
    shipped = tmp_path / "peer/cache/torch_compile_cache/abc/rank_0_0/backbone/graph.py"
    assert shipped.read_text() == "compiled graph for canary\n"
    log = " ".join(got["log"].split())
    assert f"shipped from the canary canary through s3://{bucket}/{obj} and applied (1 files" in log
    # The peer downloaded it (the canary, which compiled, has no such task).
    assert "changed: [peer]" in got["log"].split("TASK [eagle3.trn2.compile_cache : Download the compile cache from S3 on the host, key")[1].split("TASK [")[0]
    assert not any(value in got["log"] for value in CREDENTIALS.values()) and "X-Amz-Signature" not in got["log"]
    assert not list((tmp_path / "peer/results").rglob("*.tar.gz"))  # the downloaded archive is removed after use


def test_a_new_controller_finds_an_earlier_runs_cache_in_s3(s3, moto, tmp_path):
    """An AWX job's container is thrown away with its compile-cache directory: the next job's controller finds the key
    in S3 (the canary put it there when it published, with its sha256 as metadata) and ships it from there."""
    bucket = "eagle3-compile-cache-awx"
    s3.create_bucket(Bucket=bucket)
    first = two_hosts(tmp_path / "job1", bucket=bucket, endpoint=moto)
    key = first["canary"]["key"]
    obj = f"eagle3/compile-cache/{key}.tar.gz"
    archive = (tmp_path / f"job1/results/compile-cache/{key}.tar.gz").read_bytes()
    head = s3.head_object(Bucket=bucket, Key=obj)
    assert head["Metadata"] == {"sha256": hashlib.sha256(archive).hexdigest()}
    assert f"kept on the controller and in s3://{bucket}/{obj} for the other hosts" in " ".join(first["log"].split())
    # The next job: a new controller directory and new hosts, the same bucket.
    second = two_hosts(tmp_path / "job2", bucket=bucket, endpoint=moto)
    for host in ("canary", "peer"):
        assert second[host]["state"] == "shipped" and second[host]["via"] == f"s3://{bucket}/{obj}", second[host]
        assert second[host]["reason"] == "in S3 from an earlier run, not on this controller"
        applied = tmp_path / f"job2/{host}/cache/torch_compile_cache/abc/rank_0_0/backbone/graph.py"
        assert applied.read_text() == "compiled graph for canary\n"
    assert not (tmp_path / "job2/results/compile-cache").exists() or not any((tmp_path / "job2/results/compile-cache").iterdir())
    # nothing went up from this controller (the put runs, and shows, only where S3 holds no upload of the key)
    assert "TASK [eagle3.trn2.compile_cache : Put the compile cache in S3 once" not in second["log"]
    assert not any(value in second["log"] for value in CREDENTIALS.values()) and "X-Amz-Signature" not in second["log"]


def test_an_object_without_its_sha256_is_not_used(s3, moto, tmp_path):
    """Bytes under the key that s3_relay did not put (no sha256 metadata) are never downloaded unchecked: the canary
    compiles and its publish replaces them."""
    bucket = "eagle3-compile-cache-foreign"
    s3.create_bucket(Bucket=bucket)
    first = two_hosts(tmp_path / "job1", bucket=bucket, endpoint=moto)
    obj = f"eagle3/compile-cache/{first['canary']['key']}.tar.gz"
    s3.put_object(Bucket=bucket, Key=obj, Body=b"not a compile cache")
    second = two_hosts(tmp_path / "job2", bucket=bucket, endpoint=moto)
    assert second["canary"]["state"] == "cold" and second["canary"]["published"] is True
    assert f"s3://{bucket}/{obj} carries no sha256 (not put by s3_relay), not used" in " ".join(second["log"].split())
    assert "sha256" in s3.head_object(Bucket=bucket, Key=obj)["Metadata"]


def two_hosts_again(tmp_path: Path, **extra) -> dict[str, dict]:
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "tests/playbooks/compile_cache.yml"), "-e", json.dumps(dict({"wait": 900}, **extra, base=str(tmp_path)))],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return {host: json.loads((tmp_path / f"{host}.json").read_text()) for host in ("canary", "peer")}


def test_a_key_mismatch_is_refused_and_the_host_compiles_itself(tmp_path):
    got = two_hosts(tmp_path, peer_env="NEURON_PLATFORM_TARGET_OVERRIDE=trn1\n", accelerator="neuron")
    assert got["canary"]["state"] == "cold" and got["canary"]["published"] is True
    peer = got["peer"]
    assert peer["state"] == "refused" and peer["key"] != got["canary"]["key"]
    assert 'env.NEURON_PLATFORM_TARGET_OVERRIDE: "trn1" vs -' in peer["reason"]
    assert "REFUSED, this host compiles it itself" in got["log"]
    assert not (tmp_path / "peer/cache/torch_compile_cache").exists()
    assert peer["hit_only"] is False and peer["hit_only_env"] is None  # it compiles: no cache-hit-only start


def test_the_hosts_waiting_for_a_failed_canary_compile_themselves(tmp_path):
    began = time.monotonic()
    got = two_hosts(tmp_path, canary_action="fail", wait=900)
    assert got["peer"]["state"] == "cold" and "shipped nothing (failed)" in got["peer"]["reason"]
    assert time.monotonic() - began < 600  # did not wait out the 900 s (margin for a loaded machine)


def test_every_aws_operation_of_this_files_runs_is_allowed_by_the_iam_policy(aws_calls):
    # last in the file: the runs above, as the recorder saw them (the policy's S3 statement against its own calls)
    assert_allowed_by_the_policy(aws_calls, {"s3:PutObject", "s3:GetObject"})
