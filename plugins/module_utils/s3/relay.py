"""Relay a controller file to the hosts through S3, so the controller sends no byte of it per host.

- `put`: upload the controller's file under a key with its sha256 as user metadata (x-amz-meta-sha256), only when
  the object there does not carry that sha256 (a rerun uploads nothing). With `put_once` (objects named by what they
  hold, e.g. a compile cache's key) an object carrying any sha256 stays: a host that looked it up downloads the bytes it
  looked up. An object without a sha256 (not put here) is replaced.
- `look`: the sha256 an object carries ("" when it is missing, unreadable or carries none) and why.
- `sign`: a download URL (GET) valid for some seconds; the host downloads it itself and checks the sha256.

Credentials come from boto3's chain on the controller (AWX's AWS credential, AWS_* variables, AWS_PROFILE, an
instance role); the endpoint is the SDK's own unless given (AWS_ENDPOINT_URL[_S3] are honoured by boto3 itself).
The calls this makes (HeadObject, PutObject or the multipart upload, no ACL call) are what iam/controller-policy.json
allows; tests/integration/test_s3_relay.py records and checks them.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

SHA256 = re.compile(r"[0-9a-f]{64}")


def client(region: str = "", endpoint_url: str = "") -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # requirements-collection.txt pins them for the controller
        raise RuntimeError(f"boto3 and botocore are needed on the controller for S3 ({exc})") from exc

    # SigV4 everywhere (every region accepts it; the signed URL carries the region), boto3's own retries.
    return boto3.client("s3", region_name=region or None, endpoint_url=endpoint_url or None,
                        config=Config(signature_version="s3v4", retries={"mode": "standard"}))


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def look(s3: Any, bucket: str, key: str) -> tuple[str, str]:
    """(sha256 the object carries or "", the reason in words) for s3://bucket/key."""
    from botocore.exceptions import BotoCoreError, ClientError

    where = f"s3://{bucket}/{key}"
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in ("404", "NoSuchKey", "NotFound"):
            return "", f"{where}: not there"
        return "", f"{where}: {code or 'error'} {error.get('Message') or ''}".rstrip()
    except BotoCoreError as exc:
        return "", f"{where}: {exc}"
    found = str((head.get("Metadata") or {}).get("sha256", ""))
    if SHA256.fullmatch(found):
        return found, f"in {where}"
    return "", f"{where} carries no sha256 (not put by s3_relay), not used"


def put(s3: Any, bucket: str, key: str, src: str | Path, put_once: bool = False, check: bool = False) -> dict[str, Any]:
    """Put src under the key unless the object there already carries its sha256 (or, put_once, any sha256).
    Returns {"sha256": what the hosts must download, "uploaded": bool, "reason": str}."""
    mine = sha256_of(src)
    found, reason = look(s3, bucket, key)
    if found and (put_once or found == mine):
        kept = "the first upload under the key stays" if found != mine else "the same bytes are there"
        return {"sha256": found, "uploaded": False, "reason": f"{reason}: {kept}"}
    if not check:
        # No ACL argument: the object is the bucket owner's, as S3's default Object Ownership makes it (no PutObjectAcl).
        s3.upload_file(str(src), bucket, key, ExtraArgs={"Metadata": {"sha256": mine}})
    return {"sha256": mine, "uploaded": True, "reason": f"uploaded to s3://{bucket}/{key}"}


def sign(s3: Any, bucket: str, key: str, expiry: int) -> str:
    """A GET URL for s3://bucket/key valid `expiry` seconds (no call to S3: signed with the controller's credentials)."""
    return s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=int(expiry))


URL = re.compile(r"https?://[^\s)'\"]+")


def without_urls(text: str) -> str:
    """A message with every URL in it replaced (a signed URL carries the credentials' key id and a session token)."""
    return URL.sub("<the signed URL>", text)
