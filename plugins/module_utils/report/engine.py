"""The report engine: one run's report made from its data (read by plugins/module_utils/results/run_dir.py, never
here): every result file validated, the profiles compared, parity checked, the rounds pooled, the gates and the verdict,
the serving plan, the timeline, the report's text and tables, and the helpers its HTML charts use.
"""
from __future__ import annotations

import copy
import math
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.eagle3.trn2.plugins.module_utils.report.compare import (BASELINE, eagle3_compare, eagle3_fleet,
                                                                                 eagle3_parity_rule, eagle3_sweep)
from ansible_collections.eagle3.trn2.plugins.module_utils.report.gates import (
    eagle3_gate_settings, eagle3_gates, eagle3_verdict)
from ansible_collections.eagle3.trn2.plugins.module_utils.server.serving import eagle3_serving, eagle3_serving_lines
from ansible_collections.eagle3.trn2.plugins.module_utils.report.timeline import eagle3_timeline, eagle3_timeline_lines
from ansible_collections.eagle3.trn2.plugins.module_utils.report.scheduling import (eagle3_scheduling,
                                                                                    eagle3_scheduling_lines)
from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number as _is_number
from ansible_collections.eagle3.trn2.plugins.module_utils.results.result_checks import check_run
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as _bands
from ansible_collections.eagle3.trn2.plugins.module_utils.results import rounds as _rounds


def _expected_hosts(run_json: dict[str, Any], hosts: list[str] | None) -> tuple[list[str], str, list[str]]:
    """The run's own host list (run.json, written when the run started) or else the given one."""
    if run_json.get("exists"):
        data, why = run_json.get("data"), run_json.get("why")
        listed = (data or {}).get("hosts")
        if why is None and isinstance(listed, list) and listed and all(isinstance(h, str) for h in listed):
            return sorted(listed), "run.json (written when the run started)", []
        problem = [f"run.json: {why or 'no host list'}; using bench_report_hosts"]
    else:
        problem = []
    return sorted(hosts or []), "bench_report_hosts (no run.json)", problem


def _host_problems(entry: dict[str, Any] | None, baseline: str, round_problems: list[str]) -> list[str]:
    if entry is None:
        return ["no results fetched (host failed before benchmarking or was unreachable)"]
    problems = [f"unusable file {b['file']}: {b['reason']}" for b in entry["bad_files"]]
    if problems:
        problems.append("to recover, rerun with this run's eagle3_run_id: a result that fails its own checks is kept "
                        "aside in the run's quarantine/ folder and its profile benchmarked again")
    if entry["failure"]:
        f = entry["failure"]
        problems.insert(0, f"profile {f.get('profile')} failed at \"{f.get('task')}\": {f.get('reason')}")
        problems.append("to recover, remove the cause and rerun with this run's eagle3_run_id: profiles whose results "
                        "validate are kept, the failed one is benchmarked again")
    elif not entry["results"] and not problems:
        problems.append("no results fetched (host failed before benchmarking or was unreachable)")
    if entry["results"] and baseline not in entry["results"]:
        problems.append(f"no {baseline} result")
    if entry["results"] and not [p for p in entry["results"] if p != baseline]:
        problems.append("no speculative profile result")
    problems += [f"rounds: {why}" for why in round_problems]
    return problems


def _pooled(entry: dict[str, Any], complete: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """{profile: [round 1, round 2, ...]} of a host (`complete`: its profiles with every round, rounds.host_rounds);
    a profile with incomplete rounds (its host fails) keeps what it has, round 1 alone."""
    return {p: complete.get(p) or [d] for p, d in entry["results"].items()}


def _rounds_line(rows: dict[str, list[dict[str, Any]]]) -> str:
    if _rounds.one_sample(rows):
        return ("rounds: 1 (eagle3_bench_rounds): every figure, speedup and choice of profile rests on one sample, "
                "without an interval; set eagle3_bench_rounds to 5 for a decision")
    counts = sorted({r.get("rounds") or 1 for host_rows in rows.values() for r in host_rows})
    return (f"rounds: {'/'.join(map(str, counts))} per profile, interleaved: figures are geometric means with their "
            "95 % t interval on the log scale (never below 0), speedups paired by round; the speedup gate, best and "
            "the sweep rest on the lower bound, a tie (the paired ratio's interval containing 1) goes to the smaller k")


def _sweep_line(host: str, sweep: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    if not sweep["winner"]:
        return f"{host}: no profile recommended, {sweep['why']}"
    winner = next((r for r in rows if r["profile"] == sweep["winner"]), {})
    sched = ((winner.get("scheduling") or {}).get("comparison"))
    sched = f", scheduling {sched}" if sched else ""
    if sweep.get("winner_speedup_low") is not None:
        return (f"{host}: recommended {sweep['winner']} ({sweep['winner_output_throughput']:.1f} tok/s, "
                f"{sweep['winner_speedup']:.2f}x, lower bound {sweep['winner_speedup_low']:.2f}x{sched}) among the "
                f"profiles passing every enforced gate: {sweep['decided_by']}")
    line = (f"{host}: recommended {sweep['winner']}, the fastest profile passing every enforced gate "
            f"({sweep['winner_output_throughput']:.1f} tok/s")
    line += f", {sweep['winner_speedup']:.2f}x{sched})" if sweep.get("winner_speedup") is not None else ")"
    if sweep["differs"]:
        line += (f"; best acceptance is {sweep['best_acceptance']} ({sweep['best_acceptance_rate']:.1f} %): "
                 "pick by throughput, as the tutorial advises")
    return line


def _band_marks(rows: dict[str, list[dict[str, Any]]], band_key: dict[str, Any] | None,
                bands: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """{"host profile": band} of each speculative row whose per-position rates have a band (exact or near key, as the
    acceptance_band gate matches it): its kind, rtol, acceptance length's range and each position's range in percent
    (the band's rate less and plus its relative tolerance), position 1 first."""
    out: dict[str, dict[str, Any]] = {}
    if not band_key:
        return out
    for host, host_rows in sorted(rows.items()):
        for row in host_rows:
            rates = row.get("per_position_acceptance_rates")
            if not isinstance(rates, list) or not rates:
                continue
            kind, entry, _why = _bands.match(bands or [], dict(band_key, k=len(rates)))
            if entry is None:
                continue
            rtol, length = float(entry.get("rtol", 0.05)), float(entry["acceptance_length"])
            out[f"{host} {row['profile']}"] = {
                "kind": kind, "rtol": rtol, "length": [length * (1 - rtol), length * (1 + rtol)],
                "positions": [[100.0 * float(p) * (1 - rtol), 100.0 * float(p) * (1 + rtol)]
                              for p in entry["per_position"]]}
    return out


def _speedup_text(row: dict[str, Any]) -> str:
    """The speedup with its interval (or "one sample") and the schedulers it compares (scheduling.py)."""
    interval = row.get("speedup_interval") or {}
    if interval.get("low") is not None:
        text = (f"speedup {row['speedup']:.2f}x [{interval['low']:.2f}, {interval['high']:.2f}] "
                f"(95 % interval over {interval['n']} rounds, paired by round)")
    else:
        text = f"speedup {row['speedup']:.2f}x (one sample: 1 round, no interval)"
    scheduling = row.get("scheduling") or {}
    return text + (f", {scheduling['text']}" if scheduling.get("text") else "")


def _acceptance_text(host: str, row: dict[str, Any], gate_results: list[dict[str, Any]],
                     marks: dict[str, Any]) -> str:
    intervals = row.get("intervals") or {}
    text = (f"acceptance {_rounds.shown(row.get('acceptance_rate'), intervals.get('acceptance_rate'), '.1f')} % "
            f"(floor {marks['floor']:g} %), length "
            f"{_rounds.shown(row.get('acceptance_length'), intervals.get('acceptance_length'))}")
    gate = next((g for g in gate_results if g["gate"] == "acceptance_band" and g["host"] == host
                 and g["profile"] == row["profile"]), None)
    band = marks["bands"].get(f"{host} {row['profile']}")
    if gate is None or gate["skipped"] or band is None:
        return text + ": no acceptance band recorded for its key"
    # an informational gate passes whatever it found: the band's own verdict is in its message
    inside = gate["ok"] if gate["enforced"] else "and every position within" in gate["message"]
    within = "within" if inside else "OUTSIDE"
    near = "" if band["kind"] == "exact" else "near key's "
    return (text + f", {within} its {near}band (length {band['length'][0]:.2f} to {band['length'][1]:.2f}, "
            f"every position within {band['rtol']:.0%})")


def _headline(ok: bool, verdict: dict[str, Any], rows: dict[str, list[dict[str, Any]]], sweep: dict[str, Any],
              failed: dict[str, str], gate_results: list[dict[str, Any]], marks: dict[str, Any]) -> dict[str, Any]:
    """What a reader comes for, first: the verdict, per host the recommended profile with its speedup and interval (or
    "one sample"), its acceptance with its interval, floor and band, and what decided it."""
    hosts = []
    for host in sorted(set(sweep) | set(failed)):
        entry: dict[str, Any] = {"host": host, "profile": None, "speedup": None, "speedup_low": None,
                                 "speedup_high": None, "rounds": None, "scheduling": None}
        if host in failed:
            entry["text"] = f"{host}: failed, no profile recommended ({failed[host]})"
        elif not sweep[host]["winner"]:
            entry["text"] = f"{host}: no profile recommended, {sweep[host]['why']}"
        else:
            s = sweep[host]
            row = next(r for r in rows[host] if r["profile"] == s["winner"])
            interval = row.get("speedup_interval") or {}
            among = (f" among {s['profiles']} speculative profiles" if s["profiles"] > 1
                     else " (the only speculative profile)")
            entry.update(profile=s["winner"], speedup=row.get("speedup"), speedup_low=interval.get("low"),
                         speedup_high=interval.get("high"), rounds=row.get("rounds"),
                         scheduling=(row.get("scheduling") or {}).get("comparison"))
            entry["text"] = (f"{host}: recommended {s['winner']}, {_speedup_text(row)}; "
                             f"{_acceptance_text(host, row, gate_results, marks)}; decided by {s['decided_by']}{among}")
        hosts.append(entry)
    failing = verdict.get("failing") or []
    if ok:
        title = "OK: every enforced gate passed"
    elif failing:
        first = failing[0]
        title = (f"FAILED: {len(failing)} enforced gate check(s) failing, first [{first['gate']}] {first['host']}: "
                 f"{first['message']}")
    else:
        reasons = list(verdict.get("reasons") or []) + [f"failed host {h}" for h in sorted(failed)]
        title = "FAILED: " + ("; ".join(reasons) or "no evidence")
    return {"verdict": "OK" if ok else "FAILED", "title": title, "hosts": hosts,
            "lines": [title] + [h["text"] for h in hosts]}


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


def eagle3_report(run: dict[str, Any], hosts: list[str] | None = None, gates: dict[str, Any] | None = None,
                  reference: dict[str, Any] | None = None, baseline: str = BASELINE,
                  outlier_tolerance: float = 0.10, run_id: str | None = None,
                  price: dict[str, Any] | None = None, serve: str = "none", band_key: dict[str, Any] | None = None,
                  bands: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Everything the report needs for one run: per-host comparison, parity, sweep, fleet, gates, verdict,
    and the serving plan (`serve`: none | best | a profile name; see the serving filter).

    `run` is the run's data as the eagle3_run lookup reads it ({hosts, run_json}).

    Every result file is validated first (plugins/module_utils/results/result_checks.py): a file that fails is listed with
    the reasons and its host fails; no gate, the sweep or the fleet reads its figures. OK needs evidence: an expected
    host list (the run's run.json, else `hosts`), a baseline and a speculative profile from every expected host, and
    every enforced gate evaluated on real data.

    Anything else that goes wrong raises "the report could not be made from FILE: REASON", FILE being the smallest
    part of the run (a file, the reference) without which the report is made.
    """
    args = (hosts, gates, reference, baseline, outlier_tolerance, run_id, price, serve, band_key, bands)
    try:
        return _report(run, *args)
    except Exception as exc:  # noqa: BLE001 - any crash becomes the report's failure, naming the file
        raise AnsibleFilterError(f"the report could not be made from {_culprit(run, args, run_id)}: "
                                 f"{type(exc).__name__}: {exc}") from exc


def _without(run: dict[str, Any], host: str | None, kind: str, key: str | None) -> dict[str, Any]:
    out = copy.copy(run)
    if host is None:
        out["run_json"] = {"exists": False, "data": None, "why": None}
        return out
    out["hosts"] = dict(run["hosts"])
    entry = out["hosts"][host] = dict(run["hosts"][host])
    if key is None:
        entry[kind] = None
    else:
        entry[kind] = {k: v for k, v in entry[kind].items() if k != key}
    return out


def _culprit(run: dict[str, Any], args: tuple, run_id: str | None) -> str:
    """The first part of the run without which the report is made: the reference, a host's file, run.json."""
    hosts, gates, reference, baseline, *rest = args

    def works(data: dict[str, Any], ref: Any = reference) -> bool:
        try:
            _report(data, hosts, gates, ref, baseline, *rest)
        except Exception:  # noqa: BLE001
            return False
        return True

    try:
        if reference and works(run, {}):
            return f"the reference {(reference or {}).get('name') or ''} (bench_report_reference)".replace("  ", " ")
        # the least a file takes with it first: a speculative profile's files before the baseline's and the manifest,
        # whose absence fails the whole host (and so hides any crash in it)
        for host, entry in sorted((run.get("hosts") or {}).items()):
            files = [(kind, key, suffix) for last in (False, True)
                     for kind, suffix in (("results", ".json"), ("completions", ".completions.json"))
                     for key in sorted(entry.get(kind) or {}) if (key == baseline) is last]
            files += [(kind, None, ".json") for kind in ("timeline", "manifest", "failure") if entry.get(kind) is not None]
            for kind, key, suffix in files:
                if works(_without(run, host, kind, key)):
                    return f"{host}/{key or kind}{suffix}"
        if (run.get("run_json") or {}).get("exists") and works(_without(run, None, "run_json", None)):
            return "run.json"
    except Exception:  # noqa: BLE001 - a run too broken to take apart is named as a whole
        pass
    return f"the results of run {run_id or ''}".rstrip()


def _report(run: dict[str, Any], hosts: list[str] | None, gates: dict[str, Any] | None,
            reference: dict[str, Any] | None, baseline: str, outlier_tolerance: float, run_id: str | None,
            price: dict[str, Any] | None, serve: str, band_key: dict[str, Any] | None = None,
            bands: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """eagle3_report's work (see there); raises on what the validator did not catch."""
    expected, source, reasons = _expected_hosts(run["run_json"], hosts)
    # Every result file is validated before any gate, the sweep or the fleet reads it.
    run = check_run(run, baseline, expected)
    loaded = run["hosts"]
    price = _price(price)
    if not expected:
        reasons.append("no expected hosts: the run has no run.json and bench_report_hosts is empty "
                       "(an empty inventory after teardown reports nothing)")
    # Each host's rounds, read once: the complete ones are pooled below, the missing ones fail the host.
    rounds = {h: _rounds.host_rounds(entry) for h, entry in loaded.items()}
    failed = {h: "; ".join(p) for h in expected
              if (p := _host_problems(loaded.get(h), baseline, rounds[h][1] if h in rounds else []))}
    usable = [h for h in expected if h in loaded and loaded[h]["results"]]
    # Each profile's rounds pooled (means), with intervals and the decision value (plugins/module_utils/results/rounds.py).
    per_round = {h: _pooled(loaded[h], rounds[h][0]) for h in usable}
    pooled = {h: {p: _rounds.pooled(docs) for p, docs in per_round[h].items()} for h in usable}
    rows = {h: _rounds.with_intervals(eagle3_compare(pooled[h], baseline, price), per_round[h], baseline)
            for h in usable}
    # Which schedulers each speedup compares (async or sync per profile, from the manifest or the result's metadata).
    scheduling = {h: eagle3_scheduling(loaded[h]["manifest"], loaded[h]["results"], baseline) for h in usable}
    for h in usable:
        for row in rows[h]:
            row["scheduling"] = scheduling[h].get(row["profile"])
    judged = [h for h in usable if h not in failed]
    rule = eagle3_gate_settings(gates)["parity"]
    parity = {h: eagle3_parity_rule(loaded[h]["completions"], baseline,
                                    [p for p in loaded[h]["results"] if p != baseline], rule)
              for h in judged}
    gate_results = eagle3_gates({h: rows[h] for h in judged}, gates, reference, parity, baseline,
                                {h: pooled[h] for h in judged},
                                {h: loaded[h]["manifest"] for h in judged}, band_key, bands)
    verdict = eagle3_verdict(gate_results, failed, reasons)
    failing: dict[str, dict[str, list[str]]] = {}
    for g in verdict["failing"]:
        failing.setdefault(g["host"], {}).setdefault(g["profile"] or "*", []).append(f"[{g['gate']}] {g['message']}")
    sweep, blocked = {}, {}
    for h in judged:
        host_failing = failing.get(h, {})
        everywhere = host_failing.get("*", []) + host_failing.get(baseline, [])
        blocked[h] = {r["profile"]: everywhere + (host_failing.get(r["profile"], []) if r["profile"] != baseline else [])
                      for r in rows[h]}
        sweep[h] = eagle3_sweep(rows[h], baseline, blocked[h])
    serving = eagle3_serving({h: rows[h] for h in judged}, blocked, failed, expected, serve)
    verdict["run_id"] = run_id
    verdict["hosts_expected"] = expected
    verdict["hosts_source"] = source
    summary = {
        "run_id": run_id, "hosts": rows, "fleet": eagle3_fleet(rows, outlier_tolerance),
        "fleet_intervals": _rounds.fleet_intervals(rows, baseline), "one_sample": _rounds.one_sample(rows),
        "sweep": sweep, "parity": {h: j["problems"] for h, j in parity.items()},
        "parity_verdicts": {h: j["profiles"] for h, j in parity.items()}, "failed_hosts": failed, "hosts_expected": expected,
        "hosts_source": source, "missing_hosts": [h for h in expected if h not in rows],
        "unexpected_hosts": sorted(h for h in loaded if h not in expected),
        "bad_files": [b for h in sorted(loaded) for b in loaded[h]["bad_files"]],
        "manifests": {h: e["manifest"] for h, e in loaded.items() if e["manifest"] and h in expected},
        "reference": reference, "gates": gate_results, "price": price,
        "timeline": eagle3_timeline({h: loaded[h].get("timeline") for h in expected if h in loaded}),
    }
    verdict["windows_overlapped"] = summary["timeline"]["overlapped"]
    verdict["bad_files"] = summary["bad_files"]
    summary["ok"], summary["status"] = verdict["ok"], verdict["status"]
    summary["serving"] = verdict["serving"] = serving
    summary["acceptance_marks"] = {"floor": float(eagle3_gate_settings(gates)["acceptance"]["min_rate"]),
                                   "bands": _band_marks({h: rows[h] for h in judged}, band_key, bands)}
    summary["headline"] = _headline(verdict["ok"], verdict, rows, sweep, failed, gate_results,
                                    summary["acceptance_marks"])
    lines = [f"verdict: {'OK' if verdict['ok'] else 'FAILED'} ({len(gate_results)} gate checks, "
             f"{len(expected)} expected host(s) from {source})"]
    lines += [f"NO EVIDENCE: {r}" for r in verdict["reasons"]]
    if rows:
        lines.append(_rounds_line(rows))
    lines += [line for h in usable for line in eagle3_scheduling_lines(h, scheduling[h], baseline)]
    lines += [_sweep_line(h, s, rows[h]) for h, s in sorted(sweep.items()) if s["profiles"] > 1]
    # The parity verdict of each profile, "N of M prompts identical (rule: ...)": a failing one is a FAIL line below.
    lines += [f"parity {h}: {v['message']}" for h, j in sorted(parity.items()) for v in j["profiles"] if v["ok"]]
    lines += [f"FAIL [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["failing"]]
    lines += [f"info [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["informational"]]
    lines += [f"FAILED HOST {h}: {why}" for h, why in sorted(failed.items())]
    lines += [f"IGNORED {h}: results directory of a host not in the run's host list" for h in summary["unexpected_hosts"]]
    for profile, stats in summary["fleet"].items():
        lines += [f"OUTLIER {o['host']} ({profile}): {o['output_throughput']:.1f} tok/s, "
                  f"{o['below_median']:.0%} below the other hosts' median {o['others_median']:.1f}"
                  for o in stats["outliers"]]
    lines += _warmup_lines(rows)
    lines += eagle3_serving_lines(serving)
    lines += eagle3_timeline_lines(summary["timeline"])
    lines.append(f"cost: {price['text']}")
    return {"summary": summary, "verdict": verdict, "lines": lines}


def eagle3_chart_item(pair: tuple[dict[str, Any], dict[str, Any]], metric: str) -> list[Any]:
    """(host item, row) from `dict2items | subelements('value')` -> ["host profile", value] (and its interval's low
    and high with rounds > 1)."""
    host, row = pair
    interval = (row.get("intervals") or {}).get(metric) or {}
    if interval.get("low") is not None:  # rounds > 1: [label, value, low, high], drawn with an error bar
        return [f"{host['key']} {row['profile']}", row.get(metric), interval["low"], interval["high"]]
    return [f"{host['key']} {row['profile']}", row.get(metric)]


def eagle3_position_items(pair: tuple[dict[str, Any], dict[str, Any]],
                          marks: dict[str, Any] | None = None) -> list[list[Any]]:
    """Acceptance of a speculative row, in percent: first its overall rate ("all"), then each draft position numbered
    from 1 as the gates and docs count them ("pos 1" is the first drafted token), each with its interval over rounds
    and, for a position, the band's range (`marks`: summary.acceptance_marks). [] for the baseline.
    An item: [label, value, low, high, band low, band high] (None where there is none)."""
    host, row = pair
    rates = row.get("per_position_acceptance_rates") or []
    if not rates and row.get("acceptance_rate") is None:
        return []
    name = f"{host['key']} {row['profile']}"
    overall = ((row.get("intervals") or {}).get("acceptance_rate")) or {}
    items = [[f"{name} all", row.get("acceptance_rate"), overall.get("low"), overall.get("high"), None, None]]
    intervals = row.get("position_intervals") or []
    band = (((marks or {}).get("bands") or {}).get(name) or {}).get("positions") or []
    for i, rate in enumerate(rates):
        iv = intervals[i] if i < len(intervals) and intervals[i] and intervals[i].get("low") is not None else None
        b = band[i] if len(band) == len(rates) else [None, None]
        items.append([f"{name} pos {i + 1}", 100.0 * rate if _is_number(rate) else None,
                      100.0 * iv["low"] if iv else None, 100.0 * iv["high"] if iv else None, b[0], b[1]])
    return items


def eagle3_spread_item(pair: tuple[dict[str, Any], dict[str, Any]], fleet: dict[str, Any]) -> list[Any]:
    """Throughput of a host relative to the fleet median of the same profile."""
    host, row = pair
    stats = (fleet.get(row["profile"]) or {}).get("output_throughput")
    value = row.get("output_throughput")
    ratio = value / stats["median"] if stats and value is not None and stats["median"] else None
    return [f"{host['key']} {row['profile']}", ratio]


# The bar charts' geometry (report.html.j2's bars()): CHAR_PX is a generous width of one character of their 12 px
# text (system-ui digits and lower case are 6-7 px), so every label is given the room it takes and none is clipped.
CHAR_PX = 7.2
ROW_PX = 28
BAR_PX = 400


def _number(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def eagle3_bar_layout(items: list[list[Any]], unit: str, digits: int = 1, floor: float | None = None) -> dict[str, Any]:
    """The layout of one bar chart: items [label, value, (low, high, (band low, band high))] -> {"width", "height",
    "label_x" (the labels' right end), "x0" (the bars' start), "rows": [{label, value, y, w, text, text_x, low, high,
    x1, x2, band_low, band_high, band_x, band_w}], "floor": {x, text, text_x} or None}. The box is as wide as its
    longest label, bar, error bar, band and value text take: every text lies inside it."""
    rows = []
    for item in items:
        item = list(item) + [None] * (6 - len(item))
        label, value, low, high, band_low, band_high = str(item[0]), *item[1:6]
        interval = _number(value) and _number(low) and _number(high)
        band = _number(value) and _number(band_low) and _number(band_high)
        rows.append({"label": label, "value": value if _number(value) else None,
                     "low": low if interval else None, "high": high if interval else None,
                     "band_low": band_low if band else None, "band_high": band_high if band else None})
    label_x = round(8 + CHAR_PX * max([len(r["label"]) for r in rows] + [1]), 1)
    x0 = round(label_x + 10, 1)
    extent = [v for r in rows for v in (r["value"], r["high"], r["band_high"]) if v is not None]
    top = max(extent + ([floor] if _number(floor) else [])) if extent else 1.0
    scale = BAR_PX / (top if top > 0 else 1.0)
    right = x0 + BAR_PX
    fmt = f".{int(digits)}f"
    for i, r in enumerate(rows):
        r["y"] = ROW_PX * i + 8
        if r["value"] is None:
            r.update(w=0, text="n/a", text_x=round(x0 + 6, 1))
        else:
            r["w"] = max(round(scale * max(r["value"], 0.0), 1), 1)
            end = x0 + r["w"]
            r["text"] = format(r["value"], fmt)
            if r["low"] is not None:
                r["x1"], r["x2"] = round(x0 + scale * max(r["low"], 0.0), 1), round(x0 + scale * r["high"], 1)
                end = max(end, r["x2"])
                r["text"] += f" [{format(r['low'], fmt)}, {format(r['high'], fmt)}]"
            if r["band_low"] is not None:
                r["band_x"] = round(x0 + scale * r["band_low"], 1)
                r["band_w"] = max(round(scale * (r["band_high"] - r["band_low"]), 1), 1)
                end = max(end, r["band_x"] + r["band_w"])
            r["text"] += f" {unit}"
            r["text_x"] = round(end + 6, 1)
        right = max(right, r["text_x"] + CHAR_PX * len(r["text"]))
    height = ROW_PX * len(rows) + 36
    marked = None
    if _number(floor):
        x = round(x0 + scale * floor, 1)
        text = f"floor {floor:g} {unit}".strip()
        marked = {"x": x, "text": text, "text_x": round(x + 4, 1), "y1": 4, "y2": height - 26, "y": height - 10}
        right = max(right, marked["text_x"] + CHAR_PX * len(text))
    return {"width": int(math.ceil(right + 12)), "height": height, "label_x": label_x, "x0": x0, "rows": rows,
            "floor": marked}
