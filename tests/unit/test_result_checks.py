"""The result-file validator (a broken result file must never make a report say OK):
plugins/module_utils/results/result_checks.py and its schema result_schema.yml.

Every kept real result file (tests/fixtures/runs, README there) passes. Each generated case is one of those files
DERIVED by one mutation of one field (hypothesis): a type, a non-finite number, a value out of range, counters that
disagree, foreign metadata, a removed key. The file is written into a copy of its real run, read by the eagle3_run
lookup and reported by the eagle3_report filter, as the role does: the verdict is not OK, and the verdict, the
report's lines and the summary name the file and the field. A few samples go through the real bench_report role
(ansible-playbook) in tests/integration/test_result_checks_role.py.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.report import engine as report_filter
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.results import result_checks as R
from ansible_collections.eagle3.trn2.plugins.module_utils.report.output import csv_cell, json_text, md

GATES = {"reference": {"enforce": False, "tolerance": 0.30}}  # the rehearsal's
REFERENCE = json.loads((RUNS.parent / "references/rehearsal-fixture-pair.json").read_text())
HSET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

# (run, host, profile) of every kept real result file
REAL = sorted((p.parts[-3], p.parts[-2], p.stem) for p in RUNS.glob("*/*/*.json")
              if p.name not in ("manifest.json", "timeline.json", "failure.json") and ".completions." not in p.name)
# a later round's file (<profile>.round<r>.json, runs/rounds5) is its profile's
SPECULATIVE = [r for r in REAL if r[2].split(".")[0] != "baseline"]

SPEC = ["spec_decode_acceptance_rate", "spec_decode_acceptance_length", "spec_decode_num_drafts",
        "spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates"]
NUMBERS = ["completed", "failed", "num_prompts", "total_input_tokens", "total_output_tokens", "duration",
           "output_throughput", "request_throughput", "median_tpot_ms", "median_ttft_ms", "p99_tpot_ms", "p99_ttft_ms",
           "burstiness", "max_concurrency"]
METADATA = ["run_id", "host", "profile"]


def strict_json(text: str) -> Any:
    """Python's json as jq, JavaScript and Go read JSON: NaN and Infinity refused."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not strict JSON")
    return json.loads(text, parse_constant=refuse)


def source(run: str, host: str, profile: str) -> dict:
    return json.loads((RUNS / run / host / f"{profile}.json").read_text())


def judge(run: str, host: str, profile: str, data: Any, raw: str | None = None) -> dict:
    """Write the mutated file into a copy of its real run and report it as the role does."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "run"
        shutil.copytree(RUNS / run, copy)
        (copy / host / f"{profile}.json").write_text(raw if raw is not None else json.dumps(data))
        hosts = sorted(p.name for p in copy.iterdir() if p.is_dir())
        return eagle3_report(read_run(copy), hosts, GATES, REFERENCE, run_id=run)


def assert_named(result: dict, host: str, profile: str, field: str) -> None:
    """Not OK, and the verdict, the report's lines and the summary name the file and the field."""
    verdict, summary = result["verdict"], result["summary"]
    name = f"{host}/{profile}.json"
    assert verdict["ok"] is False, result["lines"]
    reason = verdict["failed_hosts"].get(host, "")
    assert f"unusable file {name}: " in reason and field in reason.split(f"unusable file {name}: ", 1)[1], reason
    assert any(b["file"] == name and field in b["reason"] for b in summary["bad_files"]), summary["bad_files"]
    assert any(b["file"] == name for b in verdict["bad_files"])
    assert any(line.startswith(f"FAILED HOST {host}: ") and name in line for line in result["lines"])
    assert summary["ok"] is False
    for part in (verdict, summary):
        strict_json(json_text(part))


def test_every_kept_real_result_file_passes_the_validator():
    assert len(REAL) >= 20
    for run, host, profile in REAL:
        assert R.file_problems(source(run, host, profile)) == [], (run, host, profile)
    for run in sorted({r[0] for r in REAL}):
        data = read_run(RUNS / run)
        checked = R.check_run(data, "baseline", sorted(data["hosts"]))
        assert all(e["bad_files"] == [] for e in checked["hosts"].values()), run


WRONG_TYPES = [True, None, "12", [1], {"v": 1}]


@hsettings(max_examples=40, **HSET)
@given(st.sampled_from(SPECULATIVE), st.sampled_from(NUMBERS + SPEC + METADATA), st.sampled_from(WRONG_TYPES))
def test_a_value_of_another_type_is_named(where, field, wrong):
    data = source(*where)
    if field not in data or (wrong is None and field == "max_concurrency") or type(wrong) is type(data[field]):
        return  # a value of the field's own type, or null where null is allowed
    if field in METADATA and isinstance(wrong, str):
        return
    data[field] = wrong
    assert_named(judge(*where, data), where[1], where[2], field)


@hsettings(max_examples=30, **HSET)
@given(st.sampled_from(REAL), st.sampled_from(NUMBERS + SPEC[:2] + ["std_itl_ms", "mean_e2el_ms", "rtfx"]),
       st.sampled_from([math.nan, math.inf, -math.inf]))
def test_a_number_that_is_not_finite_is_named(where, field, value):
    data = source(*where)
    if field not in data:
        return
    data[field] = value
    raw = json.dumps(data)  # NaN / Infinity / -Infinity, as Python's json.dump (and so vLLM's serve.py) writes them
    assert_named(judge(*where, None, raw), where[1], where[2], field)


@hsettings(max_examples=40, **HSET)
@given(st.sampled_from(SPECULATIVE), st.data())
def test_a_value_out_of_range_is_named(where, draw):
    data = source(*where)
    field = draw.draw(st.sampled_from(["spec_decode_acceptance_rate", "spec_decode_acceptance_length",
                                       "spec_decode_per_position_acceptance_rates", "completed", "failed",
                                       "total_output_tokens"]))
    over = draw.draw(st.floats(min_value=1e-3, max_value=1e6))
    if field == "spec_decode_acceptance_rate":
        data[field] = draw.draw(st.sampled_from([100 + over, -over]))
    elif field == "spec_decode_acceptance_length":
        data[field] = draw.draw(st.floats(min_value=-10, max_value=1, exclude_max=True))
    elif field == "spec_decode_per_position_acceptance_rates":
        at = draw.draw(st.integers(min_value=0, max_value=len(data[field]) - 1))
        data[field][at] = draw.draw(st.sampled_from([1 + over, -over]))
    elif field in ("completed", "failed"):
        data[field] = data["num_prompts"] + draw.draw(st.integers(min_value=1, max_value=10**6))
    else:
        data[field] = -draw.draw(st.integers(min_value=1, max_value=10**6))
    assert_named(judge(*where, data), where[1], where[2], field)


@hsettings(max_examples=40, **HSET)
@given(st.sampled_from(SPECULATIVE), st.sampled_from(SPEC), st.floats(min_value=1e-6, max_value=0.5))
def test_counters_that_disagree_are_named(where, field, change):
    """One figure changed within its range: the file's own counters (as serve.py computes the figures) disagree."""
    data = source(*where)
    value = data[field]
    if field == "spec_decode_per_position_acceptance_rates":
        value[0] = value[0] * (1 - change) if value[0] > 0 else change
    elif field in ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens"):
        if data["spec_decode_accepted_tokens"] == 0 and field != "spec_decode_accepted_tokens":
            return  # nothing accepted: 0 of any number of drafts is 0 %, length 1; no counter can disagree
        data[field] = max(round(value * (1 - change)), 1)
        if data[field] == value:
            data[field] = value - 1 if field == "spec_decode_accepted_tokens" and value > 0 else value + 1
    elif field == "spec_decode_acceptance_rate":
        data[field] = value * (1 - change) if value > 0 else change
    else:  # the length, kept at least 1
        data[field] = value * (1 + change)
    assert_named(judge(*where, data), where[1], where[2], field)


@hsettings(max_examples=30, **HSET)
@given(st.sampled_from(REAL), st.sampled_from(METADATA), st.from_regex(r"[a-z][a-z0-9-]{2,20}", fullmatch=True))
def test_foreign_metadata_is_named(where, field, foreign):
    """The file's own run id, host and profile are held to run.json, the host's manifest and the file's name; the
    kept runs' directories were renamed when they were kept, so the directory name is never the record."""
    data = source(*where)
    if data[field] == foreign:
        return
    data[field] = foreign
    result = judge(*where, data)
    assert_named(result, where[1], where[2], field)
    assert f"{field} {foreign!r} is not" in result["verdict"]["failed_hosts"][where[1]]


@hsettings(max_examples=40, **HSET)
@given(st.sampled_from(SPECULATIVE), st.sampled_from(R.schema()["required"] + SPEC))
def test_a_removed_key_is_named(where, field):
    data = source(*where)
    del data[field]
    assert_named(judge(*where, data), where[1], where[2], field)


def test_the_workload_is_equal_across_the_hosts_compared(run_copy):
    """runs/fleet: fleet-2's whole host directory DERIVED to 20 prompts (its baseline and EAGLE3 agree with each
    other, not with fleet-1): the fleet would compare unlike runs; fleet-2's baseline is named."""
    run = run_copy(**{"fleet-1": "fleet/fleet-1", "fleet-2": "fleet/fleet-2"})
    shutil.copy(RUNS / "fleet/run.json", run / "run.json")
    for profile in ("baseline", "eagle3"):
        path = run / "fleet-2" / f"{profile}.json"
        data = json.loads(path.read_text())
        data.update(num_prompts=20, completed=20)
        path.write_text(json.dumps(data))
    result = eagle3_report(read_run(run), ["fleet-1", "fleet-2"], GATES, REFERENCE)
    assert_named(result, "fleet-2", "baseline", "num_prompts")
    assert "workload differs from fleet-1's baseline: num_prompts 20 vs 10" in result["verdict"]["failed_hosts"]["fleet-2"]


def test_a_crash_names_the_file_without_which_the_report_is_made(monkeypatch):
    """Anything the validator did not foresee: the filter's failure names the smallest part of the run without which
    the report is made, with the reason."""
    run = read_run(RUNS / "sweep")
    real = report_filter.eagle3_sweep

    def broken(rows, *args):
        if any(r["profile"] == "eagle3-k3" for r in rows):
            raise TypeError("a figure of an unforeseen type")
        return real(rows, *args)

    monkeypatch.setattr(report_filter, "eagle3_sweep", broken)
    with pytest.raises(Exception) as raised:
        eagle3_report(run, ["rehearsal-1"], GATES, REFERENCE, run_id="sweep")
    assert str(raised.value) == ("the report could not be made from rehearsal-1/eagle3-k3.json: "
                                 "TypeError: a figure of an unforeseen type")
    monkeypatch.setattr(report_filter, "eagle3_sweep", real)
    broken_reference = dict(REFERENCE, profiles={"eagle3": {"output_throughput": "fast"}})
    with pytest.raises(Exception) as raised:
        eagle3_report(read_run(RUNS / "agree"), ["rehearsal-1"], {"reference": {"enforce": True}}, broken_reference)
    assert str(raised.value).startswith(f"the report could not be made from the reference {REFERENCE['name']} "
                                        "(bench_report_reference): TypeError: ")


def test_strict_json_gives_null_with_the_reason():
    data = strict_json(json_text({"speedup": math.inf, "rows": [{"rate": math.nan}], "ok": False}))
    assert data["speedup"] is None and data["rows"][0]["rate"] is None and data["ok"] is False
    assert sorted(n["path"] for n in data["nulls"]) == ["rows[0].rate", "speedup"]
    assert all("cannot be given in strict JSON" in n["reason"] for n in data["nulls"])


@hsettings(max_examples=60, **HSET)
@given(st.text(max_size=40))
def test_markdown_and_csv_escape_any_text(text):
    shown = md(text)
    assert not any(c in shown for c in "<>\n\r")
    assert not any(c in re.sub(r"\\.", "", shown) for c in "|`[]*#\\")  # every one escaped by a backslash
    (row,) = list(csv.reader(io.StringIO(csv_cell(text) + ",end\n"), strict=True))
    assert row == [("'" + text) if text.startswith(("=", "+", "-", "@", "\t", "\r")) else text, "end"]


class Verdict(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text, self._on = "", False

    def handle_starttag(self, tag, attrs):
        self._on = dict(attrs).get("id") == "verdict"

    def handle_data(self, data):
        if self._on:
            self.text += data.strip()
            self._on = False


REPORT_FILES = ("verdict.json", "summary.json", "report.md", "report.html", "report.csv")


def says_ok(run: Path) -> list[str]:
    """The files of the run that say OK."""
    ok = []
    for name in ("verdict.json", "summary.json"):
        if (run / name).exists() and strict_json((run / name).read_text()).get("ok") is not False:
            ok.append(name)
    if (run / "report.md").exists() and "**Verdict: OK**" in (run / "report.md").read_text():
        ok.append("report.md")
    if (run / "report.html").exists():
        parser = Verdict()
        parser.feed((run / "report.html").read_text())
        if parser.text != "FAILED":
            ok.append("report.html")
    if (run / "report.csv").exists() and any(r.get("run_verdict") != "FAILED"
                                             for r in csv.DictReader((run / "report.csv").open())):
        ok.append("report.csv")
    return ok


# Expressions of report.md.j2 that give a number or a fixed word, never a text taken from a result.
MD_NUMERIC = {"'OK' if v.ok else 'FAILED'", "v.gates_checked", "r.completed", "r.failed", "r.num_prompts", "f.hosts",
              "r.rounds",
              "'pass' if g.ok else ('SKIPPED' if g.skipped else 'FAIL')", "'yes' if g.enforced else 'informational'"}


def test_markdown_and_csv_escape_every_expression():
    """As report.html.j2's `| e` (tests/integration/test_report_render.py): every text of report.md.j2 goes through eagle3_md, every
    cell of report.csv.j2 through eagle3_csv."""
    import re as regex
    text = (RUNS.parents[2] / "templates/report.md.j2").read_text()
    expressions = [" ".join(e.split()) for e in regex.findall(r"\{\{(.*?)\}\}", text, regex.S)]
    # eagle3_with_interval writes only a formatted number and its interval ("2.01x [1.88, 2.15]", or "-"):
    # tests/unit/test_rounds.py::test_a_shown_interval_is_only_numbers
    unescaped = [e for e in expressions if not e.endswith("| eagle3.trn2.eagle3_md") and e not in MD_NUMERIC
                 and not e.endswith("| length") and not e.startswith("'%")
                 and not regex.search(r"\| eagle3\.trn2\.eagle3_with_interval\([^|]*\)$", e)]
    assert len(expressions) > 30 and unescaped == []
    csv_text = (RUNS.parents[2] / "templates/report.csv.j2").read_text()
    assert [" ".join(e.split()) for e in regex.findall(r"\{\{(.*?)\}\}", csv_text, regex.S)] == [
        "cells | map('eagle3.trn2.eagle3_csv') | join(',')"]
