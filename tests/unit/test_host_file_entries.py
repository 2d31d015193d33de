"""The work of eagle3.trn2.host_files called directly (plugins/module_utils/host/files.py): the entries in order, look_in
and the reads after the writes, check mode, the invocation a log keeps, and each refusal's message as the module's msg
(the same text the playbook test and the molecule scenarios assert) with the paths changed before it. The module in a
real playbook: tests/integration/test_host_files.py; settle()'s own semantics: tests/unit/test_controller_file.py.
"""
from __future__ import annotations

import errno
import hashlib

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.host import files as F


def entries(etc):
    return [{"path": str(etc), "state": "directory", "mode": "0750"},
            {"path": f"{etc}/a.yaml", "content": "a: 1\n", "mode": "0640"},
            {"path": f"{etc}/b.yaml", "content": "b: 2\n"},
            {"path": f"{etc}/stale.env", "state": "absent"}]


def test_the_entries_in_order_then_look_in_and_the_reads_see_the_writes(tmp_path):
    etc = tmp_path / "etc"
    places = [{"path": str(etc), "patterns": ["*.yaml", "*.conf"]}, {"path": str(tmp_path / "nowhere"), "patterns": ["*"]}]
    checked = F.host_files(entries(etc), places, read_if_present=[f"{etc}/a.yaml"], check=True)
    assert not etc.exists()
    assert checked["changed"] and checked["changed_paths"] == [str(etc), f"{etc}/a.yaml", f"{etc}/b.yaml"]
    assert [d.get("after") for d in checked["diff"]][1:] == ["a: 1\n", "b: 2\n"]
    assert checked["found"] == {str(etc): [], str(tmp_path / "nowhere"): []}
    assert (checked["read"], checked["absent"]) == ({}, [f"{etc}/a.yaml"])
    written = F.host_files(entries(etc), places, read=[f"{etc}/a.yaml"], read_if_present=[f"{etc}/none", f"{etc}/b.yaml"])
    assert written["changed_paths"] == checked["changed_paths"] and len(written["diff"]) == 3
    assert oct(etc.stat().st_mode & 0o777) == "0o750" and oct((etc / "a.yaml").stat().st_mode & 0o777) == "0o640"
    assert written["found"] == {str(etc): ["a.yaml", "b.yaml"], str(tmp_path / "nowhere"): []}
    assert written["read"] == {f"{etc}/a.yaml": "a: 1\n", f"{etc}/b.yaml": "b: 2\n"}
    assert written["absent"] == [f"{etc}/none"]
    (etc / "stale.env").write_text("old\n")
    again = F.host_files(entries(etc))
    assert again == {"changed": True, "changed_paths": [f"{etc}/stale.env"], "found": {}, "read": {}, "absent": [],
                     "diff": [{"before": {"path": f"{etc}/stale.env", "state": "file"},
                               "after": {"path": f"{etc}/stale.env", "state": "absent"}}]}
    assert not (etc / "stale.env").exists()
    assert F.host_files(entries(etc))["changed"] is False


def test_the_invocation_names_each_files_size_and_digest_never_its_text():
    text = "HF_HOME=/mnt/\udcff\n"  # a lone surrogate (surrogateescape) is counted as the byte it stands for
    raw = text.encode("utf-8", "surrogateescape")
    params = {"files": [{"path": "/etc/x", "content": text, "mode": "0640"}, {"path": "/etc/d", "state": "directory"}],
              "look_in": None, "read": ["/etc/x"]}
    assert F.invocation(params) == {"module_args": {
        "files": [{"path": "/etc/x", "content": f"({len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()})",
                   "mode": "0640"}, {"path": "/etc/d", "state": "directory"}],
        "look_in": [], "read": ["/etc/x"], "read_if_present": []}}
    assert params["files"][0]["content"] == text  # the module's own arguments are left as they are


def refused(call, *args, **kwargs) -> F.HostFilesError:
    with pytest.raises(F.HostFilesError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_each_refusal_names_the_entry_and_the_paths_changed_before_it(tmp_path, monkeypatch):
    good = {"path": f"{tmp_path}/c.conf", "content": "c\n"}
    cases = [
        ([{"path": f"{tmp_path}/x", "content": "", "dest": "y", "src": "z"}],
         "files[0]: unknown key(s) dest, src (known: content, group, mode, owner, path, state)", []),
        ([{"path": f"{tmp_path}/x", "state": "moved"}],
         "files[0]: state must be file, directory or absent, got 'moved'", []),
        ([good, {"path": "etc/d", "content": ""}],
         "files[1]: path must be an absolute path, got 'etc/d'", [f"{tmp_path}/c.conf"]),
        ([{"path": f"{tmp_path}/nodir/f", "content": ""}],
         f"files[0]: the directory of {tmp_path}/nodir/f does not exist", []),
    ]
    for files, message, changed in cases:
        error = refused(F.host_files, files)
        assert (str(error), error.changed_paths, error.result()) == (message, changed, {"changed_paths": changed})
    assert (tmp_path / "c.conf").read_text() == "c\n"  # the entry before the refused one was written

    def denied(path, **_):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(F, "settle", denied)
    error = refused(F.settle_entries, [{"path": "/etc/eagle3/vllm.env", "content": ""}])
    assert str(error) == "files[0]: /etc/eagle3/vllm.env: Permission denied"


@pytest.mark.parametrize("place", [{"path": "/etc"}, {"patterns": ["*"]}, {"path": "/etc", "patterns": "*.yaml"}])
def test_a_look_in_place_without_a_path_and_a_list_of_patterns_is_refused_naming_no_changed_paths(tmp_path, place):
    error = refused(F.host_files, [{"path": f"{tmp_path}/a", "content": "a\n"}], [{"path": str(tmp_path), "patterns": ["*"]}, place])
    assert str(error) == f"look_in[1] needs path (a directory) and patterns (a list), got {place!r}"
    assert error.changed_paths is None and error.result() == {}  # as the module has always failed it
    assert (tmp_path / "a").read_text() == "a\n"


def test_a_file_that_cannot_be_read_is_refused_by_name_and_a_missing_one_only_under_read(tmp_path):
    (tmp_path / "b.yaml").write_text("b: 2\n")
    (tmp_path / "binary").write_bytes(b"ok\xff\xfe")
    changed = ["/earlier"]
    cases = [
        (([f"{tmp_path}/b.yaml", f"{tmp_path}/none.yaml"], []), f"read[1]: {tmp_path}/none.yaml: No such file or directory"),
        (([], ["b.yaml"]), "read_if_present[0]: 'b.yaml' is not an absolute path"),
        (([], [f"{tmp_path}/binary"]),
         f"read_if_present[0]: {tmp_path}/binary: not UTF-8 text (invalid start byte at byte 2)"),
        (([str(tmp_path)], []), f"read[0]: {tmp_path}: Is a directory"),
        (([], [f"{tmp_path}/b.yaml/below"]), f"read_if_present[0]: {tmp_path}/b.yaml/below: Not a directory"),
    ]
    for (read, if_present), message in cases:
        error = refused(F.read_texts, read, if_present, changed)
        assert (str(error), error.changed_paths) == (message, changed)
    assert F.read_texts([], [f"{tmp_path}/none.yaml", f"{tmp_path}/b.yaml"]) == (
        {f"{tmp_path}/b.yaml": "b: 2\n"}, [f"{tmp_path}/none.yaml"])
    # through host_files, a refused read names the paths its entries changed
    error = refused(F.host_files, [{"path": f"{tmp_path}/c", "content": "c\n"}], read=[f"{tmp_path}/none.yaml"])
    assert error.changed_paths == [f"{tmp_path}/c"]
