#!/usr/bin/python
"""Documentation of the action plugin plugins/action/s3_relay.py (S3 on the controller in its worker; get_url on the host)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: s3_relay
short_description: Relay a controller file to the hosts through S3 (put once, look up, each host downloads it itself)
description:
  - O(op=put), on the controller; put O(src) in s3://O(bucket)/O(object) with its sha256 as user metadata, only when the
    object there does not carry that sha256 (a rerun uploads nothing). With O(put_once) an object carrying any sha256
    stays (objects named by what they hold, a compile cache's key). Returns RV(sha256), the sha256 the hosts must
    download. Give it C(run_once) for a file every host needs.
  - O(op=look), on the controller; the sha256 the object carries in RV(found_sha256) ("" when it is missing, unreadable or
    carries none, never downloaded unchecked) and why in RV(reason).
  - O(op=get), on a host; a download URL signed on the controller (valid O(url_expiry) seconds), downloaded by the host
    itself to O(dest) (root's, 0600) with ansible.builtin.get_url and checked against O(sha256). The signed URL carries
    the credentials' key id (and a session token with temporary credentials) and never reaches the result or the log;
    a failed download names the object, the host and O(fallback).
  - Credentials come from boto3's chain on the controller (AWX's AWS credential, AWS_* environment variables,
    AWS_PROFILE, an instance role); the hosts need none. No ACL call is made (the bucket owner owns the objects).
  - Action plugin; the logic is plugins/module_utils/s3/relay.py.
options:
  op:
    description: What to do.
    type: str
    choices: [look, put, get]
    required: true
  bucket:
    description: S3 bucket (3-63 lower-case letters, digits, dots and hyphens).
    type: str
    required: true
  object:
    description: Object key in the bucket (not starting with /).
    type: str
    required: true
  region:
    description: AWS region of the bucket; empty is boto3's default.
    type: str
    default: ""
  endpoint_url:
    description: Another S3 endpoint (an S3-compatible store, a test server); empty is AWS's (or AWS_ENDPOINT_URL_S3).
    type: str
    default: ""
  src:
    description: put, the file on the controller to upload.
    type: path
  put_once:
    description: put, keep an object under the key that carries a sha256 (the first upload), and return its sha256.
    type: bool
    default: false
  dest:
    description: get, the path the host writes the download to (root's, 0600).
    type: path
  sha256:
    description: get, the sha256 the download must have (put returns it).
    type: str
  url_expiry:
    description: get, seconds the signed download URL is valid.
    type: int
    default: 3600
  what:
    description: What the file is, for messages ("the wheelhouse").
    type: str
    default: the file
  fallback:
    description: get, what else to do when a host cannot download it, appended to the failure message.
    type: str
    default: ""
author: eagle3.trn2
"""

EXAMPLES = r"""
- name: Put the wheelhouse in S3 once
  eagle3.trn2.s3_relay: {op: put, bucket: my-bucket, object: eagle3/wheelhouse.tar, src: /tmp/wheelhouse.tar}
  register: put
  run_once: true

- name: Download it on every host
  eagle3.trn2.s3_relay: {op: get, bucket: my-bucket, object: eagle3/wheelhouse.tar, dest: /tmp/w.tar,
                         sha256: "{{ put.sha256 }}"}
"""

RETURN = r"""
sha256:
  description: put, the sha256 of the object the hosts must download (the first upload's, with put_once).
  returned: op put
  type: str
found_sha256:
  description: look, the sha256 the object carries, "" when it is missing, unreadable or carries none.
  returned: op look
  type: str
reason:
  description: look and put, what was found or done, in words.
  returned: op look and put
  type: str
"""
