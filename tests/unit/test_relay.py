"""The S3 relay's logic (plugins/module_utils/s3/relay.py), called directly against moto's in-process S3: a put uploads
only what the object does not carry, put_once keeps the first upload, a look says why an object is not used, the signed
URL is a GET of the object, and a message never shows a URL. The action on real hosts, through a moto server and at
-vvv: tests/integration/test_s3_relay.py."""
from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.s3 import relay

moto = pytest.importorskip("moto")
BUCKET, KEY = "eagle3-relay-unit", "eagle3/relay/archive.bin"


@pytest.fixture
def s3(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "AKIAEAGLE3UNITKEY000", "AWS_SECRET_ACCESS_KEY": "unit-secret",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    with moto.mock_aws():
        client = relay.client("us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _file(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_a_put_uploads_once_and_a_rerun_uploads_nothing(s3, tmp_path):
    src, digest = _file(tmp_path, "a.bin", os.urandom(2048))
    first = relay.put(s3, BUCKET, KEY, src)
    assert first == {"sha256": digest, "uploaded": True, "reason": f"uploaded to s3://{BUCKET}/{KEY}"}
    assert s3.head_object(Bucket=BUCKET, Key=KEY)["Metadata"] == {"sha256": digest}
    again = relay.put(s3, BUCKET, KEY, src)
    assert again["uploaded"] is False and again["sha256"] == digest and "the same bytes are there" in again["reason"]


def test_other_bytes_replace_the_object_unless_put_once_keeps_the_first(s3, tmp_path):
    first, first_digest = _file(tmp_path, "first.bin", b"first pack")
    other, other_digest = _file(tmp_path, "other.bin", b"another pack of the same key")
    relay.put(s3, BUCKET, KEY, first, put_once=True)
    kept = relay.put(s3, BUCKET, KEY, other, put_once=True)
    assert kept["uploaded"] is False and kept["sha256"] == first_digest and "the first upload under the key stays" in kept["reason"]
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read() == b"first pack"
    replaced = relay.put(s3, BUCKET, KEY, other)  # the controller's file is the truth (the wheelhouse)
    assert replaced["uploaded"] is True and replaced["sha256"] == other_digest
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read() == b"another pack of the same key"


def test_put_once_replaces_an_object_without_its_sha256_and_check_mode_uploads_nothing(s3, tmp_path):
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"not put by the relay")
    src, digest = _file(tmp_path, "a.bin", b"the cache")
    planned = relay.put(s3, BUCKET, KEY, src, put_once=True, check=True)
    assert planned["uploaded"] is True and s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read() == b"not put by the relay"
    relay.put(s3, BUCKET, KEY, src, put_once=True)
    assert s3.head_object(Bucket=BUCKET, Key=KEY)["Metadata"] == {"sha256": digest}


def test_look_says_why_an_object_is_not_used(s3):
    assert relay.look(s3, BUCKET, KEY) == ("", f"s3://{BUCKET}/{KEY}: not there")
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"x", Metadata={"sha256": "not-a-digest"})
    assert relay.look(s3, BUCKET, KEY) == ("", f"s3://{BUCKET}/{KEY} carries no sha256 (not put by s3_relay), not used")
    found, reason = relay.look(s3, "eagle3-no-such-bucket", KEY)
    assert found == "" and reason == f"s3://eagle3-no-such-bucket/{KEY}: NoSuchBucket The specified bucket does not exist"


def test_the_signed_url_is_a_get_of_the_object_and_never_shown(s3):
    url = relay.sign(s3, BUCKET, KEY, 60)
    assert f"/{KEY}" in url and "X-Amz-Signature=" in url and "X-Amz-Expires=60" in url
    said = relay.without_urls(f"downloading failed: 404 for {url} (retry {url})")
    assert "X-Amz" not in said and said == "downloading failed: 404 for <the signed URL> (retry <the signed URL>)"


def test_a_large_upload_goes_in_parts_and_a_failed_one_is_aborted_with_calls_the_policy_allows(s3, tmp_path):
    """A compile cache is far larger than boto3's multipart threshold (8 MiB): the put goes in parts, and when a part
    fails the transfer manager aborts the upload (AbortMultipartUpload), so no part is left billed in the bucket. Every
    call it makes is one iam/controller-policy.json allows."""
    import json

    import iam_policy
    from conftest import ROOT

    src, _ = _file(tmp_path, "cache.tar.gz", os.urandom(9 * 1024 * 1024))
    calls: list[str] = []
    s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    assert relay.put(s3, BUCKET, KEY, src)["uploaded"] is True
    assert {"CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"} <= set(calls)

    def broken(**_):
        raise ConnectionError("the network went away under a part")

    s3.meta.events.register("before-call.s3.UploadPart", broken)
    other, _ = _file(tmp_path, "other.tar.gz", os.urandom(9 * 1024 * 1024))
    with pytest.raises(ConnectionError):
        relay.put(s3, BUCKET, KEY + ".2", other)
    made = list(calls)  # the relay's calls (the check below is the test's own)
    assert "AbortMultipartUpload" in made and not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    policy = json.loads((ROOT / "iam/controller-policy.json").read_text())
    assert iam_policy.missing(iam_policy.recorded_actions([f"s3 {call} ansible-playbook" for call in made]), policy) == []
