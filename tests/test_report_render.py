"""Render the report with the real role (ansible-playbook) from fixture runs and check the files.

When Debian's chromium is installed, the HTML is also opened headless from a file URL and a
screenshot is kept in artifacts/ (the test then also checks the charts were laid out).
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, RUNS

ARTIFACTS = Path(os.environ.get("EAGLE3_ARTIFACTS", ROOT / "artifacts"))


def render(tmp_path: Path, fixture: str, hosts: list[str]) -> tuple[subprocess.CompletedProcess, Path]:
    run = tmp_path / "results" / fixture
    shutil.copytree(RUNS / fixture, run)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(ROOT / "tests/playbooks/report.yml"),
         "-e", json.dumps({"results_dir": str(tmp_path / "results"), "run_id": fixture, "hosts_expected": hosts})],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    return proc, run


class Charts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, list[dict[str, str]]] = {}
        self.current: str | None = None
        self.verdict = ""
        self._in_verdict = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "data-chart" in a:
            self.current = a["data-chart"]
            self.charts[self.current] = []
        elif tag == "rect" and self.current:
            self.charts[self.current].append(a)
        elif a.get("id") == "verdict":
            self._in_verdict = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None

    def handle_data(self, data):
        if self._in_verdict:
            self.verdict += data.strip()
            self._in_verdict = False


def test_sweep_report_files_have_real_values(tmp_path):
    proc, run = render(tmp_path, "sweep", ["rehearsal-1"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["ok"] is True and verdict["failing"] == []
    rows = list(csv.DictReader((run / "report.csv").open()))
    assert [r["profile"] for r in rows] == ["baseline", "eagle3-k2", "eagle3-k3", "eagle3-k4"]
    source = json.loads((RUNS / "sweep/rehearsal-1/eagle3-k4.json").read_text())
    k4 = rows[-1]
    assert float(k4["output_throughput"]) == pytest.approx(source["output_throughput"])
    assert float(k4["acceptance_length"]) == pytest.approx(5.0)
    md = (run / "report.md").read_text()
    assert "**Verdict: OK**" in md and "fastest speculative profile" in md
    html = (run / "report.html").read_text()
    offline = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in offline and "https://" not in offline  # self-contained: no network assets
    charts = Charts()
    charts.feed(html)
    assert charts.verdict == "OK"
    assert set(charts.charts) == {"throughput", "tpot", "acceptance", "spread"}
    assert len(charts.charts["throughput"]) == 4 and len(charts.charts["tpot"]) == 4
    assert len(charts.charts["acceptance"]) == 2 + 3 + 4  # positions of k2, k3, k4
    assert {float(r["data-value"]) for r in charts.charts["acceptance"]} == {100.0}
    values = [float(r["data-value"]) for r in charts.charts["throughput"]]
    assert values[-1] == pytest.approx(source["output_throughput"])

    chromium = shutil.which("chromium")
    if chromium:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report-sweep.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'chrome'}", "--window-size=1000,1400",
                        f"--screenshot={shot}", (run / "report.html").as_uri()],
                       capture_output=True, timeout=120, check=True)
        assert shot.stat().st_size > 10_000
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", f"--user-data-dir={tmp_path / 'chrome2'}",
                              "--dump-dom", (run / "report.html").as_uri()],
                             capture_output=True, text=True, timeout=120, check=True).stdout
        assert dom.count('class="bar"') == sum(len(v) for v in charts.charts.values())


def test_random_report_fails_with_advice(tmp_path):
    proc, run = render(tmp_path, "random", ["rehearsal-1"])
    assert proc.returncode != 0
    assert "stop tuning" in " ".join((proc.stdout + proc.stderr).split())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["ok"] is False
    assert {g["gate"] for g in verdict["failing"]} >= {"acceptance"}
    assert (run / "report.html").exists()


def test_report_rerun_changes_nothing(tmp_path):
    proc, run = render(tmp_path, "agree", ["rehearsal-1"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    again = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(ROOT / "tests/playbooks/report.yml"),
         "-e", json.dumps({"results_dir": str(tmp_path / "results"), "run_id": "agree", "hosts_expected": ["rehearsal-1"]})],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert again.returncode == 0
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1]
