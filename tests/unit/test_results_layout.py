"""The results layout in one module (plugins/module_utils/results_layout.py: one place, so writer and readers cannot
disagree): paths made by it are read back by it, the eagle3_run lookup reads a run laid out by it, and the kept real
runs (as the vllm_bench role wrote them) are laid out as it says."""
from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st

from conftest import RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as L

HOST = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
# A profile name as the settings schema allows it (eagle3_serve's pattern): no dot, so a round suffix is unambiguous.
PROFILE = st.from_regex(r"[a-z][a-z0-9_]{0,12}(-k[0-9]{1,2})?", fullmatch=True).filter(
    lambda n: n not in ("manifest", "failure", "timeline"))


@hsettings(max_examples=100, deadline=None, derandomize=True)
@given(HOST, PROFILE, st.integers(min_value=1, max_value=50))
def test_a_path_made_by_the_layout_is_read_back_by_it(host, profile, round_no):
    result = Path(L.path_of("/r", "run-1", "result", host, profile, round_no))
    assert result.parent.name == host and L.classify(result.name) == ("result", profile, round_no)
    assert (result.name == f"{profile}.json") == (round_no == 1)
    completions = Path(L.path_of("/r", "run-1", "completions", host, profile))
    assert L.classify(completions.name) == ("completions", profile, 1)
    for kind in ("manifest", "failure", "timeline"):
        assert L.classify(Path(L.path_of("/r", "run-1", kind, host)).name) == (kind, None, 1)


def test_the_lookup_reads_a_run_laid_out_by_the_layout(tmp_path):
    real = json.loads((RUNS / "agree/rehearsal-1/eagle3.json").read_text())
    manifest = json.loads((RUNS / "agree/rehearsal-1/manifest.json").read_text())
    for what, data in (("result", real), ("manifest", manifest)):
        path = Path(L.path_of(str(tmp_path), "r1", what, "h1", "eagle3"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    (L.run_dir(tmp_path, "r1") / "compile-cache").mkdir()
    # An invalid result kept aside (for a reader to see why) is in the run's quarantine folder, never read as a host or
    # a result.
    kept = Path(L.path_of(str(tmp_path), "r1", "quarantine", "h1"))
    assert kept == L.run_dir(tmp_path, "r1") / "quarantine" / "h1"
    kept.mkdir(parents=True)
    (kept / "eagle3.json.20261206T114240Z").write_text(json.dumps(real))
    Path(L.path_of(str(tmp_path), "r1", "run.json")).write_text('{"hosts": ["h1"]}')
    run = read_run(L.run_dir(tmp_path, "r1"))
    assert set(run["hosts"]) == {"h1"} and run["run_json"]["data"] == {"hosts": ["h1"]}
    assert run["hosts"]["h1"]["results"]["eagle3"] == real and run["hosts"]["h1"]["manifest"] == manifest


def test_the_kept_runs_are_laid_out_as_the_layout_says():
    for run in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        for host in L.host_dirs(run):
            for path in host.glob("*.json"):
                kind, key, round_no = L.classify(path.name)
                if kind == "result":
                    assert Path(L.path_of(str(RUNS), run.name, "result", host.name, key, round_no)) == path


# A path of a run's file spelled by hand in a role or playbook: a layout file name after "}}/" or "'/" (manifest.json
# only on a line naming a results directory: the rehearsal's model directory has one of its own). Every such path
# comes from eagle3_results_path (so a change of the layout is one change).
_NAMES = (r"((run|verdict|summary|serving|timeline|failure)\.json|report\.(md|csv|html)(?!\.j2)|\.bench-window\.lock"
          r"|compile-cache/)")
_BY_HAND = re.compile(r"(\}\}|')/" + _NAMES + r"|results_dir\b.*/(" + _NAMES + r"|manifest\.json)")


def test_no_role_or_playbook_spells_a_run_path_by_hand():
    root = RUNS.parents[2]
    found = []
    for path in sorted(list((root / "roles").rglob("*.yml")) + list((root / "playbooks").rglob("*.yml"))
                       + [root / "site.yml"]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split(" #", 1)[0]
            if code.lstrip().startswith(("#", "- name:", "name:", "description:")) or "eagle3_results_path" in code:
                continue
            if _BY_HAND.search(code):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert found == []
    # and the rule sees what it is for
    assert _BY_HAND.search("dest: \"{{ results_dir }}/{{ run }}/verdict.json\"")
    assert _BY_HAND.search("lookup('file', d ~ '/summary.json')")
