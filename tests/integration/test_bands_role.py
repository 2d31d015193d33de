"""The acceptance bands through the real bench_report role (ansible-playbook); the bands' own rules, called directly:
tests/unit/test_bands.py."""
from __future__ import annotations

import json

from conftest import RUNS
from test_bands import KEY, _falls_at


def test_the_report_role_gates_a_run_by_its_band(tmp_path):
    # The real bench_report role over two kept trained-pair runs with the run's key: the run as measured (in the
    # band of its exact key for k 3, near bands for k 2 and 4: informational) and the same run with position 3
    # accepted 15 % less (the verdict fails, naming the position).
    import shutil

    from test_report_render import report

    results = tmp_path / "results"
    for run_id in ("fast-sweep", "falls"):
        shutil.copytree(RUNS / "trained-sweep", results / run_id)
    path = results / "falls" / "rehearsal-1" / "eagle3-k3.json"
    data = json.loads(path.read_text())
    _falls_at(3, 0.85)(data)
    path.write_text(json.dumps(data))
    (results / "falls" / "rehearsal-1" / "eagle3-k3.json").write_text(json.dumps(data))
    key = {k: v for k, v in KEY.items() if k != "k"}
    proc = report(results, [{"run_id": "fast-sweep", "hosts": ["rehearsal-1"], "band_key": key},
                            {"run_id": "falls", "hosts": ["rehearsal-1"], "band_key": key, "fail_on_verdict": False}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    good = json.loads((results / "fast-sweep" / "summary.json").read_text())
    bands = {g["profile"]: g for g in good["gates"] if g["gate"] == "acceptance_band"}
    assert bands["eagle3-k3"]["enforced"] and bands["eagle3-k3"]["ok"], bands
    assert not bands["eagle3-k2"]["enforced"] and "only a near band: it differs in k 3 (this run: 2)" in \
        bands["eagle3-k2"]["message"]
    assert json.loads((results / "fast-sweep" / "verdict.json").read_text())["ok"] is True
    verdict = json.loads((results / "falls" / "verdict.json").read_text())
    assert verdict["ok"] is False
    failing = [g for g in verdict["failing"] if g["gate"] == "acceptance_band"]
    assert [g["profile"] for g in failing] == ["eagle3-k3"] and "position 3 accepts" in failing[0]["message"], failing
