"""The action eagle3.trn2.s3_relay (the controller relays no byte per host, so it is no bottleneck): a controller file is put in S3
once for all hosts and each host downloads it itself by a URL the controller signs, checked by the sha256 the put
recorded. Against the moto S3 server of test_results_export.py on 127.0.0.1, two local hosts, at -vvv: the signed URL
and the credentials never reach the output, whatever happens. Its users: vllm_install's wheelhouse
(test_wheelhouse_s3.py) and vllm_bench's compile cache (test_compile_cache.py)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, assert_allowed_by_the_policy
from test_results_export import CREDENTIALS, moto, s3  # noqa: F401  (fixtures)

# Every AWS operation this file's Ansible runs make is recorded and checked against the IAM policy (last test).
pytestmark = pytest.mark.usefixtures("aws_calls")

BUCKET = "eagle3-relay-test"
OBJECT = "eagle3/relay/archive.bin"
HOSTS = ("host-a", "host-b")


def play(tmp_path: Path, endpoint: str, **extra) -> tuple[int, str]:
    src = tmp_path / "controller.bin"
    if not src.exists():
        src.write_bytes(os.urandom(4096))
    extra = dict({"bucket": BUCKET, "object": OBJECT, "endpoint": endpoint, "src": str(src), "base": str(tmp_path)}, **extra)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", ",".join(HOSTS) + ",", "-vvv",
                           str(ROOT / "tests/playbooks/s3_relay.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), **CREDENTIALS,
                                   AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull))
    out = proc.stdout + proc.stderr
    for value in CREDENTIALS.values():
        assert value not in out, "a credential was logged"
    assert "X-Amz-Signature" not in out and "Signature=" not in out, "a signed URL was logged"
    return proc.returncode, " ".join(out.split())


def test_each_host_downloads_what_the_controller_put_once(s3, moto, tmp_path):
    s3.create_bucket(Bucket=BUCKET)
    rc, out = play(tmp_path, moto)
    assert rc == 0, out[-3000:]
    src = (tmp_path / "controller.bin").read_bytes()
    assert s3.get_object(Bucket=BUCKET, Key=OBJECT)["Body"].read() == src
    for host in HOSTS:
        got = tmp_path / host / "relayed.bin"
        assert got.read_bytes() == src
        assert got.stat().st_mode & 0o777 == 0o600


def failed_on_each_host(tmp_path: Path, endpoint: str, drill: str, failure: str) -> str:
    """Run with the drill; every host fails with `failure` (the object named) and keeps no file."""
    rc, out = play(tmp_path, endpoint, drill=drill)
    assert rc != 0
    for host in HOSTS:
        assert f"{failure} the test file s3://{BUCKET}/{OBJECT} on {host} failed:" in out, out[-3000:]
        assert not (tmp_path / host / "relayed.bin").exists()
    return out


def test_an_object_gone_after_the_put_is_named_on_each_host(s3, moto, tmp_path):
    s3.create_bucket(Bucket=BUCKET)
    out = failed_on_each_host(tmp_path, moto, "gone", "downloading")
    assert "(HTTP 404" in out and "The object is gone or unreadable" in out and "; or use the test's other path." in out


def test_other_bytes_under_the_key_are_refused_by_the_checksum(s3, moto, tmp_path):
    s3.create_bucket(Bucket=BUCKET)
    out = failed_on_each_host(tmp_path, moto, "replaced", "downloading")
    assert "checksum" in out.lower() and "The host must reach S3" in out, out[-3000:]


def test_a_bad_bucket_name_is_refused_naming_the_variable(s3, moto, tmp_path):
    rc, out = play(tmp_path, moto, bucket="Not_A_Bucket")
    assert rc != 0
    assert 's3_relay.bucket must be empty (none) or an S3 bucket name: 3-63 characters' in out and 'Not_A_Bucket' in out, out[-2000:]


def test_put_once_keeps_the_first_upload_and_the_hosts_get_those_bytes(s3, moto, tmp_path):
    """put_once (the compile caches: the key names what the archive holds): a second controller with its own
    archive of the key (other bytes: another pack) uploads nothing, and its hosts download and check the first upload,
    so a host never gets other bytes than the ones it looked up."""
    s3.create_bucket(Bucket=BUCKET)
    first = tmp_path / "first.bin"
    first.write_bytes(os.urandom(4096))
    rc, out = play(tmp_path, moto, put_once=True, src=str(first))
    assert rc == 0, out[-3000:]
    for host in HOSTS:
        (tmp_path / host / "relayed.bin").unlink()
    before = s3.head_object(Bucket=BUCKET, Key=OBJECT)
    rc, out = play(tmp_path, moto, put_once=True)  # controller.bin: other bytes, the same key
    assert rc == 0, out[-3000:]
    after = s3.head_object(Bucket=BUCKET, Key=OBJECT)
    assert (after["ETag"], after["LastModified"]) == (before["ETag"], before["LastModified"])  # no upload
    assert s3.get_object(Bucket=BUCKET, Key=OBJECT)["Body"].read() == first.read_bytes()
    assert s3.head_object(Bucket=BUCKET, Key=OBJECT)["Metadata"] == {"sha256": hashlib.sha256(first.read_bytes()).hexdigest()}
    for host in HOSTS:
        assert (tmp_path / host / "relayed.bin").read_bytes() == first.read_bytes()


def test_put_once_replaces_an_object_without_its_sha256(s3, moto, tmp_path):
    """Bytes under the key that this role did not put (no sha256 metadata) are replaced, not kept."""
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=OBJECT, Body=b"not put by s3_relay")
    rc, out = play(tmp_path, moto, put_once=True)
    assert rc == 0, out[-3000:]
    src = (tmp_path / "controller.bin").read_bytes()
    assert s3.get_object(Bucket=BUCKET, Key=OBJECT)["Body"].read() == src
    assert s3.head_object(Bucket=BUCKET, Key=OBJECT)["Metadata"] == {"sha256": hashlib.sha256(src).hexdigest()}
    for host in HOSTS:
        assert (tmp_path / host / "relayed.bin").read_bytes() == src


def test_without_put_once_a_changed_file_replaces_the_object(s3, moto, tmp_path):
    """The wheelhouse's case (the controller's file is the truth): other bytes under the name are uploaded."""
    s3.create_bucket(Bucket=BUCKET)
    first = tmp_path / "first.bin"
    first.write_bytes(os.urandom(4096))
    rc, out = play(tmp_path, moto, src=str(first))
    assert rc == 0, out[-3000:]
    rc, out = play(tmp_path, moto)
    assert rc == 0, out[-3000:]
    src = (tmp_path / "controller.bin").read_bytes()
    assert s3.get_object(Bucket=BUCKET, Key=OBJECT)["Body"].read() == src
    for host in HOSTS:
        assert (tmp_path / host / "relayed.bin").read_bytes() == src


def test_every_aws_operation_of_this_files_runs_is_allowed_by_the_iam_policy(aws_calls):
    # last in the file: the runs above, as the recorder saw them (the policy's S3 statement against its own calls)
    assert_allowed_by_the_policy(aws_calls, {"s3:PutObject", "s3:GetObject"})
