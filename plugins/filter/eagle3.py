"""Filters for the EAGLE3 benchmark: comparison of `vllm bench serve` results (profiles: profiles.py).

Pure functions over plain dicts/lists so they are tested with pytest directly (tests/), on
result JSON produced by real rehearsal runs.
"""
from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, Iterable

DOCUMENTATION = r"""
  name: eagle3
  short_description: EAGLE3 benchmark helpers (profiles, comparison)
  description:
    - C(eagle3_compare) compares each profile's bench result with the baseline's.
    - C(eagle3_table) formats a comparison as text lines.
    - C(eagle3_parity) lists greedy completions that differ from the baseline's.
    - C(eagle3_sweep) recommends the fastest speculative profile that passes every enforced gate.
    - C(eagle3_fleet) aggregates hosts per profile (median/min/max) and flags outliers.
    - C(eagle3_shown) formats a value and its threshold at a precision that shows the comparison.
    - C(eagle3_gates) judges a run against floors and a reference; C(eagle3_verdict) sums up.
    - C(eagle3_gate_settings) gives every gate's settings, the defaults with per-gate overrides applied.
    - C(eagle3_report) does all of it for one run directory on the controller.
"""

BASELINE = "baseline"
METRICS = ("output_throughput", "median_tpot_ms", "median_ttft_ms")
SPEC_KEYS = (
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
)


def eagle3_is_cidr(value: Any) -> bool:
    """True for an IPv4/IPv6 network in CIDR form ("203.0.113.0/24"); host bits must be zero."""
    if not isinstance(value, str) or "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        return False
    return True


def _ratio(new: float | None, old: float | None) -> float | None:
    if new is None or old in (None, 0):
        return None
    return new / old


ROW_KEYS = ("completed", "failed", "num_prompts", "total_output_tokens", "p99_ttft_ms", "p99_tpot_ms")
# What one bench run was asked to do; every profile of a host must match its baseline on each key
# present in either result (`--metadata` adds dataset/input_len/output_len/temperature/seed).
WORKLOAD_KEYS = ("dataset", "input_len", "output_len", "num_prompts", "max_concurrency", "request_rate",
                 "burstiness", "temperature", "seed", "tokenizer_id", "model_id", "total_input_tokens")
MANIFEST_KEYS = ("run_id", "started", "finished", "project_revision", "deployed", "instance", "parameters", "sha256")
# A file is a `vllm bench serve` result only with these numeric keys.
RESULT_KEYS = ("completed", "failed", "num_prompts", "total_output_tokens", "output_throughput",
               "median_tpot_ms", "median_ttft_ms")


def _first_ms(data: dict[str, Any], key: str) -> float | None:
    """First request's value of a per-request list in seconds (kept with --save-detailed), in ms."""
    values = data.get(key)
    if isinstance(values, list) and values and _is_number(values[0]):
        return 1000.0 * values[0]
    return None


def eagle3_compare(results: dict[str, dict[str, Any]], baseline: str = BASELINE,
                   price: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per profile (baseline first): the tutorial's metrics and the ratios to baseline.

    speedup = output_throughput / baseline's; tpot_ratio = median_tpot_ms / baseline's.
    Acceptance rate is in percent (as vllm bench writes it); per-position rates are fractions.
    With price {"usd_per_hour": ...}: cost_per_1m = USD per 1M output tokens at the measured
    throughput, saving = 1 - cost / baseline's cost.
    """
    base = results.get(baseline, {})
    hourly = (price or {}).get("usd_per_hour")
    rows = []
    for name in sorted(results, key=lambda n: (n != baseline, n)):
        data = results[name]
        row: dict[str, Any] = {"profile": name}
        for key in METRICS + ROW_KEYS:
            row[key] = data.get(key)
        for key in SPEC_KEYS:
            row[key.replace("spec_decode_", "")] = data.get(key)
        row["per_position_acceptance_pct"] = [100.0 * r for r in row["per_position_acceptance_rates"] or []
                                              if _is_number(r)]
        row["first_ttft_ms"] = _first_ms(data, "ttfts")
        row["first_latency_ms"] = _first_ms(data, "latencies")
        row["speedup"] = _ratio(data.get("output_throughput"), base.get("output_throughput"))
        row["tpot_ratio"] = _ratio(data.get("median_tpot_ms"), base.get("median_tpot_ms"))
        throughput = data.get("output_throughput")
        row["cost_per_1m"] = (float(hourly) / (throughput * 3600) * 1e6
                              if _is_number(hourly) and _is_number(throughput) and throughput > 0 else None)
        rows.append(row)
    base_cost = rows[0]["cost_per_1m"] if rows and rows[0]["profile"] == baseline else None
    for row in rows:
        row["saving"] = (1 - row["cost_per_1m"] / base_cost
                         if row["cost_per_1m"] is not None and base_cost and row["profile"] != baseline else None)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def eagle3_table(rows: list[dict[str, Any]]) -> list[str]:
    """Fixed-width text table of eagle3_compare rows."""
    header = (f"{'profile':<14}{'out tok/s':>11}{'TPOT ms':>9}{'p99':>8}{'TTFT ms':>9}{'p99':>8}"
              f"{'speedup':>9}{'accept %':>10}{'length':>8}")
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['profile']:<14}{_fmt(row['output_throughput'], '.1f'):>11}"
            f"{_fmt(row['median_tpot_ms'], '.2f'):>9}{_fmt(row.get('p99_tpot_ms'), '.2f'):>8}"
            f"{_fmt(row['median_ttft_ms'], '.2f'):>9}{_fmt(row.get('p99_ttft_ms'), '.2f'):>8}"
            f"{_fmt(row['speedup'], '.2f'):>9}{_fmt(row['acceptance_rate'], '.1f'):>10}"
            f"{_fmt(row['acceptance_length'], '.2f'):>8}"
        )
    return lines


def eagle3_parity(completions: dict[str, dict[str, Any]], baseline: str = BASELINE,
                  profiles: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Problems with the greedy completions of every other profile against the baseline's, prompt by prompt.

    `completions` maps profile -> {"prompts": [...], "completions": [...]} (the *.completions.json
    files). Speculative decoding is lossless: at temperature 0 the text must be identical. Missing
    evidence is a problem too: no baseline completions, none kept at all, or none for a profile in
    `profiles` (the speculative profiles that have results).
    """
    def problem(profile: str, message: str, prompt: Any = None, expected: Any = None, got: Any = None) -> dict:
        return {"profile": profile, "prompt": prompt, "baseline": expected, "got": got, "message": message}

    want = completions.get(baseline)
    if not want or not want.get("prompts"):
        return [problem(baseline, f"no greedy completions kept from the {baseline} profile to compare with")]
    problems = []
    names = sorted(set(profiles or []) | set(completions))
    for name in names:
        if name == baseline:
            continue
        got = completions.get(name)
        if not got or not got.get("completions"):
            problems.append(problem(name, f"{name}: no greedy completions kept to compare with {baseline}'s"))
            continue
        if got.get("prompts") != want["prompts"]:
            problems.append(problem(name, f"{name}: greedy completions were kept for other prompts than {baseline}'s"))
            continue
        for i, prompt in enumerate(want["prompts"]):
            expected = want["completions"][i] if i < len(want["completions"]) else None
            actual = got["completions"][i] if i < len(got["completions"]) else None
            if actual != expected or expected is None:
                where = ""
                if isinstance(expected, str) and isinstance(actual, str):
                    # The first divergence: a lossless decoder never diverges; where it does, say where.
                    at = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
                    where = f" from character {at} of {len(expected)} (identical before: {expected[max(0, at - 24):at]!r})"
                problems.append(problem(
                    name, f"{name}: greedy output differs from {baseline} for prompt {prompt!r}{where}: "
                          f"expected {expected!r}, got {actual!r}", prompt, expected, actual))
    return problems


def eagle3_sweep(rows: list[dict[str, Any]], baseline: str = BASELINE,
                 failing: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The tutorial's rule: recommend the highest output_throughput, not the highest acceptance.

    Only a profile that passes every enforced gate (`failing` maps a profile to its failures) is
    recommended; when none does, `winner` is None and `why` says what each one failed.
    """
    failing = failing or {}
    spec = [r for r in rows if r["profile"] != baseline and r.get("output_throughput") is not None]
    passing = [r for r in spec if not failing.get(r["profile"])]
    rejected = {r["profile"]: failing[r["profile"]] for r in spec if failing.get(r["profile"])}
    accepted = [r for r in passing if r.get("acceptance_rate") is not None]
    # Among equal acceptance rates prefer the faster profile: "differs" then means a real trade-off.
    best = max(accepted, key=lambda r: (r["acceptance_rate"], r["output_throughput"])) if accepted else None
    sweep: dict[str, Any] = {"winner": None, "winner_output_throughput": None, "winner_speedup": None,
                             "best_acceptance": best["profile"] if best else None,
                             "best_acceptance_rate": best["acceptance_rate"] if best else None,
                             "differs": False, "profiles": len(spec), "rejected": rejected, "why": None}
    if not spec:
        sweep["why"] = "no speculative profile has results"
    elif not passing:
        sweep["why"] = "no speculative profile passes every enforced gate: " + "; ".join(
            f"{name}: {reasons[0]}" for name, reasons in sorted(rejected.items()))
    else:
        winner = max(passing, key=lambda r: r["output_throughput"])
        sweep.update(winner=winner["profile"], winner_output_throughput=winner["output_throughput"],
                     winner_speedup=winner.get("speedup"),
                     differs=best is not None and best["profile"] != winner["profile"])
    return sweep


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def eagle3_fleet(hosts: dict[str, list[dict[str, Any]]], outlier_tolerance: float = 0.10) -> dict[str, Any]:
    """Per profile across hosts: median/min/max of the tutorial's metrics, and outlier hosts.

    A host is an outlier for a profile when its output_throughput is more than `outlier_tolerance`
    (a fraction) below the median of the *other* hosts of that profile: with two hosts, the slower
    one is measured against the faster one (a fleet median would include the slow host itself).
    """
    by_profile: dict[str, dict[str, dict[str, Any]]] = {}
    for host, rows in hosts.items():
        for row in rows:
            by_profile.setdefault(row["profile"], {})[host] = row
    profiles = {}
    for profile, per_host in sorted(by_profile.items(), key=lambda kv: (kv[0] != BASELINE, kv[0])):
        stats: dict[str, Any] = {"hosts": len(per_host)}
        for metric in METRICS + ("p99_ttft_ms", "p99_tpot_ms", "speedup", "acceptance_rate", "acceptance_length",
                                 "cost_per_1m", "saving"):
            values = [r[metric] for r in per_host.values() if r.get(metric) is not None]
            stats[metric] = ({"median": _median(values), "min": min(values), "max": max(values)}
                             if values else None)
        outliers = []
        for host, row in sorted(per_host.items()):
            value = row.get("output_throughput")
            others = [r["output_throughput"] for h, r in per_host.items()
                      if h != host and r.get("output_throughput") is not None]
            if value is None or not others:
                continue
            reference = _median(others)
            if reference > 0 and value < reference * (1 - outlier_tolerance):
                outliers.append({"host": host, "output_throughput": value, "others_median": reference,
                                 "below_median": 1 - value / reference})
        stats["outliers"] = outliers
        profiles[profile] = stats
    return profiles


# The gates' settings, defined here only: eagle3_gates (and the bench_report role's input bench_report_gates,
# the project's eagle3_gates) give per-gate overrides of these.
DEFAULT_GATES: dict[str, dict[str, Any]] = {
    "parity": {"enforce": True},
    "acceptance": {"enforce": True, "min_rate": 30.0},
    "speedup": {"enforce": True, "min": 1.0},
    "reference": {"enforce": True, "tolerance": 0.10},
}

ACCEPTANCE_ADVICE = ("the tutorial's advice: with an acceptance rate below roughly 30 %, stop tuning "
                     "num_speculative_tokens; the draft does not predict this workload well enough "
                     "for EAGLE3 to pay off")


def _truthy(value: Any) -> bool:
    """Ansible-style booleans: "false", "no", "off", "0" (any case) are false."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "")
    return bool(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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


def _same(a: Any, b: Any) -> bool:
    """Workload values from JSON or --metadata strings: 512 == "512", 0 == "0.0", None only None."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def eagle3_workload_diff(want: dict[str, Any], got: dict[str, Any], keys: Iterable[str] | None = None) -> list[str]:
    """Keys on which two workloads differ, as "key got vs want" texts (a key absent from both is skipped)."""
    diffs = []
    for key in keys if keys is not None else sorted(set(want) | set(got)):
        if key not in want and key not in got:
            continue
        if key not in got:
            diffs.append(f"{key} not recorded")
        elif key not in want:
            diffs.append(f"{key} {got[key]!r} where the other records none")
        elif not _same(got[key], want[key]):
            diffs.append(f"{key} {got[key]!r} vs {want[key]!r}")
    return diffs


def _evidence(rows: list[dict[str, Any]], results: dict[str, dict[str, Any]], baseline: str) -> list[tuple]:
    """(profile, ok, message) per profile: clean requests, the baseline's workload, a real baseline."""
    checks = []
    base = results.get(baseline, {})
    for row in rows:
        name, data, problems = row["profile"], results[row["profile"]], []
        if data["failed"] != 0:
            problems.append(f"{data['failed']} of {data['num_prompts']} requests failed")
        if data["completed"] != data["num_prompts"]:
            problems.append(f"{data['completed']} of {data['num_prompts']} requests completed")
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
                 parity: dict[str, list[dict[str, Any]]] | None = None,
                 baseline: str = BASELINE, results: dict[str, dict[str, dict[str, Any]]] | None = None,
                 manifests: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One verdict per (gate, host, profile). Gates:

    evidence    always enforced: every request completed, same workload as the baseline, a baseline
                without spec-decode metrics (needs `results`, the raw bench JSON per host)
    parity      every speculative profile's greedy completions equal the baseline's (and exist)
    acceptance  spec_decode_acceptance_rate (percent) at least min_rate
    speedup     output_throughput / baseline's at least min
    reference   output_throughput at least reference * (1 - tolerance) and median_tpot_ms at most
                reference * (1 + tolerance), per profile named in the reference; only when the
                reference's workload is the run's, else skipped with the difference named
    A gate with enforce false is informational: reported, never failing the run. An enforced gate
    without its evidence (skipped) fails.
    """
    conf = eagle3_gate_settings(gates)
    out: list[dict[str, Any]] = []

    def add(gate: str, host: str, profile: str | None, ok: bool, value: Any, threshold: Any, message: str,
            skipped: bool = False) -> None:
        out.append({"gate": gate, "host": host, "profile": profile, "ok": ok, "skipped": skipped,
                    "enforced": gate == "evidence" or _truthy(conf[gate]["enforce"]), "value": value,
                    "threshold": threshold, "message": message})

    for host, rows in sorted(hosts.items()):
        spec_rows = [r for r in rows if r["profile"] != baseline]
        if results is not None:
            for name, ok, message in _evidence(rows, results.get(host, {}), baseline):
                add("evidence", host, name, ok, None, None, message)
        if parity is not None:
            problems = parity.get(host)
            if problems is None:
                problems = eagle3_parity({}, baseline)
            for p in problems:
                add("parity", host, p["profile"], False, p["got"], p["baseline"], p["message"])
            if not problems:
                add("parity", host, None, True, None, None,
                    f"greedy completions identical to the {baseline}'s for "
                    + ", ".join(r["profile"] for r in spec_rows))
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
            if speedup is None:
                add("speedup", host, name, False, None, minimum, f"{name}: no baseline to compute a speedup")
            else:
                shown, limit, ok = eagle3_shown(speedup, minimum, True, 2)
                add("speedup", host, name, ok, speedup, minimum,
                    f"{name}: speedup {shown}x {'meets' if ok else 'is below'} the floor of at least {limit}x")
        _reference_gates(add, host, rows, conf["reference"], reference, (results or {}).get(host, {}),
                         (manifests or {}).get(host))
    return out


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


def _read_json(path: Path) -> tuple[Any, str | None]:
    """(data, None) or (None, why the file is unusable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({exc.strerror if isinstance(exc, OSError) else exc})"
    if not text.strip():
        return None, "empty file"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"truncated or invalid JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"a JSON {type(data).__name__}, not an object"
    return data, None


def _foreign(kind: str, data: dict[str, Any]) -> str | None:
    """Why a JSON object is not what its file name says, or None."""
    if kind == "result":
        bad = [k for k in RESULT_KEYS if not _is_number(data.get(k))]
        return (f"not a vllm bench serve result (no numeric {', '.join(bad)})" if bad else None)
    if kind == "completions":
        if not isinstance(data.get("prompts"), list) or not isinstance(data.get("completions"), list):
            return "not a completions file (no prompts and completions lists)"
    if kind == "manifest":
        deployed = data.get("deployed")
        missing = [k for k in MANIFEST_KEYS if k not in data]
        missing += [f"deployed.{k}" for k in ("os", "kernel", "python", "pip", "deb")
                    if not isinstance(deployed, dict) or k not in deployed]
        missing += [k for k in ("parameters", "sha256") if not isinstance(data.get(k), dict)]
        return f"not a run manifest (no {', '.join(sorted(set(missing)))})" if missing else None
    return None


def load_run(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Read <run_dir>/<host>/*.json as fetched by the vllm_bench role.

    Per host: results {profile: bench JSON}, completions {profile: ...}, manifest, failure, and
    bad_files [{"file", "reason"}] for every file that is unreadable, empty, truncated, not an
    object or not what its name says. A result still being fetched (*.json.part) is not read.
    """
    hosts: dict[str, dict[str, Any]] = {}
    root = Path(run_dir)
    if not root.is_dir():
        return hosts
    for host_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        entry: dict[str, Any] = {"results": {}, "completions": {}, "manifest": None, "failure": None, "bad_files": []}
        for path in sorted(host_dir.glob("*.json")):
            if path.name in ("manifest.json", "failure.json"):
                kind, key = path.stem, None
            elif path.name.endswith(".completions.json"):
                kind, key = "completions", path.name[: -len(".completions.json")]
            else:
                kind, key = "result", path.stem
            data, why = _read_json(path)
            why = why or _foreign(kind, data)
            if why:
                entry["bad_files"].append({"file": f"{host_dir.name}/{path.name}", "reason": why})
            elif kind == "result":
                entry["results"][key] = data
            elif kind == "completions":
                entry["completions"][key] = data
            else:
                entry[kind] = data
        hosts[host_dir.name] = entry
    return hosts


def _expected_hosts(root: Path, hosts: list[str] | None) -> tuple[list[str], str, list[str]]:
    """The run's own host list (run.json, written when the run started) or else the given one."""
    path = root / "run.json"
    if path.exists():
        data, why = _read_json(path)
        listed = (data or {}).get("hosts")
        if why is None and isinstance(listed, list) and listed and all(isinstance(h, str) for h in listed):
            return sorted(listed), "run.json (written when the run started)", []
        problem = [f"{path.name}: {why or 'no host list'}; using bench_report_hosts"]
    else:
        problem = []
    return sorted(hosts or []), "bench_report_hosts (no run.json)", problem


def _host_problems(entry: dict[str, Any] | None, baseline: str) -> list[str]:
    if entry is None:
        return ["no results fetched (host failed before benchmarking or was unreachable)"]
    problems = [f"unusable file {b['file']}: {b['reason']}" for b in entry["bad_files"]]
    if entry["failure"]:
        f = entry["failure"]
        problems.insert(0, f"profile {f.get('profile')} failed at \"{f.get('task')}\": {f.get('reason')}")
    elif not entry["results"] and not problems:
        problems.append("no results fetched (host failed before benchmarking or was unreachable)")
    if entry["results"] and baseline not in entry["results"]:
        problems.append(f"no {baseline} result")
    if entry["results"] and not [p for p in entry["results"] if p != baseline]:
        problems.append("no speculative profile result")
    return problems


def _sweep_line(host: str, sweep: dict[str, Any]) -> str:
    if not sweep["winner"]:
        return f"{host}: no profile recommended, {sweep['why']}"
    line = (f"{host}: recommended {sweep['winner']}, the fastest profile passing every enforced gate "
            f"({sweep['winner_output_throughput']:.1f} tok/s")
    line += f", {sweep['winner_speedup']:.2f}x)" if sweep.get("winner_speedup") is not None else ")"
    if sweep["differs"]:
        line += (f"; best acceptance is {sweep['best_acceptance']} ({sweep['best_acceptance_rate']:.1f} %): "
                 "pick by throughput, as the tutorial advises")
    return line


WARMUP_RATIO = 3.0


def _warmup_lines(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A p99 TTFT far above the median (or a slow first request) says the first requests ran cold."""
    lines = []
    for host, host_rows in sorted(rows.items()):
        for r in host_rows:
            median, p99, first = r.get("median_ttft_ms"), r.get("p99_ttft_ms"), r.get("first_ttft_ms")
            if not median:
                continue
            worst = max(v for v in (p99, first) if v is not None) if (p99 or first) else None
            if worst is not None and worst > WARMUP_RATIO * median:
                lines.append(f"WARM-UP {host} {r['profile']}: {'first request' if worst == first else 'p99'} TTFT "
                             f"{worst:.1f} ms is {worst / median:.1f}x the median {median:.1f} ms: the first requests "
                             "may have run cold; compare speedups with care (vllm bench serve --num-warmups)")
    return lines


def _price(price: dict[str, Any] | None) -> dict[str, Any]:
    price = dict(price or {})
    hourly = price.get("usd_per_hour")
    price["set"] = _is_number(hourly) and hourly > 0
    price["text"] = (f"{price.get('instance_type') or 'instance'} at {hourly} USD/hour "
                     f"({price.get('source') or 'no source given'}, {price.get('date') or 'no date given'})"
                     if price["set"] else "no price set (bench_report_instance_price.usd_per_hour)")
    return price


def eagle3_report(run_dir: str, hosts: list[str] | None = None, gates: dict[str, Any] | None = None,
                  reference: dict[str, Any] | None = None, baseline: str = BASELINE,
                  outlier_tolerance: float = 0.10, run_id: str | None = None,
                  price: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the report needs for one run: per-host comparison, parity, sweep, fleet, gates, verdict.

    Never raises on a bad result file: it is listed and its host fails. OK needs evidence: an
    expected host list (the run's run.json, else `hosts`), a baseline and a speculative profile from
    every expected host, and every enforced gate evaluated on real data.
    """
    root = Path(run_dir)
    loaded = load_run(root)
    expected, source, reasons = _expected_hosts(root, hosts)
    price = _price(price)
    if not expected:
        reasons.append("no expected hosts: the run has no run.json and bench_report_hosts is empty "
                       "(an empty inventory after teardown reports nothing)")
    failed = {h: "; ".join(p) for h in expected if (p := _host_problems(loaded.get(h), baseline))}
    usable = [h for h in expected if h in loaded and loaded[h]["results"]]
    rows = {h: eagle3_compare(loaded[h]["results"], baseline, price) for h in usable}
    judged = [h for h in usable if h not in failed]
    parity = {h: eagle3_parity(loaded[h]["completions"], baseline, [p for p in loaded[h]["results"] if p != baseline])
              for h in judged}
    gate_results = eagle3_gates({h: rows[h] for h in judged}, gates, reference, parity, baseline,
                                {h: loaded[h]["results"] for h in judged},
                                {h: loaded[h]["manifest"] for h in judged})
    verdict = eagle3_verdict(gate_results, failed, reasons)
    failing: dict[str, dict[str, list[str]]] = {}
    for g in verdict["failing"]:
        failing.setdefault(g["host"], {}).setdefault(g["profile"] or "*", []).append(f"[{g['gate']}] {g['message']}")
    sweep = {}
    for h in judged:
        host_failing = failing.get(h, {})
        everywhere = host_failing.get("*", []) + host_failing.get(baseline, [])
        sweep[h] = eagle3_sweep(rows[h], baseline, {r["profile"]: everywhere + host_failing.get(r["profile"], [])
                                                    for r in rows[h]})
    verdict["run_id"] = run_id
    verdict["hosts_expected"] = expected
    verdict["hosts_source"] = source
    summary = {
        "run_id": run_id, "hosts": rows, "fleet": eagle3_fleet(rows, outlier_tolerance),
        "sweep": sweep, "parity": parity, "failed_hosts": failed, "hosts_expected": expected,
        "hosts_source": source, "missing_hosts": [h for h in expected if h not in rows],
        "unexpected_hosts": sorted(h for h in loaded if h not in expected),
        "bad_files": [b for h in sorted(loaded) for b in loaded[h]["bad_files"]],
        "manifests": {h: e["manifest"] for h, e in loaded.items() if e["manifest"] and h in expected},
        "reference": reference, "gates": gate_results, "price": price,
    }
    lines = [f"verdict: {'OK' if verdict['ok'] else 'FAILED'} ({len(gate_results)} gate checks, "
             f"{len(expected)} expected host(s) from {source})"]
    lines += [f"NO EVIDENCE: {r}" for r in verdict["reasons"]]
    lines += [_sweep_line(h, s) for h, s in sorted(sweep.items()) if s["profiles"] > 1]
    lines += [f"FAIL [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["failing"]]
    lines += [f"info [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["informational"]]
    lines += [f"FAILED HOST {h}: {why}" for h, why in sorted(failed.items())]
    lines += [f"IGNORED {h}: results directory of a host not in the run's host list" for h in summary["unexpected_hosts"]]
    for profile, stats in summary["fleet"].items():
        lines += [f"OUTLIER {o['host']} ({profile}): {o['output_throughput']:.1f} tok/s, "
                  f"{o['below_median']:.0%} below the other hosts' median {o['others_median']:.1f}"
                  for o in stats["outliers"]]
    lines += _warmup_lines(rows)
    lines.append(f"cost: {price['text']}")
    return {"summary": summary, "verdict": verdict, "lines": lines}


def eagle3_chart_item(pair: tuple[dict[str, Any], dict[str, Any]], metric: str) -> list[Any]:
    """(host item, row) from `dict2items | subelements('value')` -> ["host profile", value]."""
    host, row = pair
    return [f"{host['key']} {row['profile']}", row.get(metric)]


def eagle3_position_items(pair: tuple[dict[str, Any], dict[str, Any]]) -> list[list[Any]]:
    """Acceptance per draft position, in percent, for a speculative row; [] for the baseline."""
    host, row = pair
    rates = row.get("per_position_acceptance_rates") or []
    return [[f"{host['key']} {row['profile']} pos {i}", 100.0 * rate] for i, rate in enumerate(rates)]


def eagle3_spread_item(pair: tuple[dict[str, Any], dict[str, Any]], fleet: dict[str, Any]) -> list[Any]:
    """Throughput of a host relative to the fleet median of the same profile."""
    host, row = pair
    stats = (fleet.get(row["profile"]) or {}).get("output_throughput")
    value = row.get("output_throughput")
    ratio = value / stats["median"] if stats and value is not None and stats["median"] else None
    return [f"{host['key']} {row['profile']}", ratio]


INSTANCE_STORE_MODEL = "Amazon EC2 NVMe Instance Storage"
CACHE_LABEL = "eagle3-cache"


def eagle3_cache_disk(lsblk: dict[str, Any], wanted: str = "auto", mount: str = "/mnt/eagle3-cache") -> dict[str, Any]:
    """Pick the disk for the compile cache from `lsblk -J -o NAME,PATH,MODEL,SERIAL,TYPE,FSTYPE,LABEL,MOUNTPOINT`.

    wanted "auto": the first instance-store NVMe disk (model "Amazon EC2 NVMe Instance Storage")
    that has no partitions and is blank, or already ours (label eagle3-cache, unmounted or mounted
    at `mount`); a /dev path: that disk, under the same conditions; "": none.
    Returns {"device": path or "", "format": bool, "reason": text}.
    """
    if not wanted:
        return {"device": "", "format": False, "reason": "disabled (vllm_service_cache_device is empty)"}
    disks = [d for d in lsblk.get("blockdevices", []) if d.get("type") == "disk"]

    def usable(disk: dict[str, Any]) -> str | None:
        if disk.get("children"):
            return "it has partitions"
        if disk.get("fstype") and disk.get("label") != CACHE_LABEL:
            return f"it holds a {disk['fstype']} file system labelled {disk.get('label')!r}, not {CACHE_LABEL!r}"
        if disk.get("mountpoint") not in (None, "", mount):
            return f"it is mounted at {disk['mountpoint']}"
        return None

    if wanted != "auto":
        disk = next((d for d in disks if wanted in (d.get("path"), "/dev/" + str(d.get("name")))), None)
        if disk is None:
            raise ValueError(f"vllm_service_cache_device {wanted}: no such disk on the host")
        problem = usable(disk)
        if problem:
            raise ValueError(f"vllm_service_cache_device {wanted}: {problem}; eagle3 only formats blank disks")
        return {"device": disk.get("path") or wanted, "format": not disk.get("fstype"), "reason": "given"}
    stores = [d for d in disks if (d.get("model") or "").strip() == INSTANCE_STORE_MODEL]
    for disk in stores:
        if usable(disk) is None:
            return {"device": disk["path"], "format": not disk.get("fstype"),
                    "reason": f"instance-store NVMe (serial {(disk.get('serial') or '').strip()})"}
    if stores:
        return {"device": "", "format": False,
                "reason": "instance-store NVMe present but none usable: "
                          + "; ".join(f"{d['path']}: {usable(d)}" for d in stores)}
    return {"device": "", "format": False, "reason": "no instance-store NVMe on this host"}


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "eagle3_compare": eagle3_compare,
            "eagle3_is_cidr": eagle3_is_cidr,
            "eagle3_cache_disk": eagle3_cache_disk,
            "eagle3_table": eagle3_table,
            "eagle3_parity": eagle3_parity,
            "eagle3_sweep": eagle3_sweep,
            "eagle3_fleet": eagle3_fleet,
            "eagle3_gates": eagle3_gates,
            "eagle3_gate_settings": eagle3_gate_settings,
            "eagle3_shown": eagle3_shown,
            "eagle3_verdict": eagle3_verdict,
            "eagle3_report": eagle3_report,
            "eagle3_chart_item": eagle3_chart_item,
            "eagle3_position_items": eagle3_position_items,
            "eagle3_spread_item": eagle3_spread_item,
        }
