"""Which copy of the collection is running (plugins/module_utils/results/provenance.py, the lookup provenance): a
checkout by its git revision, an installed copy by its version and FILES.json's digest, anything else refused."""
from __future__ import annotations

import hashlib
import json

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.eagle3.trn2.plugins.module_utils.results.provenance import describe
from conftest import ROOT


def test_a_checkout_is_named_by_its_git_revision():
    assert describe(ROOT).startswith("eagle3.trn2 1.0.0 checkout, git ")


def test_an_installed_copy_is_named_by_its_version_and_files_digest(tmp_path):
    info = {"collection_info": {"namespace": "eagle3", "name": "trn2", "version": "1.2.3"}}
    (tmp_path / "MANIFEST.json").write_text(json.dumps(info))
    (tmp_path / "FILES.json").write_text('{"files": []}')
    digest = hashlib.sha256(b'{"files": []}').hexdigest()[:16]
    assert describe(tmp_path) == f"eagle3.trn2 1.2.3 installed, files sha256 {digest}"


def test_a_checkout_without_git_says_so(tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: eagle3\nname: trn2\nversion: 1.0.0\n")
    assert describe(tmp_path) == "eagle3.trn2 1.0.0 checkout, no git revision"


def test_a_directory_that_is_no_collection_is_refused(tmp_path):
    with pytest.raises(AnsibleLookupError, match="neither MANIFEST.json nor galaxy.yml"):
        describe(tmp_path)
