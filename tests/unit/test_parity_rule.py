"""The parity gate's rule on recorded completions: vLLM's share on neuron, exact on CPU, the counting prompt always.

The runs are DERIVED from tests/fixtures/runs/trained (a real rehearsal run of the trained pair): its baseline's
and eagle3's real greedy texts, cycled over the prompt set the role sends on neuron (the counting prompt and vLLM's
100 generated prompts), then eagle3's mutated where a near-tie flip would change it (one word of the text replaced,
as a flipped token changes the rest of a greedy completion). The rule: vllm-project/vllm
tests/v1/e2e/test_spec_decode.py at 0130080b3dec7ade06a538659d1ebb98a55f1b24, test_eagle_correctness,
`assert matches > int(0.6 * len(ref_outputs))`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import _required, eagle3_parity_rule
from ansible_collections.eagle3.trn2.plugins.module_utils.report.engine import eagle3_report
from ansible_collections.eagle3.trn2.plugins.module_utils.results.run_dir import read_run
from ansible_collections.eagle3.trn2.plugins.module_utils.report.parity_prompts import (
    COUNTING_PROMPT, vllm_test_prompts)
from conftest import RUNS

H = "rehearsal-1"
REHEARSAL = {"reference": {"enforce": False, "tolerance": 0.30}}
NEURON = dict(REHEARSAL, parity={"min_match_rate": 61})  # the project's defaults on neuron
CPU = REHEARSAL  # the default: min_match_rate 100
REFERENCE = json.loads((RUNS.parent / "references/rehearsal-fixture-pair.json").read_text())
PROMPTS = [COUNTING_PROMPT] + vllm_test_prompts(100)


def flip(text: str) -> str:
    """A near-tie flip: the last word becomes another word of the same text."""
    head, last = text.rsplit(" ", 1)
    other = next(w for w in reversed(text.split()) if w != last)
    return f"{head} {other}"


@pytest.fixture
def neuron_set(run_copy):
    """The trained run with the neuron prompt set; returns (run dir, edit(profile, fn))."""
    run = run_copy(**{H: f"trained/{H}"})

    def edit(profile: str, change) -> None:
        path = run / H / f"{profile}.completions.json"
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    for profile in ("baseline", "eagle3"):
        def widen(data: dict) -> None:
            texts = data["completions"]
            data["completions"] = [texts[i % len(texts)] for i in range(len(PROMPTS))]
            data["prompts"] = list(PROMPTS)
        edit(profile, widen)
    return run, edit


def flip_generated(count: int):
    def change(data: dict) -> None:
        for i in range(1, count + 1):  # index 0 is the counting prompt
            data["completions"][i] = flip(data["completions"][i])
    return change


def parity(report: dict) -> list[dict]:
    return [g for g in report["summary"]["gates"] if g["gate"] == "parity"]


def verdict_of(report: dict) -> dict:
    """The profile's verdict line ("N of M prompts identical ..."), not its differences' lines."""
    (verdict,) = [g for g in parity(report) if " prompts identical to the " in g["message"]]
    return verdict


def test_the_kept_rehearsal_runs_pass_both_rules():
    for run in ("trained", "agree", "sweep", "trained-sweep"):
        for gates in (CPU, NEURON):
            report = eagle3_report(read_run(RUNS / run), [H], gates, REFERENCE)
            gates_ = parity(report)
            assert gates_ and all(g["ok"] for g in gates_), (run, [g["message"] for g in gates_])


def test_near_tie_flips_pass_vllms_rule_and_fail_the_exact_one(neuron_set):
    run, edit = neuron_set
    edit("eagle3", flip_generated(39))  # 61 of vLLM's 100 identical: more than 60 %
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    verdict = verdict_of(report)
    assert verdict["ok"] and verdict["enforced"] and (verdict["value"], verdict["threshold"]) == (62, 61)
    assert verdict["message"] == (
        "eagle3: 62 of 101 prompts identical to the baseline's (rule: 'Count from 1 to 10, separated by commas.' "
        "and the smoke test identical, and at least 61 % of the other 100 identical, i.e. 61)")
    assert not [g for g in report["verdict"]["failing"] if g["gate"] == "parity"]
    # Every tolerated difference is shown, its first divergence and both texts, as an informational line.
    shown = [g for g in report["verdict"]["informational"] if g["gate"] == "parity"]
    assert len(shown) == 39 and not any(g["enforced"] for g in shown)
    assert shown[0]["message"].startswith("within the rule, shown: eagle3: greedy output differs from baseline for "
                                          f"prompt {PROMPTS[1]!r} from character ")
    assert shown[0]["value"] == flip(shown[0]["threshold"])  # got, and the baseline's text
    assert f"parity {H}: {verdict['message']}" in report["lines"]
    assert sum(line.startswith(f"info [parity] {H}: within the rule") for line in report["lines"]) == 39
    assert sum(p["tolerated"] for p in report["summary"]["parity"][H]) == 39
    # The CPU rehearsal's rule is exact: the same completions fail, each difference a FAIL line.
    exact = eagle3_report(read_run(run), [H], CPU, REFERENCE)
    failing = [g for g in exact["verdict"]["failing"] if g["gate"] == "parity"]
    assert not exact["verdict"]["ok"] and len(failing) == 1 + 39
    assert failing[0]["message"].endswith("(rule: every prompt and the smoke test identical); "
                                          "61 of the other 100 identical, fewer than 100")
    assert exact["summary"]["sweep"][H]["winner"] is None  # a failing profile is never recommended


def test_sixty_of_a_hundred_is_not_more_than_sixty(neuron_set):
    run, edit = neuron_set
    edit("eagle3", flip_generated(40))
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    verdict = verdict_of(report)
    assert not verdict["ok"] and verdict["message"].endswith("60 of the other 100 identical, fewer than 61")
    assert not report["verdict"]["ok"]
    assert len([g for g in report["verdict"]["failing"] if g["gate"] == "parity"]) == 1 + 40
    # min_match_rate 61 (a floor) is vLLM's `matches > int(0.6 * len(ref_outputs))` for its 100 prompts.
    assert all((m >= _required(61, 100)) is (m > int(0.6 * 100)) for m in range(101))
    assert (_required(100, 3), _required(61, 0), _required(0, 100), _required(60.5, 200)) == (3, 0, 0, 121)


def test_the_counting_prompt_must_match_whatever_the_share(neuron_set):
    run, edit = neuron_set
    edit("eagle3", lambda data: data["completions"].__setitem__(0, flip(data["completions"][0])))
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    verdict = verdict_of(report)
    assert not verdict["ok"]
    assert verdict["message"].startswith("eagle3: 100 of 101 prompts identical")
    assert verdict["message"].endswith(f"{COUNTING_PROMPT!r} differs: it must be identical whatever the share")
    failing = [g for g in report["verdict"]["failing"] if g["gate"] == "parity"]
    assert len(failing) == 2 and f"for prompt {COUNTING_PROMPT!r} from character" in failing[1]["message"]


def test_the_smoke_test_must_match_whatever_the_share(neuron_set):
    run, edit = neuron_set
    edit("eagle3", lambda data: data["smoke_test"].__setitem__("text", flip(data["smoke_test"]["text"])))
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    verdict = verdict_of(report)
    assert not verdict["ok"] and verdict["message"].startswith("eagle3: 101 of 101 prompts identical")
    assert verdict["message"].endswith("the smoke test differs: it must be identical whatever the share")
    assert any("the tutorial's smoke test differs from baseline's" in g["message"] for g in report["verdict"]["failing"])


@pytest.mark.parametrize(("profile", "change", "message"), [
    ("eagle3", lambda d: d["completions"].pop(), "eagle3: 100 completions kept for 101 prompts (an incomplete file"),
    ("baseline", lambda d: d["completions"].pop(), "baseline: 100 completions kept for 101 prompts (an incomplete file"),
    ("eagle3", lambda d: d.update(completions=[]), "eagle3: no greedy completions kept to compare with baseline's"),
    ("baseline", lambda d: d.update(prompts=[], completions=[]),
     "no greedy completions kept from the baseline profile to compare with"),
    ("eagle3", lambda d: d.update(prompts=d["prompts"][:50], completions=d["completions"][:50]),
     "eagle3: greedy completions were kept for other prompts than baseline's"),
])
def test_missing_or_short_completions_fail_with_a_clear_message(neuron_set, profile, change, message):
    run, edit = neuron_set
    edit(profile, change)
    for gates in (NEURON, CPU):
        report = eagle3_report(read_run(run), [H], gates, REFERENCE)
        failing = [g for g in report["verdict"]["failing"] if g["gate"] == "parity"]
        assert [g["message"] for g in failing if g["message"].startswith(message)], [g["message"] for g in failing]
        assert not report["verdict"]["ok"]


def test_a_missing_completions_file_fails(neuron_set):
    run, _ = neuron_set
    (run / H / "eagle3.completions.json").unlink()
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    assert [g["message"] for g in report["verdict"]["failing"] if g["gate"] == "parity"] == [
        "eagle3: no greedy completions kept to compare with baseline's"]


def test_an_exact_prompt_that_was_not_sent_fails():
    want = {"prompts": ["a", "b"], "completions": ["x", "y"]}
    judged = eagle3_parity_rule({"baseline": want, "eagle3": dict(want)}, rule={"min_match_rate": 61,
                                                                                "exact_prompts": [COUNTING_PROMPT]})
    (verdict,) = judged["profiles"]
    assert not verdict["ok"] and verdict["message"].endswith(
        f"{COUNTING_PROMPT!r} (exact_prompts) was not sent: nothing to hold it to")
    # Without exact prompts the share alone decides: 1 of 2 is below 61 %, 2 of 2 passes.
    assert eagle3_parity_rule({"baseline": want, "eagle3": dict(want)}, rule={"min_match_rate": 61})["profiles"][0]["ok"]
    half = {"prompts": ["a", "b"], "completions": ["x", "z"]}
    (verdict,) = eagle3_parity_rule({"baseline": want, "eagle3": half}, rule={"min_match_rate": 61})["profiles"]
    assert not verdict["ok"] and verdict["message"] == (
        "eagle3: 1 of 2 prompts identical to the baseline's (rule: at least 61 % of the 2 identical, i.e. 2); "
        "1 of the 2 identical, fewer than 2")


def test_the_report_files_show_the_rule(neuron_set):
    """report.html lists the verdict line and marks tolerated rows (the template reads summary.parity_verdicts)."""
    run, edit = neuron_set
    edit("eagle3", flip_generated(3))
    report = eagle3_report(read_run(run), [H], NEURON, REFERENCE)
    (verdict,) = report["summary"]["parity_verdicts"][H]
    assert verdict["ok"] and (verdict["matched"], verdict["total"], verdict["required"], verdict["compared"]) == (
        98, 101, 61, 100)
    assert json.loads(json.dumps(report["summary"]))["parity"][H][0]["tolerated"] is True


def test_the_fixture_prompts_are_the_roles_prompt_set():
    """The derived runs hold the prompts the role sends on neuron: its defaults, the counting prompt first."""
    import yaml
    defaults = yaml.safe_load((Path(__file__).resolve().parents[2] / "roles/vllm_bench/defaults/main.yml").read_text())
    import jinja2
    # the role's defaults as they resolve on neuron (they read eagle3_accelerator)
    on_neuron = {k: jinja2.Environment().from_string(str(v)).render(eagle3_accelerator="neuron")
                 for k, v in defaults.items() if k in ("vllm_bench_generated_prompts", "vllm_bench_prompt_max_tokens")}
    assert defaults["vllm_bench_prompts"] == [COUNTING_PROMPT]
    assert (on_neuron["vllm_bench_generated_prompts"], on_neuron["vllm_bench_prompt_max_tokens"]) == ("100", "10")
    assert defaults["vllm_bench_prompts"] + vllm_test_prompts(100) == PROMPTS
