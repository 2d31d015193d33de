"""A run judged: the gates' settings (defined here once), the gates themselves and the verdict.

Pure functions over the rows of plugins/module_utils/report/compare.py and the raw results, tested with pytest (tests/).
"""
from __future__ import annotations

from typing import Any, Iterable

from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import BASELINE, SPEC_KEYS, eagle3_parity_rule
from ansible_collections.eagle3.trn2.plugins.module_utils.results.bands import acceptance_band_gate
from ansible_collections.eagle3.trn2.plugins.module_utils.report.parity_prompts import COUNTING_PROMPT
from ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks import WORKLOAD_KEYS, workload_diff


# The gates' settings, defined here only: eagle3_gates (and the bench_report role's input bench_report_gates,
# the project's eagle3_gates) give per-gate overrides of these.
# parity: min_match_rate is a floor in percent of the prompts not in exact_prompts (100: every prompt identical, the
# CPU rehearsal's rule); on neuron the project sets 61, vLLM's rule over its 100 test prompts (more than 60 %;
# vllm-project/vllm tests/v1/e2e/test_spec_decode.py at 0130080b3dec7ade06a538659d1ebb98a55f1b24,
# test_eagle_correctness). exact_prompts must be identical whatever the share: the tutorial's counting prompt.
DEFAULT_GATES: dict[str, dict[str, Any]] = {
    "parity": {"enforce": True, "min_match_rate": 100.0, "exact_prompts": [COUNTING_PROMPT]},
    "acceptance": {"enforce": True, "min_rate": 30.0},
    "speedup": {"enforce": True, "min": 1.0},
    "reference": {"enforce": True, "tolerance": 0.10},
    # plugins/module_utils/results/bands.py: enforced where a band exists for the run's exact key, informational where only a
    # near one does, skipped (and passing) where there is none
    "acceptance_band": {"enforce": True},
}

ACCEPTANCE_ADVICE = ("the tutorial's advice: with an acceptance rate below roughly 30 %, stop tuning "
                     "num_speculative_tokens; the draft does not predict this workload well enough "
                     "for EAGLE3 to pay off")


def _truthy(value: Any) -> bool:
    """Ansible-style booleans: "false", "no", "off", "0" (any case) are false."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "")
    return bool(value)


def eagle3_shown(value: float, bound: float, floor: bool, digits: int) -> tuple[str, str, bool]:
    """(value text, bound text, ok): a floor passes when value >= bound, a ceiling when value <= bound.

    The comparison is exact; the texts get more decimals than `digits` until they show the same
    order as the comparison, so "30.0 % < 30 %" or "1.00x < 1.00x" is never printed.
    """
    ok = value >= bound if floor else value <= bound
    for places in range(digits, digits + 7):
        shown, limit = round(value, places), round(bound, places)
        if (shown >= limit if floor else shown <= limit) == ok and (ok or shown != limit):
            break
    return f"{value:.{places}f}", f"{bound:.{places}f}", ok


def eagle3_workload_diff(want: dict[str, Any], got: dict[str, Any], keys: Iterable[str] | None = None) -> list[str]:
    """Keys on which two workloads differ, as "key got vs want" texts (a key absent from both is skipped): the
    validator's rule (plugins/module_utils/results/result_checks.py, workload_diff)."""
    return workload_diff(want, got, keys)


def _evidence(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]], baseline: str) -> list[tuple]:
    """(profile, ok, message) per profile: clean requests, the baseline's workload, a real baseline."""
    checks = []
    base = results.get(baseline, {})
    for row in rows:
        # Every request completed and none failed: the validator's (result_checks.completeness_problems), which moves
        # an incomplete file to the host's bad files before any gate reads it; here every result is complete.
        name, data, problems = row["profile"], results[row["profile"]], []
        if data["total_output_tokens"] <= 0:
            problems.append("no output tokens")
        if name == baseline:
            spec = [k for k in SPEC_KEYS if k in data]
            if spec:
                problems.append(f"the baseline result has spec-decode metrics ({', '.join(spec)}): "
                                "its server speculated, so it is no baseline")
        else:
            diff = eagle3_workload_diff(base, data, WORKLOAD_KEYS)
            if diff:
                problems.append(f"workload differs from {baseline}'s: " + "; ".join(diff))
        checks.append((name, not problems, f"{name}: " + ("; ".join(problems) if problems else
                       f"{data['completed']}/{data['num_prompts']} requests completed, none failed, "
                       + ("no spec-decode metrics" if name == baseline else f"same workload as {baseline}"))))
    return checks


def _run_workload(row: dict[str, Any], result: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, Any]:
    """The workload one profile ran: the result's own keys, the rest from the host's manifest."""
    params = (manifest or {}).get("parameters") or {}
    workload = {"dataset": result.get("dataset", params.get("dataset_name")),
                "input_len": result.get("input_len", params.get("input_len")),
                "output_len": result.get("output_len", params.get("output_len")),
                "num_prompts": row.get("num_prompts"), "max_concurrency": result.get("max_concurrency"),
                "temperature": result.get("temperature", params.get("temperature")),
                "request_rate": result.get("request_rate")}
    if "seed" in result:
        workload["seed"] = result["seed"]
    # temperature null is a value ("the tool's default") when the manifest recorded it, else unknown
    return {k: v for k, v in workload.items() if v is not None or (k == "temperature" and "temperature" in params)}


def eagle3_gate_settings(gates: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Every gate's settings: DEFAULT_GATES with the given per-gate overrides (unknown gates left out)."""
    return {name: dict(DEFAULT_GATES[name], **(gates or {}).get(name, {})) for name in DEFAULT_GATES}


def eagle3_gates(hosts: dict[str, list[dict[str, Any]]], gates: dict[str, dict[str, Any]] | None = None,
                 reference: dict[str, Any] | None = None,
                 parity: dict[str, dict[str, Any]] | None = None,
                 baseline: str = BASELINE, results: dict[str, dict[str, dict[str, Any]]] | None = None,
                 manifests: dict[str, dict[str, Any]] | None = None, key: dict[str, Any] | None = None,
                 bands: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One verdict per (gate, host, profile). Gates:

    evidence    always enforced: every request completed, same workload as the baseline, a baseline
                without spec-decode metrics (needs `results`, the raw bench JSON per host)
    parity      per speculative profile, the verdict of eagle3_parity_rule (`parity` maps a host to it): at
                least min_match_rate % of the prompts identical to the baseline's, exact_prompts and the smoke
                test identical, the completions kept; a mismatch the rule tolerates is informational
    acceptance  spec_decode_acceptance_rate (percent) at least min_rate
    speedup     output_throughput / baseline's at least min (rounds > 1: the lower bound of its paired interval)
    reference   output_throughput at least reference * (1 - tolerance) and median_tpot_ms at most
                reference * (1 + tolerance), per profile named in the reference; only when the
                reference's workload is the run's, else skipped with the difference named
    acceptance_band  the acceptance length and every per-position rate within the band of the run's `key` (+ the
                profile's k) from `bands` (plugins/module_utils/results/bands.py): enforced for an exact key, informational
                for a near one, skipped and passing where there is none
    The reference is compared only when it was measured with the run's models (its `key`, against `key`).
    A gate with enforce false is informational: reported, never failing the run. An enforced gate
    without its evidence (skipped) fails.
    """
    conf = eagle3_gate_settings(gates)
    out: list[dict[str, Any]] = []

    def add(gate: str, host: str, profile: str | None, ok: bool, value: Any, threshold: Any, message: str,
            skipped: bool = False, informational: bool = False) -> None:
        enforced = not informational and (gate == "evidence" or _truthy(conf[gate]["enforce"]))
        out.append({"gate": gate, "host": host, "profile": profile, "ok": ok, "skipped": skipped,
                    "enforced": enforced, "value": value,
                    "threshold": threshold, "message": message})

    for host, rows in sorted(hosts.items()):
        spec_rows = [r for r in rows if r["profile"] != baseline]
        if results is not None:
            for name, ok, message in _evidence(rows, results.get(host, {}), baseline):
                add("evidence", host, name, ok, None, None, message)
        if parity is not None:
            judged = parity.get(host) or eagle3_parity_rule({}, baseline, rule=conf["parity"])
            for v in judged["profiles"]:
                add("parity", host, v["profile"], v["ok"], v["matched"], v["required"], v["message"])
            # Every differing prompt stays in the report, with its first divergence and both texts: failing
            # with its profile, informational where the rule tolerates it.
            for p in judged["problems"]:
                if p["kind"] != "evidence":
                    add("parity", host, p["profile"], False, p["got"], p["baseline"],
                        ("within the rule, shown: " if p["tolerated"] else "") + p["message"],
                        informational=p["tolerated"])
        for row in spec_rows:
            name = row["profile"]
            rate = row.get("acceptance_rate")
            floor = float(conf["acceptance"]["min_rate"])
            if rate is None:
                add("acceptance", host, name, False, None, floor,
                    f"{name}: no spec_decode_* metrics in the result (the server did not draft)")
            else:
                shown, limit, ok = eagle3_shown(rate, floor, True, 1)
                add("acceptance", host, name, ok, rate, floor,
                    f"{name}: acceptance {shown} % {'meets' if ok else 'is below'} the floor of at least {limit} %"
                    + ("" if ok else f"; {ACCEPTANCE_ADVICE}"))
            speedup = row.get("speedup")
            minimum = float(conf["speedup"]["min"])
            interval = row.get("speedup_interval") or {}
            # the schedulers the speedup compares, where the report engine found them (report/scheduling.py)
            sched = (row.get("scheduling") or {}).get("text")
            sched = f" ({sched})" if sched else ""
            if speedup is None:
                add("speedup", host, name, False, None, minimum, f"{name}: no baseline to compute a speedup")
            elif interval.get("low") is not None:
                # rounds > 1: the gate rests on the lower bound of the paired interval (plugins/module_utils/results/rounds.py)
                shown, limit, ok = eagle3_shown(interval["low"], minimum, True, 2)
                add("speedup", host, name, ok, interval["low"], minimum,
                    f"{name}: speedup {speedup:.2f}x [{interval['low']:.2f}, {interval['high']:.2f}] over "
                    f"{interval['n']} rounds, its lower bound {shown}x {'meets' if ok else 'is below'} the floor of "
                    f"at least {limit}x{sched}")
            else:
                shown, limit, ok = eagle3_shown(speedup, minimum, True, 2)
                add("speedup", host, name, ok, speedup, minimum,
                    f"{name}: speedup {shown}x {'meets' if ok else 'is below'} the floor of at least {limit}x{sched}")
            result = (results or {}).get(host, {}).get(name, {})
            positions = result.get("spec_decode_per_position_acceptance_rates")
            if key and isinstance(positions, list) and positions:
                band = acceptance_band_gate(bands or [], dict(key, k=len(positions)),
                                            result.get("spec_decode_acceptance_length"), positions)
                add("acceptance_band", host, name, band["ok"], result.get("spec_decode_acceptance_length"),
                    band["position"], f"{name}: {band['message']}", skipped=band["skipped"],
                    informational=not band["enforced"])
        _reference_gates(add, host, rows, conf["reference"], _keyed(reference, key), (results or {}).get(host, {}),
                         (manifests or {}).get(host))
    return out


def _keyed(reference: dict[str, Any] | None, key: dict[str, Any] | None) -> dict[str, Any] | None:
    """The reference when it was measured with the run's models (its key's target and draft), else a reference that
    names the difference (judged as a workload difference: skipped, naming it)."""
    theirs = (reference or {}).get("key")
    if not reference or not key or not isinstance(theirs, dict):
        return reference
    differ = [f"{f} {theirs.get(f)} (this run: {key.get(f)})" for f in ("target", "draft") if theirs.get(f) != key.get(f)]
    return dict(reference, models_differ=differ) if differ else reference


def _reference_gates(add: Any, host: str, rows: list[dict[str, Any]], conf: dict[str, Any],
                     reference: dict[str, Any] | None, results: dict[str, dict[str, Any]],
                     manifest: dict[str, Any] | None) -> None:
    """Floors (throughput) and ceilings (TPOT) from a reference measured with the same workload."""
    name = (reference or {}).get("name", "reference")
    if not reference or not reference.get("profiles"):
        if _truthy(conf["enforce"]):
            add("reference", host, None, False, None, None,
                "no reference results set (bench_report_reference is empty) for the enforced reference gate",
                skipped=True)
        return
    if reference.get("models_differ"):
        add("reference", host, None, False, None, None,
            f"skipped: the reference ({name}) was measured with other models: " + "; ".join(reference["models_differ"]),
            skipped=True)
        return
    matched = [r for r in rows if r["profile"] in reference["profiles"]]
    if not matched:
        add("reference", host, None, False, None, None,
            f"no result of a profile the reference names ({', '.join(sorted(reference['profiles']))})", skipped=True)
    tol = float(conf["tolerance"])
    for row in matched:
        profile, ref = row["profile"], reference["profiles"][row["profile"]]
        if not isinstance(reference.get("workload"), dict):
            add("reference", host, profile, False, None, None,
                f"{profile}: skipped, the reference ({name}) does not say which workload it was measured with",
                skipped=True)
            continue
        diff = eagle3_workload_diff(reference["workload"],
                                    _run_workload(row, results.get(profile, {}), manifest), reference["workload"])
        if diff:
            add("reference", host, profile, False, None, None,
                f"{profile}: skipped, the run's workload differs from the reference's ({name}): " + "; ".join(diff),
                skipped=True)
            continue
        for metric, floor, unit in (("output_throughput", True, "tok/s"), ("median_tpot_ms", False, "ms")):
            if metric not in ref or row.get(metric) is None:
                continue
            bound = ref[metric] * ((1 - tol) if floor else (1 + tol))
            shown, limit, ok = eagle3_shown(row[metric], bound, floor, 2)
            add("reference", host, profile, ok, row[metric], bound,
                f"{profile}: {metric} {shown} {unit} {'meets' if ok else 'misses'} "
                f"{'at least' if floor else 'at most'} {limit} {unit} "
                f"(reference {ref[metric]:.2f} {'minus' if floor else 'plus'} {tol:.0%}; "
                f"{row[metric] / ref[metric]:.2f}x the reference, {name})")


def eagle3_verdict(gate_results: list[dict[str, Any]], failed_hosts: dict[str, str] | None = None,
                   reasons: list[str] | None = None) -> dict[str, Any]:
    """{"ok": bool, "status": "complete", "failing": [...], "informational": [...], "failed_hosts": {...}, "reasons": [...]}.

    OK needs evidence: at least one gate checked, no failed host, no failing enforced gate, no reason against.
    """
    failing = [g for g in gate_results if g["enforced"] and not g["ok"]]
    informational = [g for g in gate_results if not g["enforced"] and not g["ok"]]
    reasons = list(reasons or [])
    if not gate_results:
        reasons.append("no gate was checked")
    return {"ok": not failing and not failed_hosts and not reasons, "status": "complete",
            "failing": failing, "informational": informational, "reasons": reasons,
            "failed_hosts": failed_hosts or {}, "gates_checked": len(gate_results)}
