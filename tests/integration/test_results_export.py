"""results_export against a real S3 API: a moto server on 127.0.0.1 (started and stopped here, by its PID).

The real report flow runs (playbooks/report.yml on the rehearsal inventory: run id, bench_report, then
results_export in `always`) over a copy of a fixture run; the bucket must then hold exactly the run directory's
files (keys and sha256), a second run must change nothing, set_stats must carry the verdict summary
(ansible.posix.json stdout callback, `global_custom_stats`), and no credential may reach the output.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, RUNS, assert_allowed_by_the_policy

# Every AWS operation this file's Ansible runs make is recorded and checked against the IAM policy (last test).
pytestmark = pytest.mark.usefixtures("aws_calls")

BIN = Path(sys.executable).parent
BUCKET = "eagle3-results"
PREFIX = "awx/eagle3"
# Fake credentials, distinctive so that a leak into the output is found.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIAEAGLE3MOTOKEYID00", "AWS_SECRET_ACCESS_KEY": "eagle3-moto-secret-access-key",
               "AWS_SESSION_TOKEN": "eagle3-moto-session-token"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """A moto S3 server on a free loopback port; stopped (by PID) when the module's tests are done."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "moto_server did not answer within 60 s: " + log.read_text()
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture
def s3(moto, monkeypatch):
    import boto3

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    client = boto3.client("s3", endpoint_url=moto, region_name="us-east-1")
    for bucket in client.list_buckets()["Buckets"]:  # each test starts from an empty store
        for obj in client.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            client.delete_object(Bucket=bucket["Name"], Key=obj["Key"])
        client.delete_bucket(Bucket=bucket["Name"])
    client.create_bucket(Bucket=BUCKET)
    return client


def report(tmp_path: Path, run_id: str, moto: str | None, via_env: bool = False,
           **settings) -> tuple[subprocess.CompletedProcess, dict]:
    """playbooks/report.yml on the rehearsal inventory for results/<run_id>; (process, json callback document).
    via_env: the endpoint setting stays empty (the SDK's default, as on AWS) and moto is named only by the SDK's own
    environment (AWS_ENDPOINT_URL_S3), the path a real run takes."""
    # the fixture runs are the agreeing pair's: a report is made with the settings of the run it judges (the pair keys
    # its acceptance bands)
    extra = {"eagle3_results_s3_region": "us-east-1", "eagle3_rehearsal_pair": "agreeing", **settings}
    endpoint_env = {"AWS_ENDPOINT_URL_S3": moto} if moto and via_env else {}
    if moto and not via_env:
        extra["eagle3_results_s3_endpoint_url"] = moto
    env = dict(os.environ, **CREDENTIALS, **endpoint_env, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_SHOW_CUSTOM_STATS="1",
               EAGLE3_RESULTS_DIR=str(tmp_path / "results"), EAGLE3_RUN_ID=run_id,
               AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories/rehearsal/hosts.yml"),
                           str(ROOT / "playbooks/report.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL)
    # ansible.cfg also enables profile_tasks, whose lines follow the JSON document.
    start = re.search(r"(?m)^\{", proc.stdout)
    assert start, proc.stdout[-3000:] + proc.stderr[-3000:]
    document, _ = json.JSONDecoder().raw_decode(proc.stdout[start.start():])
    assert not any(secret in proc.stdout + proc.stderr for secret in CREDENTIALS.values()), "a credential was logged"
    assert "X-Amz-" not in proc.stdout + proc.stderr, "a presigned URL was logged"
    return proc, document


def fixture_run(tmp_path: Path, fixture: str) -> Path:
    run = tmp_path / "results" / fixture
    shutil.copytree(RUNS / fixture, run)
    return run


def local_files(run: Path) -> dict[str, str]:
    return {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in run.rglob("*") if p.is_file()}


def bucket_files(client, prefix: str) -> dict[str, str]:
    objects = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: hashlib.sha256(client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()).hexdigest()
            for o in objects}


def stats(document: dict) -> dict:
    return document.get("global_custom_stats", {}).get("eagle3_report", {})


def test_upload_equals_the_run_directory_and_a_second_run_changes_nothing(tmp_path, s3, moto):
    run = fixture_run(tmp_path, "sweep")
    proc, doc = report(tmp_path, "sweep", moto, eagle3_results_s3_bucket=BUCKET, eagle3_results_s3_prefix=PREFIX)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert doc["stats"]["localhost"]["changed"] > 0
    files = local_files(run)
    assert {"report.html", "summary.json", "verdict.json", "rehearsal-1/eagle3-k4.json"} <= set(files)
    assert bucket_files(s3, f"{PREFIX}/sweep/") == files  # every file, same key, same bytes; nothing else
    heads = {o["Key"]: (o["ETag"], o["LastModified"]) for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]}

    summary = stats(doc)
    assert summary["run_id"] == "sweep" and summary["verdict"] == "OK" and summary["ok"] is True
    assert summary["status"] == "complete" and summary["failing"] == []
    source = json.loads((RUNS / "sweep/rehearsal-1/eagle3-k4.json").read_text())
    k4 = summary["hosts"]["rehearsal-1"]["eagle3-k4"]
    assert k4["output_throughput"] == pytest.approx(source["output_throughput"], abs=1e-3)
    assert set(summary["hosts"]["rehearsal-1"]) == {"baseline", "eagle3-k2", "eagle3-k3", "eagle3-k4"}
    assert summary["hosts"]["rehearsal-1"]["baseline"]["speedup"] == 1.0
    assert k4["acceptance_rate"] == 100.0 and k4["speedup"] > 0
    assert summary["recommended"] == {"rehearsal-1": "eagle3-k4"}
    assert summary["reports"]["report.html"] == f"{run}/report.html"
    uri = f"s3://{BUCKET}/{PREFIX}/sweep/"
    assert summary["s3"] == {"uri": uri, "objects": len(files), "uploaded_now": len(files), "error": "",
                             "reports": {name: uri + name for name in
                                         ["report.html", "report.md", "report.csv", "summary.json", "verdict.json"]}}

    again, doc2 = report(tmp_path, "sweep", moto, eagle3_results_s3_bucket=BUCKET, eagle3_results_s3_prefix=PREFIX)
    assert again.returncode == 0, again.stdout[-3000:]
    assert doc2["stats"]["localhost"]["changed"] == 0
    assert {o["Key"]: (o["ETag"], o["LastModified"]) for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]} == heads
    assert stats(doc2)["s3"]["uploaded_now"] == 0 and stats(doc2)["verdict"] == "OK"


def test_a_failed_verdict_is_exported_too(tmp_path, s3, moto):
    run = fixture_run(tmp_path, "random")
    # The endpoint setting empty, moto only in the SDK's environment (the empty case: users leave it empty).
    proc, doc = report(tmp_path, "random", moto, via_env=True, eagle3_results_s3_bucket=BUCKET, eagle3_results_s3_prefix="")
    assert proc.returncode != 0  # bench_report fails the play on the verdict ...
    assert bucket_files(s3, "random/") == local_files(run)  # ... and the run still left the controller (no prefix)
    summary = stats(doc)
    assert summary["verdict"] == "FAILED" and summary["status"] == "complete"
    assert any("acceptance" in line for line in summary["failing"])
    assert summary["s3"]["error"] == "" and summary["s3"]["uri"] == f"s3://{BUCKET}/random/"


def test_without_a_bucket_only_the_summary_is_published(tmp_path, s3, moto):
    fixture_run(tmp_path, "agree")
    proc, doc = report(tmp_path, "agree", moto)
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = stats(doc)
    assert summary["verdict"] == "OK" and "s3" not in summary
    assert set(summary["hosts"]["rehearsal-1"]) == {"baseline", "eagle3"}
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_a_missing_bucket_fails_after_the_summary_is_published(tmp_path, s3, moto):
    fixture_run(tmp_path, "agree")
    proc, doc = report(tmp_path, "agree", moto, eagle3_results_s3_bucket="eagle3-no-such-bucket")
    assert proc.returncode != 0
    summary = stats(doc)
    assert summary["verdict"] == "OK"  # the verdict is kept even though the upload failed
    error = summary["s3"]["error"]
    assert error.startswith("s3://eagle3-no-such-bucket/eagle3/agree/: ") and "NoSuchBucket" in error, error
    assert summary["s3"]["reports"] == {}
    failed = [t for p in doc["plays"] for t in p["tasks"] if t["hosts"].get("localhost", {}).get("failed")]
    assert failed[-1]["task"]["name"].endswith("Stop, the upload failed")


def test_bad_settings_are_refused_by_name_before_the_export(tmp_path):
    run = fixture_run(tmp_path, "agree")
    proc, doc = report(tmp_path, "agree", None, eagle3_results_s3_bucket="Results_Bucket", eagle3_results_s3_prefix="/eagle3/",
                       eagle3_results_s3_endpoint_url="http://user:pw@127.0.0.1:9")
    out = " ".join(json.dumps(doc).split())
    assert proc.returncode != 0
    # playbooks/report.yml run alone checks the settings in its first play, by the names the operator set, before the
    # report or the export reads any
    for message in ["eagle3_results_s3_bucket must be empty (none) or an S3 bucket name",
                    "eagle3_results_s3_prefix must be empty or",
                    "eagle3_results_s3_endpoint_url must be empty (AWS's endpoint) or an http(s) URL without credentials"]:
        assert message in out
    assert "user:pw" not in proc.stdout + proc.stderr  # a URL with credentials in it is refused without being shown
    assert not (run / "verdict.json").exists()  # refused before bench_report wrote anything
    assert "global_custom_stats" not in doc or "eagle3_report" not in doc["global_custom_stats"]


def test_the_site_preflight_refuses_a_bad_bucket_before_any_change(tmp_path):
    """playbooks/preflight.yml (run first by site.yml) checks results_export's inputs with the other roles'."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", EAGLE3_RUN_ID="preflight",
               EAGLE3_RESULTS_DIR=str(tmp_path / "results"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories/rehearsal/hosts.yml"),
                           str(ROOT / "playbooks/preflight.yml"), "-e", "eagle3_results_s3_bucket=Results_Bucket"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    # the settings schema's refusal (plugins/module_utils/settings/settings_schema.yml), before the role's own rule
    assert ('Refused before any change: eagle3_results_s3_bucket must be empty (none) or an S3 bucket name: 3-63 '
            'characters of a-z, 0-9, "." and "-", a letter or digit at both ends, no ".." (got "Results_Bucket")') in out
    assert not (tmp_path / "results").exists()


def test_every_aws_operation_of_this_files_runs_is_allowed_by_the_iam_policy(aws_calls):
    # last in the file: the runs above, as the recorder saw them (the policy's S3 statement against its own calls)
    assert_allowed_by_the_policy(aws_calls, {"s3:PutObject", "s3:GetObject"})
