"""The rerun shortcut: a host phase is skipped only when its inputs, its code and what it manages on the host equal its
record.

The class of wrong skips is "something the phase manages changed, and the phase was skipped anyway". Hypothesis
builds trees of files, records them, applies one generated change of any kind (content, mode, a new file, a removed
file, a retargeted link, a package's dist-info reinstalled) and checks the comparison runs the phase and names the
path; changes to what a spec leaves out (a __pycache__, a file outside the match) must not. The module's work on the
records (compare_on_host, record_on_host) is called directly too; the module and its action in a real
ansible-playbook: tests/integration/test_phase_state_playbook.py.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.eagle3.trn2.plugins.module_utils.phase import phase_inputs as PI
from ansible_collections.eagle3.trn2.plugins.module_utils.phase import phase_state as PS
from conftest import ROOT

NAMES = st.text("abcdefgh", min_size=1, max_size=4)
FILES = st.dictionaries(st.lists(NAMES, min_size=1, max_size=3).map("/".join), st.binary(max_size=32),
                        min_size=1, max_size=6)


def build(top: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = top / rel
        if any(parent.is_file() for parent in path.parents if parent != top and top in parent.parents):
            continue  # "a" as a file and "a/b" below it cannot both exist
        if path.is_dir():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def specs(top: Path) -> list[dict]:
    return [{"kind": "tree", "path": str(top / "tree"), "exclude": ["__pycache__", "*.pyc"]},
            {"kind": "file", "path": str(top / "etc" / "*.conf"), "exclude": ["serve.conf"]},
            {"kind": "entries", "path": str(top / "site"), "match": ["*.dist-info"]},
            {"kind": "stat", "path": str(top / "home")}]


def layout(top: Path, files: dict[str, bytes]) -> None:
    build(top / "tree", files)
    (top / "etc").mkdir(parents=True, exist_ok=True)
    (top / "etc" / "a.conf").write_text("a = 1\n")
    (top / "etc" / "serve.conf").write_text("key\n")
    (top / "site" / "vllm-0.29.0.dist-info").mkdir(parents=True, exist_ok=True)
    (top / "site" / "vllm").mkdir(exist_ok=True)
    (top / "home").mkdir(exist_ok=True)


def first_file(top: Path) -> Path:
    return sorted(p for p in (top / "tree").rglob("*") if p.is_file())[0]


# Each change, and the spec it must be seen by (None: a change the specs leave out, which must not run the phase).
CHANGES = {
    "content": (lambda top: first_file(top).write_bytes(first_file(top).read_bytes() + b"x"), "tree"),
    "mode": (lambda top: first_file(top).chmod(0o600 if first_file(top).stat().st_mode & 0o777 != 0o600 else 0o644),
             "tree"),
    "new file": (lambda top: (top / "tree" / "zz-new").write_text("n"), "tree"),
    "removed file": (lambda top: first_file(top).unlink(), "tree"),
    "link": (lambda top: (top / "tree" / "zz-link").symlink_to("elsewhere"), "tree"),
    "config edited": (lambda top: (top / "etc" / "a.conf").write_text("a = 2\n"), "file"),
    "config added": (lambda top: (top / "etc" / "b.conf").write_text("b\n"), "file"),
    "package reinstalled": (lambda top: (os.utime(top / "site" / "vllm-0.29.0.dist-info", ns=(1, 1))), "entries"),
    "package added": (lambda top: (top / "site" / "torch-2.9.dist-info").mkdir(), "entries"),
    "home's mode": (lambda top: (top / "home").chmod(0o700), "stat"),
    "pycache written": (lambda top: (top / "tree" / "__pycache__").mkdir(exist_ok=True), None),
    "pyc written": (lambda top: (top / "tree" / "m.pyc").write_text("c"), None),
    "serving key rotated": (lambda top: (top / "etc" / "serve.conf").write_text("other\n"), None),
    "package imported": (lambda top: (top / "site" / "vllm" / "__pycache__").mkdir(exist_ok=True), None),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=FILES, change=st.sampled_from(sorted(CHANGES)))
def test_any_change_to_what_a_phase_manages_runs_it_and_nothing_else_does(tmp_path_factory, files, change):
    top = tmp_path_factory.mktemp("phase")
    layout(top, files)
    recorded = PS.record("host", "in-1", PS.fingerprint(specs(top)), "run-a", "t0")
    assert PS.compare(recorded, "host", "in-1", PS.fingerprint(specs(top))) == (True, "as run run-a left it at t0")
    apply, seen_by = CHANGES[change]
    apply(top)
    skip, why = PS.compare(recorded, "host", "in-1", PS.fingerprint(specs(top)))
    if seen_by is None:
        assert skip, (change, why)
    else:
        spec = next(s for s in specs(top) if s["kind"] == seen_by)
        assert not skip and spec["path"] in why, (change, why)


@given(inputs=st.text(min_size=1, max_size=8), other=st.text(min_size=1, max_size=8))
def test_other_inputs_or_no_record_or_another_phase_run_it(inputs, other):
    prints = {"file:/x": "absent"}
    recorded = PS.record("host", inputs, prints, "r", "t")
    assert PS.compare(recorded, "host", other, prints)[0] is (inputs == other)
    named = PS.record("host", inputs, prints, "r", "t", {"code": "c1", "a_input": "1", "b_input": "2"})
    assert PS.compare(named, "host", inputs + "x", prints, {"code": "c2", "a_input": "1", "b_input": "3"}) == (
        False, "its inputs changed: b_input, the code of the collection")
    assert PS.compare(None, "host", inputs, prints) == (False, "no record of the phase on this host")
    assert PS.compare(recorded, "service", inputs, prints)[0] is False
    assert PS.compare({**recorded, "format": PS.FORMAT + 1}, "host", inputs, prints)[0] is False
    # a spec added to the phase (a new version of the play) is a change too
    assert PS.compare(recorded, "host", inputs, {**prints, "file:/y": "absent"})[0] is False


def test_absent_paths_and_accounts_are_recorded_as_absent(tmp_path):
    prints = PS.fingerprint([{"kind": "file", "path": str(tmp_path / "none")}, {"kind": "tree", "path": str(tmp_path / "no/*")},
                             {"kind": "user", "path": "no-such-user-eagle3"}, {"kind": "group", "path": "no-such-group-eagle3"},
                             {"kind": "user", "path": "root"}, {"kind": "group", "path": "root"}])
    assert list(prints.values())[:4] == ["absent"] * 4 and prints["user:root"] != "absent" != prints["group:root"]


@pytest.mark.parametrize("bad", [[], "x", [{"kind": "disk", "path": "/x"}], [{"kind": "file", "path": "rel"}],
                                 [{"kind": "file"}], [{"kind": "tree", "path": ""}]])
def test_a_wrong_path_spec_is_refused(bad):
    assert PS.check_specs(bad)


def test_a_phase_digests_every_input_its_roles_declare_and_its_code(tmp_path, monkeypatch):
    for phase, roles in PI.PHASE_ROLES.items():
        names = PI.phase_inputs(phase)
        for role in roles:
            assert set(PI.role_inputs(role)) <= set(names)
        base = {name: f"v-{name}" for name in names}
        # As the action makes it: the phase digest from the per-input digests.
        digests = {PI.digest_of(PI.input_digests({**base, name: "changed"}, phase), phase) for name in names}
        assert len(digests) == len(names) and PI.digest_of(PI.input_digests(base, phase), phase) not in digests
    # the code: a copy of the collection, one file of each of the phase's roles and the plugins changed in turn
    copy = tmp_path / "c"
    for part in ("roles", "plugins", "playbooks"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(PI, "ROOT", copy)
    for phase, roles in PI.PHASE_ROLES.items():
        PI.code_digest.cache_clear()
        before = PI.code_digest(phase)
        for changed in [copy / "roles" / roles[-1] / "defaults" / "main.yml",
                        copy / "plugins" / "module_utils" / "host" / "pins.py",
                        copy / "playbooks" / f"{phase}.yml", copy / "playbooks" / "tasks" / "phase_skip.yml"]:
            changed.write_text(changed.read_text() + "\n# changed\n")
            PI.code_digest.cache_clear()
            after = PI.code_digest(phase)
            assert after != before, changed
            before = after


def test_a_path_that_cannot_be_read_is_not_absent_and_runs_the_phase(tmp_path):
    (tmp_path / "afile").write_text("x")
    spec = [{"kind": "file", "path": str(tmp_path / "afile" / "below")}]  # NotADirectoryError, not "absent"
    recorded = PS.record("host", "i", {f"file:{tmp_path}/afile/below": "absent"}, "r", "t")
    prints = PS.fingerprint(spec)
    assert list(prints.values()) != ["absent"]
    assert PS.compare(recorded, "host", "i", prints)[0] is False


def test_on_the_host_a_phase_is_recorded_then_skipped_and_one_that_runs_drops_its_record_and_the_later_ones(tmp_path):
    """The module's work (compare_on_host, record_on_host): the records in state_dir, what each call returns, check
    mode writing and dropping nothing."""
    state = tmp_path / "state"
    (tmp_path / "conf").write_text("a\n")
    paths = [{"kind": "file", "path": str(tmp_path / "conf")}]
    assert PS.compare_on_host(str(state), "host", "i1", paths) == {
        "skip": False, "why": "no record of the phase on this host", "record": {}}
    checked = PS.record_on_host(str(state), "host", "i1", paths, {"code": "c"}, run="r1", check=True, written="t0")
    assert checked == {"skip": False, "why": "recorded", "record": PS.record(
        "host", "i1", PS.fingerprint(paths), "r1", "t0", {"code": "c"})} and not state.exists()
    for phase in PS.PHASES:
        assert PS.record_on_host(str(state), phase, "i1", paths, run="r1", written="t0")["why"] == "recorded"
    assert oct(state.stat().st_mode & 0o777) == "0o700" and oct((state / "host.json").stat().st_mode & 0o777) == "0o600"
    assert PS.read_record(str(state / "host.json")) == PS.record("host", "i1", PS.fingerprint(paths), "r1", "t0")
    again = PS.record_on_host(str(state), "host", "i1", paths, run="r2", written="t1")
    assert again == {"skip": False, "why": "the record already says so", "record": PS.read_record(str(state / "host.json"))}
    assert again["record"]["run"] == "r1"
    assert PS.compare_on_host(str(state), "host", "i1", paths) == {
        "skip": True, "why": "as run r1 left it at t0", "record": again["record"]}
    off = PS.compare_on_host(str(state), "host", "i1", paths, shortcut=False, unused_because="off here", check=True)
    assert (off["skip"], off["why"]) == (False, "off here") and sorted(p.name for p in state.iterdir()) == [
        "host.json", "service.json"]
    # service runs: its record dropped, host's kept; then host runs: both dropped
    (tmp_path / "conf").write_text("b\n")
    assert PS.compare_on_host(str(state), "service", "i1", paths)["why"] == f"changed on the host since run r1: {tmp_path}/conf"
    assert [p.name for p in state.iterdir()] == ["host.json"]
    assert PS.compare_on_host(str(state), "host", "i1", paths)["skip"] is False and list(state.iterdir()) == []
    # a record that is not JSON is none
    (state / "host.json").write_text("{")
    assert PS.read_record(str(state / "host.json")) is None and PS.read_record(str(state / "none.json")) is None
