"""The result-file validator through the real bench_report role (ansible-playbook) over stale OK report files: after a
bad file and after a crash no file of the run says OK, and every JSON file the role wrote parses with a strict parser.
The validator's own cases, called directly: tests/unit/test_result_checks.py."""
from __future__ import annotations

import json
import math
import shutil

from conftest import ROOT, RUNS
from test_report_render import report as role_report
from test_result_checks import REFERENCE, REPORT_FILES, says_ok, strict_json


def test_the_role_leaves_no_ok_file_after_a_bad_file_or_a_crash(tmp_path):
    """The real role: a run reported OK (its five files kept as the stale report of an earlier attempt), then runs
    DERIVED from runs/agree over that stale report: an acceptance rate written as a string (it crashed the report
    once), an Infinity throughput, and last (the play stops there) a crash: a report template that cannot
    render. No file of any of them says OK; every JSON file the role wrote is strict JSON. (A reference whose figure is
    a string crashed the report too; the role's preflight refuses it before any change: below.)"""
    results = tmp_path / "results"
    shutil.copytree(RUNS / "agree", results / "ok")
    proc = role_report(results, [{"run_id": "ok", "hosts": ["rehearsal-1"], "reference": str(RUNS.parent / "references/rehearsal-fixture-pair.json")}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert says_ok(results / "ok") == list(REPORT_FILES)  # the stale report really says OK, in every file

    cases = {"string-rate": ("eagle3.json", {"spec_decode_acceptance_rate": "100.0"}),
             "infinite": ("eagle3.json", {"output_throughput": math.inf}),
             "crash": (None, None)}
    for case, (name, change) in cases.items():
        shutil.copytree(RUNS / "agree", results / case)
        for stale in REPORT_FILES:
            shutil.copy(results / "ok" / stale, results / case / stale)
        if name:
            data = json.loads((results / case / "rehearsal-1" / name).read_text())
            data.update(change)
            (results / case / "rehearsal-1" / name).write_text(json.dumps(data))
    broken = tmp_path / "broken-templates"
    shutil.copytree(ROOT / "templates", broken)
    (broken / "report.md.j2").write_text("{{ the_report_has_no_such_variable.at_all }}\n")
    proc = role_report(results, [
        {"run_id": "string-rate", "hosts": ["rehearsal-1"], "fail_on_verdict": False},
        {"run_id": "infinite", "hosts": ["rehearsal-1"], "fail_on_verdict": False},
        {"run_id": "crash", "hosts": ["rehearsal-1"], "templates_dir": str(broken)}])
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0  # the crash stops the play, after the two bad-file runs were reported
    for case, field in (("string-rate", 'spec_decode_acceptance_rate must be a percentage 0..100 (serve.py writes '
                                        'accepted / draft tokens * 100) (got "100.0")'),
                        ("infinite", "output_throughput must be a finite number (got Infinity")):
        run = results / case
        assert says_ok(run) == [], (case, out[-3000:])
        verdict = strict_json((run / "verdict.json").read_text())
        assert verdict["status"] == "complete" and field in verdict["failed_hosts"]["rehearsal-1"]
        assert any(b["file"] == "rehearsal-1/eagle3.json" for b in strict_json((run / "summary.json").read_text())["bad_files"])
        assert "rehearsal-1/eagle3.json" in (run / "report.md").read_text()
        assert "<script" not in (run / "report.md").read_text()
    run = results / "crash"
    assert says_ok(run) == [], out[-3000:]
    verdict = strict_json((run / "verdict.json").read_text())
    assert verdict["status"] == "report failed"
    assert verdict["error"].startswith("the report could not be made from "), verdict["error"]
    assert strict_json((run / "summary.json").read_text())["error"] == verdict["error"]
    assert not (run / "report.csv").exists()
    assert "the report could not be made from " in (run / "report.md").read_text()
    assert "the report could not be made from " in (run / "report.html").read_text()
    assert 'verdict.json says "report failed"' in out
    for path in results.glob("*/*.json"):
        strict_json(path.read_text())
    # a reference whose figure is a string: refused by the preflight, naming the file, before any file changes
    (tmp_path / "bad-reference.json").write_text(json.dumps(dict(REFERENCE, profiles={"eagle3": {"output_throughput": "fast"}})))
    before = {p.name: p.read_bytes() for p in (results / "ok").iterdir() if p.is_file()}
    proc = role_report(results, [{"run_id": "ok", "hosts": ["rehearsal-1"], "reference": str(tmp_path / "bad-reference.json")}])
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and f"bench_report_reference (eagle3_reference) {tmp_path / 'bad-reference.json'} must be a reference" in out
    assert {p.name: p.read_bytes() for p in (results / "ok").iterdir() if p.is_file()} == before
