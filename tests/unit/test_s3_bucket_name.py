"""The S3 bucket name check every bucket setting goes through (plugins/module_utils/cloud/infra.py, eagle3_is_s3_bucket: the
results export, the wheelhouse, the compile caches, the s3_relay role): S3's rules for general purpose buckets."""
from __future__ import annotations

import pytest
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud.infra import eagle3_is_s3_bucket


@pytest.mark.parametrize("value", ["eagle3-results", "abc", "my.bucket.name", "a" * 63, "0team-cache"])
def test_bucket_names(value):
    assert eagle3_is_s3_bucket(value)


@pytest.mark.parametrize("value", ["ab", "a" * 64, "My_Bucket", "Not_A_Bucket", "-bucket", "bucket-", "my..bucket",
                                   "192.168.5.4", "", None, 12])
def test_not_bucket_names(value):
    assert not eagle3_is_s3_bucket(value)
