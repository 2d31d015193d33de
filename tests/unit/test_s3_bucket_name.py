"""The S3 bucket name rule every bucket goes through, the settings schema's one definition ($defs.bucket in
plugins/module_utils/settings/settings_schema.yml: the results export, the wheelhouse, the compile caches, and the action
s3_relay's option): S3's rules for general purpose buckets (AWS S3 User Guide, "General purpose bucket naming rules")."""
from __future__ import annotations

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema, settings


def refused(value) -> list[str]:
    return schema.problems(value, {"$ref": "#/$defs/bucket"}, "bucket", settings.schema()["$defs"])


@pytest.mark.parametrize("value", ["eagle3-results", "abc", "my.bucket.name", "a" * 63, "0team-cache",
                                   "", "1.2.3.4x"])  # "": no bucket (the settings' off)
def test_bucket_names(value):
    assert refused(value) == []


@pytest.mark.parametrize("value", ["ab", "a" * 64, "My_Bucket", "Not_A_Bucket", "-bucket", "bucket-", "my..bucket",
                                   "192.168.5.4", None, 12, "bucket\n"])
def test_not_bucket_names(value):
    assert refused(value), value
