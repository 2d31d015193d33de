"""eagle3.trn2.controller_file: the run's records on the controller written in the action's own process (no module call
to a host for a file on the controller).

Two parts:
- hypothesis drives plugins/module_utils/controller_io.settle() through generated sequences of requests against a
  model of the directory: after each, the disk is what the model says; check mode changes nothing on disk yet reports
  the same `changed`; a request repeated at once reports changed=false (file, directory, absent); a request that cannot
  be carried out raises before anything changes, naming the option;
- one real ansible-playbook (tests/integration/test_controller_file_playbook.py) runs the action as Ansible loads it, in a play whose only host cannot be reached: every
  task succeeds, so the action never contacted the host (no module call, which is what it is for), check mode and
  --diff work, and bad arguments are refused by name.
"""
from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import ControllerFileError, settle

NAMES = ("a.json", "b.json", "c.part")
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
MODES = st.sampled_from(["0644", "0600", "0640"])

REQUEST = st.one_of(
    st.tuples(st.just("file"), st.sampled_from(NAMES), TEXT, MODES),
    st.tuples(st.just("absent"), st.sampled_from(NAMES)),
    st.tuples(st.just("moved"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
)


def snapshot(base: Path) -> dict[str, tuple[str, int]]:
    return {p.name: (p.read_bytes().decode("utf-8"), stat.S_IMODE(p.stat().st_mode)) for p in sorted(base.iterdir())}


def apply(base: Path, request: tuple, check: bool) -> dict | None:
    kind, name = request[0], request[1]
    path = str(base / name)
    try:
        if kind == "file":
            return settle(path, content=request[2], mode=request[3], check=check)
        if kind == "absent":
            return settle(path, state="absent", check=check)
        return settle(path, state="moved", src=str(base / request[2]), check=check)
    except ControllerFileError:
        return None


def model(files: dict[str, tuple[str, int]], request: tuple) -> tuple[dict, bool | None]:
    """The directory after the request and `changed` (None: refused, nothing changes)."""
    files = dict(files)
    kind, name = request[0], request[1]
    if kind == "file":
        text, mode = request[2], int(request[3], 8)
        changed = files.get(name) != (text, mode)
        files[name] = (text, mode)
        return files, changed
    if kind == "absent":
        return {k: v for k, v in files.items() if k != name}, name in files
    src = request[2]
    if src not in files:
        return files, None
    files[name] = files.pop(src)
    return files, True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=st.lists(REQUEST, min_size=1, max_size=12))
def test_settle_does_what_the_model_says(tmp_path_factory, requests):
    base = tmp_path_factory.mktemp("settle")
    expected: dict[str, tuple[str, int]] = {}
    for request in requests:
        before = snapshot(base)
        checked = apply(base, request, check=True)
        assert snapshot(base) == before, f"check mode changed the disk: {request}"
        done = apply(base, request, check=False)
        expected, changed = model(expected, request)
        assert snapshot(base) == expected, request
        if changed is None:  # only a move whose src is absent is refused here
            assert done is None, f"not refused: {request}"
            # Check mode cannot know whether an earlier task would have made src: it reports the move.
            assert checked is not None and checked["changed"], request
            continue
        assert done is not None and done["changed"] == changed, request
        assert checked is not None and checked["changed"] == changed, f"check mode reports otherwise: {request}"
        if request[0] != "moved":
            again = apply(base, request, check=False)
            assert again is not None and not again["changed"], f"a repeat changed something: {request}"
    assert not [p for p in base.iterdir() if p.name.startswith(".eagle3-")], "a temporary file was left"


@pytest.mark.parametrize("kwargs, named", [
    ({"path": "results/run.json", "content": "x"}, "path must be an absolute path"),
    ({"path": "{tmp}/x", "content": "x", "state": "link"}, "state must be one of"),
    ({"path": "{tmp}/x", "state": "absent", "content": "x"}, "content is given with state file"),
    ({"path": "{tmp}/x", "content": "x", "src": "{tmp}/y"}, "src is given with state moved"),
    ({"path": "{tmp}/x", "content": "x", "mode": "rw"}, "mode must be an octal string"),
    ({"path": "{tmp}/x", "state": "moved", "src": "/nonexistent/eagle3/x.part"}, "is not a file: nothing to move"),
    ({"path": "/nonexistent/eagle3/x.json", "content": "x"}, "the directory of /nonexistent/eagle3/x.json does not exist"),
])
def test_refusals_name_the_option(kwargs, named, tmp_path):
    # {tmp}: a fresh directory (a fixed /tmp/x failed once when something else had made /tmp/x a directory).
    with pytest.raises(ControllerFileError, match=named):
        settle(**{key: value.replace("{tmp}", str(tmp_path)) for key, value in kwargs.items()})


def test_check_mode_reports_what_an_earlier_task_would_have_made(tmp_path):
    """In check mode the results directory was not created: writing into it reports changed, writes nothing."""
    missing = tmp_path / "run" / "host"
    assert settle(str(missing / "run.json"), content="{}\n", check=True)["changed"]
    assert settle(str(missing / "r.json"), state="moved", src=str(missing / "r.json.part"), check=True)["changed"]
    assert not (tmp_path / "run").exists()


def test_a_directory_is_never_removed(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ControllerFileError, match="removes files only"):
        settle(str(tmp_path / "d"), state="absent")
    assert (tmp_path / "d").is_dir()
