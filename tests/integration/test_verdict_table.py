"""Verdict integrity, table-driven: runs built from the real result files under fixtures/runs.

Every case is one run directory. "real" cases are a fixture run as fetched; every other case is
DERIVED from the real file named in its `from` column, changed as its `how` column says (see
fixtures/README.md). Each case is judged twice: by the eagle3_report filter, and by the real
bench_report role (one ansible-playbook over all cases) over a stale verdict.json that says OK,
which must not survive.
"""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import ROOT, RUNS
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from test_report_render import report

REFERENCES = ROOT / "roles/bench_report/files/references"
GATES = {"reference": {"enforce": False, "tolerance": 0.30}}  # the rehearsal's (inventories/rehearsal)
STALE = {"ok": True, "status": "complete", "run_id": "stale", "failing": []}
H = "rehearsal-1"


def edit(path: Path, change: Callable[[dict], Any]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def host(run: Path, source: str, name: str = H) -> Path:
    """Copy a real fixture host directory (e.g. "agree") into the run as `name`."""
    shutil.copytree(RUNS / source / H, run / name)
    return run / name


def real(source: str) -> Callable[[Path], None]:
    return lambda run: host(run, source)


def derived(source: str, change: Callable[[Path], Any]) -> Callable[[Path], None]:
    return lambda run: change(host(run, source))


def slower(factor: float) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        d["output_throughput"] *= factor
    return change


def set_keys(**values: Any) -> Callable[[dict], None]:
    return lambda d: d.update(values)


def two_hosts(factor: float) -> Callable[[Path], None]:
    def build(run: Path) -> None:
        host(run, "agree", "host-a")
        edit(host(run, "agree", "host-b") / "eagle3.json", slower(factor))
    return build


def run_json(hosts: list[str], then: Callable[[Path], Any] | None = None) -> Callable[[Path], None]:
    """run.json as the run that wrote the files would have written it: the run id its files carry (agree's, dev2),
    not the case's directory name (the validator holds every file to its run's record)."""
    def build(run: Path) -> None:
        (run / "run.json").write_text(json.dumps({"run_id": AGREE_EAGLE3["run_id"], "hosts": hosts}))
        if then:
            then(run)
    return build


def accepting(pct: float) -> Callable[[dict], None]:
    """The file's own counters made to give `pct` as serve.py computes it (vLLM 0.29 vllm/benchmarks/serve.py:
    accepted / draft tokens * 100, 1 + accepted / drafts, accepted at a position / drafts): 2500 drafts of k tokens,
    the accepted ones spread evenly over the positions. A rate set alone would disagree with the counters, which the
    validator refuses."""
    def change(d: dict) -> None:
        k = len(d["spec_decode_per_position_acceptance_rates"])
        drafts, drafted = 2500, 2500 * k
        accepted = round(drafted * pct / 100)
        d.update(spec_decode_num_drafts=drafts, spec_decode_draft_tokens=drafted, spec_decode_accepted_tokens=accepted,
                 spec_decode_acceptance_rate=accepted / drafted * 100, spec_decode_acceptance_length=1 + accepted / drafts,
                 spec_decode_per_position_acceptance_rates=[accepted / drafts / k] * k)
    return change


def inject_spec(h: Path) -> None:
    spec = json.loads((h / "eagle3.json").read_text())
    edit(h / "baseline.json", lambda d: d.update({k: v for k, v in spec.items() if k.startswith("spec_decode_")}))


def truncate(h: Path) -> None:
    text = (h / "eagle3.json").read_text()
    (h / "eagle3.json").write_text(text[: len(text) // 2])


def sweep_fastest_fails(h: Path) -> None:
    # eagle3-k4 is the fastest of the real sweep; its acceptance drops below the floor
    edit(h / "eagle3-k4.json", accepting(20.0))


def random_completions(h: Path) -> None:
    shutil.copy(RUNS / "random" / H / "eagle3.completions.json", h / "eagle3.completions.json")


def cold_baseline(h: Path) -> None:
    edit(h / "baseline.json", lambda d: d.update(p99_ttft_ms=d["median_ttft_ms"] * 10))


PRICE = {"usd_per_hour": 2.0, "instance_type": "test-instance", "source": "test figure, not a price", "date": "2026-11-30"}
AGREE_EAGLE3 = json.loads((RUNS / "agree" / H / "eagle3.json").read_text())
AGREE_BASE = json.loads((RUNS / "agree" / H / "baseline.json").read_text())

# id, from (real file/run), how (derivation, "" = real), build, hosts given, options, ok, message
CASES: list[tuple] = [
    ("agree", "agree", "", real("agree"), [H], {}, True, "verdict: OK (9 gate checks, 1 expected host(s)"),
    ("sweep", "sweep", "", real("sweep"), [H], {}, True, "recommended eagle3-k4, the fastest profile passing"),
    # The resized pair's fresh-host rehearsal (50 prompts), judged against the shipped rehearsal
    # reference, enforced: its workload is the reference's, so the comparison really runs.
    ("resized-shipped-reference", "resized", "", real("resized"), [H],
     {"reference": "rehearsal-cpu-tiny", "gates": dict(GATES, reference={"enforce": True, "tolerance": 0.30})}, True,
     "eagle3: output_throughput 157.06 tok/s meets at least 130.59 tok/s (reference 186.55 minus 30%"),
    ("random", "random", "", real("random"), [H], {}, False,
     "eagle3: acceptance 0.0 % is below the floor of at least 30.0 %; the tutorial's advice"),
    ("failed", "failed", "", real("failed"), [H], {}, False,
     'FAILED HOST rehearsal-1: profile baseline failed at "Check the server came up'),
    ("empty-no-hosts", "-", "an empty run directory, no run.json, no hosts given (a torn-down inventory)",
     lambda run: None, [], {}, False, "NO EVIDENCE: no expected hosts"),
    ("torn-down", "-", "an empty run directory whose run.json lists rehearsal-1; no hosts given",
     run_json([H]), [], {}, False, "FAILED HOST rehearsal-1: no results fetched"),
    ("run-json-hosts", "agree", "run.json lists rehearsal-1; no hosts given (reported after teardown)",
     run_json([H], real("agree")), [], {}, True, "1 expected host(s) from run.json"),
    ("run-json-wins", "agree", "run.json lists rehearsal-1 and rehearsal-2; the inventory only rehearsal-1",
     run_json([H, "rehearsal-2"], real("agree")), [H], {}, False, "FAILED HOST rehearsal-2: no results fetched"),
    ("baseline-speculated", "agree/baseline.json", "spec_decode_* keys of agree/eagle3.json injected",
     derived("agree", inject_spec), [H], {}, False, "its server speculated, so it is no baseline"),
    ("failed-requests", "agree/eagle3.json", "failed 4, completed 6",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(failed=4, completed=6))), [H], {}, False,
     "unusable file rehearsal-1/eagle3.json: 4 of 10 requests failed (the server did not answer them; 6 completed); "
     "to recover, rerun with this run's eagle3_run_id"),
    ("prompts-differ", "agree/eagle3.json", "num_prompts and completed 50 (baseline ran 10)",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(num_prompts=50, completed=50))), [H], {}, False,
     "workload differs from baseline's: num_prompts 50 vs 10"),
    ("concurrency-differs", "agree/eagle3.json", "max_concurrency 4",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(max_concurrency=4))), [H], {}, False,
     "workload differs from baseline's: max_concurrency 4 vs 2"),
    ("no-output", "agree/eagle3.json", "total_output_tokens 0",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(total_output_tokens=0))), [H], {}, False,
     "eagle3: no output tokens"),
    ("no-completions-kept", "agree/*.completions.json", "prompts and completions emptied",
     derived("agree", lambda h: [edit(h / f, set_keys(prompts=[], completions=[]))
                                 for f in ("baseline.completions.json", "eagle3.completions.json")]),
     [H], {}, False, "no greedy completions kept from the baseline profile"),
    ("spec-completions-missing", "agree", "eagle3.completions.json removed",
     derived("agree", lambda h: (h / "eagle3.completions.json").unlink()), [H], {}, False,
     "eagle3: no greedy completions kept to compare with baseline's"),
    ("parity-mismatch", "agree + random/eagle3.completions.json", "the random draft's completions as eagle3's",
     derived("agree", random_completions), [H], {}, False, "eagle3: greedy output differs from baseline for prompt"),
    ("truncated", "agree/eagle3.json", "cut to its first half",
     derived("agree", truncate), [H], {}, False, "unusable file rehearsal-1/eagle3.json: truncated or invalid JSON"),
    ("empty-file", "agree/eagle3.json", "emptied",
     derived("agree", lambda h: (h / "eagle3.json").write_text("")), [H], {}, False,
     "unusable file rehearsal-1/eagle3.json: empty file"),
    ("not-utf8", "agree/eagle3.json", "first byte replaced by 0xff",
     derived("agree", lambda h: (h / "eagle3.json").write_bytes(b"\xff" + (h / "eagle3.json").read_bytes()[1:])),
     [H], {}, False, "unusable file rehearsal-1/eagle3.json: unreadable"),
    ("non-object", "agree/eagle3.json", "wrapped in a list",
     derived("agree", lambda h: (h / "eagle3.json").write_text(json.dumps([AGREE_EAGLE3]))), [H], {}, False,
     "unusable file rehearsal-1/eagle3.json: a JSON list, not an object"),
    ("stray-json", "agree/manifest.json", "its deployed versions copied to a stray notes.json",
     derived("agree", lambda h: (h / "notes.json").write_text(
         json.dumps(json.loads((h / "manifest.json").read_text())["deployed"]))), [H], {}, False,
     "unusable file rehearsal-1/notes.json: not a vllm bench serve result"),
    ("foreign-manifest", "agree/manifest.json", "replaced by agree/baseline.json",
     derived("agree", lambda h: shutil.copy(h / "baseline.json", h / "manifest.json")), [H], {}, False,
     "unusable file rehearsal-1/manifest.json: not a run manifest"),
    ("no-speculative", "agree", "eagle3.json and eagle3.completions.json removed",
     derived("agree", lambda h: [(h / f).unlink() for f in ("eagle3.json", "eagle3.completions.json")]),
     [H], {}, False, "FAILED HOST rehearsal-1: no speculative profile result"),
    ("acceptance-just-below", "agree/eagle3.json", "its counters: 2247 of 7500 draft tokens accepted (29.96 %)",
     derived("agree", lambda h: edit(h / "eagle3.json", accepting(29.96))), [H], {}, False,
     "eagle3: acceptance 29.96 % is below the floor of at least 30.00 %"),
    ("acceptance-at-floor", "agree/eagle3.json", "its counters: 2250 of 7500 draft tokens accepted (30 %)",
     derived("agree", lambda h: edit(h / "eagle3.json", accepting(30.0))), [H], {}, True,
     "eagle3: acceptance 30.0 % meets the floor of at least 30.0 %"),
    ("speedup-just-below", "agree/eagle3.json", "output_throughput 0.999x the baseline's",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(output_throughput=AGREE_BASE["output_throughput"] * 0.999))),
     [H], {}, False, "eagle3: speedup 0.999x is below the floor of at least 1.000x"),
    ("reference-other-workload", "agree", "judged against the tutorial's trn2 reference (50 prompts), enforced",
     real("agree"), [H], {"reference": "trn2-tp8-llama-3.1-8b", "gates": dict(GATES, reference={"enforce": True, "tolerance": 0.1})},
     False, "skipped, the run's workload differs from the reference's (trn2.48xlarge TP 8, Llama 3.1 8B Instruct + "
     "RedHatAI EAGLE3, sonnet 512/128, 50 prompts, concurrency 2): num_prompts 10 vs 50"),
    ("reference-enforced-same-workload", "agree", "judged against the rehearsal reference (same workload), enforced",
     real("agree"), [H], {"gates": dict(GATES, reference={"enforce": True, "tolerance": 0.1})}, True,
     "eagle3: output_throughput 2338.57 tok/s meets at least 1671.44 tok/s (reference 1857.15 minus 10%; 1.26x"),
    ("reference-no-workload", "agree", "a reference file without its workload (a copy of the rehearsal one)",
     real("agree"), [H], {"reference": "NO-WORKLOAD", "gates": dict(GATES, reference={"enforce": True, "tolerance": 0.1})},
     False, "does not say which workload it was measured with"),
    ("sweep-fastest-fails", "sweep/eagle3-k4.json", "its counters: 20 % of the draft tokens accepted",
     derived("sweep", sweep_fastest_fails), [H], {}, False, "recommended eagle3-k3, the fastest profile passing every"),
    ("sweep-none-passes", "sweep/eagle3-k*.json", "its counters: 20 % of the draft tokens accepted, in all three",
     derived("sweep", lambda h: [edit(h / f"eagle3-k{k}.json", accepting(20.0)) for k in (2, 3, 4)]),
     [H], {}, False, "no profile recommended, no speculative profile passes every enforced gate: eagle3-k2: [acceptance]"),
    ("two-hosts-outlier", "agree (two copies)", "host-b's eagle3 output_throughput x0.82",
     two_hosts(0.82), ["host-a", "host-b"], {}, True, "OUTLIER host-b (eagle3): "),
    ("two-hosts-even", "agree (two copies)", "host-b's eagle3 output_throughput x0.95 (within 10 %)",
     two_hosts(0.95), ["host-a", "host-b"], {}, True, "verdict: OK (18 gate checks, 2 expected host(s)"),
    ("unexpected-host", "agree (two copies)", "a second host directory not in run.json",
     run_json([H], lambda run: (host(run, "agree"), host(run, "agree", "old-host"))), [], {}, True,
     "IGNORED old-host: results directory of a host not in the run's host list"),
    ("price-set", "agree", "an hourly price given (a test figure)",
     real("agree"), [H], {"price": PRICE}, True,
     "cost: test-instance at 2.0 USD/hour (test figure, not a price, 2026-11-30)"),
    ("cold-baseline", "agree/baseline.json", "p99_ttft_ms 10x its median",
     derived("agree", cold_baseline), [H], {}, True, "WARM-UP rehearsal-1 baseline: p99 TTFT"),
    # The files that were given OK before the result validator (main 7213775) and the one that crashed the report: the
    # validator names each file and field, the host fails, and no gate reads the figure.
    ("infinite-throughput", "agree/eagle3.json", "output_throughput Infinity (Python's json.dump writes it so)",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(output_throughput=float("inf")))), [H], {}, False,
     "unusable file rehearsal-1/eagle3.json: output_throughput must be a finite number (got Infinity"),
    ("acceptance-150", "agree/eagle3.json", "spec_decode_acceptance_rate 150",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(spec_decode_acceptance_rate=150.0))), [H], {}, False,
     "unusable file rehearsal-1/eagle3.json: spec_decode_acceptance_rate must be a percentage 0..100"),
    ("length-half", "agree/eagle3.json", "spec_decode_acceptance_length 0.5 (its counters give 4.0)",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(spec_decode_acceptance_length=0.5))), [H], {}, False,
     "spec_decode_acceptance_length 0.5 disagrees with the file's own counters: 1 + spec_decode_accepted_tokens / "
     "spec_decode_num_drafts = 1 + 960 / 320 = 4"),
    ("foreign-run-id", "agree/eagle3.json", "its metadata names the run id another-run",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(run_id="another-run"))), [H], {}, False,
     "rehearsal-1/eagle3.json: run_id 'another-run' is not this run's (rehearsal-1/manifest.json says 'dev2')"),
    ("foreign-host", "agree/eagle3.json", "its metadata names the host rehearsal-9",
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(host="rehearsal-9"))), [H], {}, False,
     "rehearsal-1/eagle3.json: host 'rehearsal-9' is not this host's (rehearsal-1/manifest.json says 'rehearsal-1')"),
    ("acceptance-string", "agree/eagle3.json", 'spec_decode_acceptance_rate "100.0" (a string: it crashed the report)',
     derived("agree", lambda h: edit(h / "eagle3.json", set_keys(spec_decode_acceptance_rate="100.0"))), [H], {}, False,
     'rehearsal-1/eagle3.json: spec_decode_acceptance_rate must be a percentage 0..100 (serve.py writes accepted / '
     'draft tokens * 100) (got "100.0")'),
    ("nan-in-baseline", "agree/baseline.json", "std_itl_ms NaN",
     derived("agree", lambda h: edit(h / "baseline.json", set_keys(std_itl_ms=float("nan")))), [H], {}, False,
     "unusable file rehearsal-1/baseline.json: std_itl_ms must be a finite number (got NaN"),
]


# The reference measured with the fixture runs' pair and workload (10 prompts); the shipped
# rehearsal reference belongs to today's pair (50 prompts) and would skip, not judge, these runs.
FIXTURE_REFERENCE = RUNS.parent / "references/rehearsal-fixture-pair.json"


def _reference(name: str) -> dict:
    if name == "NO-WORKLOAD":
        ref = json.loads(FIXTURE_REFERENCE.read_text())
        ref.pop("workload")
        return ref
    if name == "FIXTURE":
        return json.loads(FIXTURE_REFERENCE.read_text())
    return json.loads((REFERENCES / f"{name}.json").read_text())


def strict_json(text: str) -> object:
    """Python's json as jq, JavaScript and Go read JSON: NaN and Infinity refused."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not strict JSON")
    return json.loads(text, parse_constant=refuse)


def md_text(markdown: str) -> str:
    """The text report.md shows: its escapes (plugins/module_utils/report/output.py, md) undone."""
    return html.unescape(re.sub(r"\\([\\`*\[\]|#])", r"\1", markdown))


def _texts(result: dict) -> str:
    return "\n".join(result["lines"] + [g["message"] for g in result["summary"]["gates"]])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, dict]:
    """Build every run, judge it with the filter, then with the role over a stale OK verdict.json."""
    results = tmp_path_factory.mktemp("verdicts") / "results"
    out, runs = {}, []
    for case_id, _src, _how, build, hosts, opts, _ok, _msg in CASES:
        run = results / case_id
        run.mkdir(parents=True)
        build(run)
        ref_name = opts.get("reference", "FIXTURE")
        spec = {"run_id": case_id, "hosts": hosts, "gates": opts.get("gates", GATES), "fail_on_verdict": False}
        if ref_name == "NO-WORKLOAD":
            (results.parent / "no-workload.json").write_text(json.dumps(_reference(ref_name)))
            spec["reference"] = str(results.parent / "no-workload.json")
        elif ref_name == "FIXTURE":
            spec["reference"] = str(FIXTURE_REFERENCE)
        else:
            spec["reference"] = ref_name
        if "price" in opts:
            spec["price"] = opts["price"]
        out[case_id] = {"filter": eagle3_report(read_run(run), hosts, spec["gates"], _reference(ref_name), run_id=case_id,
                                                price=opts.get("price")), "run": run}
        (run / "verdict.json").write_text(json.dumps(STALE))
        runs.append(spec)
    proc = report(results, runs)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out


def test_the_table_covers_enough_runs():
    assert len(CASES) >= 25
    assert len({c[0] for c in CASES}) == len(CASES)
    assert all(c[2] == "" or c[1] for c in CASES)  # every derived case names its real source


@pytest.mark.parametrize(("case_id", "ok", "message"), [(c[0], c[6], c[7]) for c in CASES], ids=[c[0] for c in CASES])
def test_verdict_message_and_no_stale_verdict(judged, case_id, ok, message):
    result = judged[case_id]["filter"]
    assert result["verdict"]["ok"] is ok, result["lines"]
    assert message in _texts(result), _texts(result)
    assert result["lines"][0].startswith(f"verdict: {'OK' if ok else 'FAILED'} (")
    run = judged[case_id]["run"]
    written = strict_json((run / "verdict.json").read_text())
    assert written["run_id"] == case_id and written["status"] == "complete"  # the stale OK is gone
    assert written["ok"] is ok
    summary = strict_json((run / "summary.json").read_text())
    assert (summary["ok"], summary["status"]) == (ok, "complete")
    md = (run / "report.md").read_text()
    assert f"**Verdict: {'OK' if ok else 'FAILED'}**" in md
    assert " ".join(message.split()) in " ".join(md_text(md).split())
    assert {line.rsplit(",", 1)[-1] for line in (run / "report.csv").read_text().splitlines()[1:]} <= {"OK" if ok else "FAILED"}


def test_a_report_that_crashes_leaves_no_stale_ok(judged, tmp_path):
    """A template that cannot render, over the whole OK report of an earlier attempt (the five files the role wrote
    for the agree case): every file of the run says "report failed" with the reason, report.csv is removed, and no
    file says OK (before the result validator only verdict.json was rewritten; report.html and report.md kept saying OK)."""
    from test_result_checks import says_ok
    results = tmp_path / "results"
    host(results / "agree", "agree")
    for name in ("verdict.json", "summary.json", "report.md", "report.html", "report.csv"):
        shutil.copy(judged["agree"]["run"] / name, results / "agree" / name)
    assert len(says_ok(results / "agree")) == 5  # the stale report says OK in every file
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "templates", templates)
    (templates / "report.html.j2").write_text("{{ __no_such_variable.at_all }}\n")
    proc = report(results, [{"run_id": "agree", "hosts": [H], "templates_dir": str(templates)}])
    assert proc.returncode != 0
    run = results / "agree"
    written = strict_json((run / "verdict.json").read_text())
    assert (written["ok"], written["status"], written["run_id"]) == (False, "report failed", "agree")
    assert written["error"].startswith(f"the report could not be made from {run} at \"Write report.md")
    assert "report.html" in written["error"] or "__no_such_variable" in written["error"]
    assert 'verdict.json says "report failed"' in " ".join(proc.stdout.split())
    assert says_ok(run) == [] and not (run / "report.csv").exists()
    assert strict_json((run / "summary.json").read_text()) == written
    assert "**Verdict: FAILED** (report failed)" in (run / "report.md").read_text()
