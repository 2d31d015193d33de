"""Filters for the EAGLE3 benchmark: profiles as data, comparison of `vllm bench serve` results.

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
    - C(eagle3_profiles) expands num_speculative_tokens values into server profiles.
    - C(eagle3_compare) compares each profile's bench result with the baseline's.
    - C(eagle3_table) formats a comparison as text lines.
    - C(eagle3_parity) lists greedy completions that differ from the baseline's.
    - C(eagle3_sweep) names the fastest speculative profile and the one with the best acceptance.
    - C(eagle3_fleet) aggregates hosts per profile (median/min/max) and flags outliers.
    - C(eagle3_gates) judges a run against floors and a reference; C(eagle3_verdict) sums up.
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


def eagle3_profiles(ks: Iterable[int] | int, draft: str, method: str = "eagle3",
                    baseline: str = BASELINE) -> list[dict[str, Any]]:
    """Baseline first, then one speculative profile per k.

    One k gives the profile name "<method>" (the tutorial's plain run); several give
    "<method>-k<k>" each (a sweep).
    """
    if isinstance(ks, str):  # -e eagle3_num_speculative_tokens=3 or =2,3,4
        ks = [int(k) if k.strip().isdigit() else k.strip() for k in ks.split(",")]
    values = [ks] if isinstance(ks, int) else list(ks)
    if not values:
        raise ValueError("eagle3_num_speculative_tokens: expected one or more integers 1..8, got none")
    if len(set(map(str, values))) != len(values):
        raise ValueError(f"eagle3_num_speculative_tokens: values must be distinct, got {values}")
    profiles: list[dict[str, Any]] = [{"name": baseline}]
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
            raise ValueError(f"eagle3_num_speculative_tokens: expected integers 1..8, got {k!r}")
        name = method if len(values) == 1 else f"{method}-k{k}"
        profiles.append({
            "name": name,
            "speculative_config": {"method": method, "model": draft, "num_speculative_tokens": k},
        })
    return profiles


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


def eagle3_compare(results: dict[str, dict[str, Any]], baseline: str = BASELINE) -> list[dict[str, Any]]:
    """One row per profile (baseline first): the tutorial's metrics and the ratios to baseline.

    speedup = output_throughput / baseline's; tpot_ratio = median_tpot_ms / baseline's.
    Acceptance rate is in percent (as vllm bench writes it); per-position rates are fractions.
    """
    base = results.get(baseline, {})
    rows = []
    for name in sorted(results, key=lambda n: (n != baseline, n)):
        data = results[name]
        row: dict[str, Any] = {"profile": name}
        for key in METRICS + ("completed", "failed", "num_prompts"):
            row[key] = data.get(key)
        for key in SPEC_KEYS:
            row[key.replace("spec_decode_", "")] = data.get(key)
        row["speedup"] = _ratio(data.get("output_throughput"), base.get("output_throughput"))
        row["tpot_ratio"] = _ratio(data.get("median_tpot_ms"), base.get("median_tpot_ms"))
        rows.append(row)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def eagle3_table(rows: list[dict[str, Any]]) -> list[str]:
    """Fixed-width text table of eagle3_compare rows."""
    header = f"{'profile':<14}{'out tok/s':>11}{'TPOT ms':>9}{'TTFT ms':>9}{'speedup':>9}{'accept %':>10}{'length':>8}"
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['profile']:<14}{_fmt(row['output_throughput'], '.1f'):>11}"
            f"{_fmt(row['median_tpot_ms'], '.2f'):>9}{_fmt(row['median_ttft_ms'], '.2f'):>9}"
            f"{_fmt(row['speedup'], '.2f'):>9}{_fmt(row['acceptance_rate'], '.1f'):>10}"
            f"{_fmt(row['acceptance_length'], '.2f'):>8}"
        )
    return lines


def eagle3_parity(completions: dict[str, dict[str, Any]], baseline: str = BASELINE) -> list[dict[str, Any]]:
    """Greedy completions of every other profile that differ from the baseline's, prompt by prompt.

    `completions` maps profile -> {"prompts": [...], "completions": [...]} (the *.completions.json
    files). Speculative decoding is lossless: at temperature 0 the text must be identical.
    """
    if baseline not in completions:
        return [{"profile": baseline, "prompt": None, "baseline": None, "got": None,
                 "message": f"no greedy completions from the {baseline} profile to compare with"}]
    want = completions[baseline]
    mismatches = []
    for name in sorted(completions):
        if name == baseline:
            continue
        got = completions[name]
        for i, prompt in enumerate(want["prompts"]):
            expected = want["completions"][i]
            actual = got["completions"][i] if i < len(got["completions"]) else None
            if actual != expected:
                mismatches.append({
                    "profile": name, "prompt": prompt, "baseline": expected, "got": actual,
                    "message": f"{name}: greedy output differs from {baseline} for prompt {prompt!r}: "
                               f"expected {expected!r}, got {actual!r}",
                })
    return mismatches


def eagle3_sweep(rows: list[dict[str, Any]], baseline: str = BASELINE) -> dict[str, Any]:
    """The tutorial's rule: pick the highest output_throughput, not the highest acceptance."""
    spec = [r for r in rows if r["profile"] != baseline and r.get("output_throughput") is not None]
    if not spec:
        return {"winner": None, "best_acceptance": None, "differs": False}
    winner = max(spec, key=lambda r: r["output_throughput"])
    accepted = [r for r in spec if r.get("acceptance_rate") is not None]
    # Among equal acceptance rates prefer the faster profile: "differs" then means a real trade-off.
    best = max(accepted, key=lambda r: (r["acceptance_rate"], r["output_throughput"])) if accepted else None
    best_name = best["profile"] if best else None
    return {
        "winner": winner["profile"],
        "winner_output_throughput": winner["output_throughput"],
        "winner_speedup": winner.get("speedup"),
        "best_acceptance": best_name,
        "best_acceptance_rate": best["acceptance_rate"] if best else None,
        "differs": best_name is not None and best_name != winner["profile"],
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def eagle3_fleet(hosts: dict[str, list[dict[str, Any]]], outlier_tolerance: float = 0.10) -> dict[str, Any]:
    """Per profile across hosts: median/min/max of the tutorial's metrics, and outlier hosts.

    A host is an outlier for a profile when its output_throughput is more than
    `outlier_tolerance` (a fraction) below the fleet median of that profile.
    """
    by_profile: dict[str, dict[str, dict[str, Any]]] = {}
    for host, rows in hosts.items():
        for row in rows:
            by_profile.setdefault(row["profile"], {})[host] = row
    profiles = {}
    for profile, per_host in sorted(by_profile.items(), key=lambda kv: (kv[0] != BASELINE, kv[0])):
        stats: dict[str, Any] = {"hosts": len(per_host)}
        for metric in METRICS + ("speedup", "acceptance_rate", "acceptance_length"):
            values = [r[metric] for r in per_host.values() if r.get(metric) is not None]
            stats[metric] = ({"median": _median(values), "min": min(values), "max": max(values)}
                             if values else None)
        outliers = []
        throughput = stats["output_throughput"]
        if throughput and len(per_host) > 1:
            floor = throughput["median"] * (1 - outlier_tolerance)
            for host, row in sorted(per_host.items()):
                value = row.get("output_throughput")
                if value is not None and value < floor:
                    outliers.append({"host": host, "output_throughput": value,
                                     "below_median": 1 - value / throughput["median"]})
        stats["outliers"] = outliers
        profiles[profile] = stats
    return profiles


DEFAULT_GATES: dict[str, dict[str, Any]] = {
    "parity": {"enforce": True},
    "acceptance": {"enforce": True, "min_rate": 30.0},
    "speedup": {"enforce": True, "min": 1.0},
    "reference": {"enforce": False, "tolerance": 0.10},
}

ACCEPTANCE_ADVICE = ("the tutorial's advice: with an acceptance rate below roughly 30 %, stop tuning "
                     "num_speculative_tokens; the draft does not predict this workload well enough "
                     "for EAGLE3 to pay off")


def _truthy(value: Any) -> bool:
    """Ansible-style booleans: "false", "no", "off", "0" (any case) are false."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "")
    return bool(value)


def eagle3_gates(hosts: dict[str, list[dict[str, Any]]], gates: dict[str, dict[str, Any]] | None = None,
                 reference: dict[str, Any] | None = None,
                 parity: dict[str, list[dict[str, Any]]] | None = None,
                 baseline: str = BASELINE) -> list[dict[str, Any]]:
    """One verdict per (gate, host, profile). Gates:

    parity      every speculative profile's greedy completions equal the baseline's
    acceptance  spec_decode_acceptance_rate (percent) >= min_rate
    speedup     output_throughput / baseline's >= min
    reference   output_throughput >= reference * (1 - tolerance) and
                median_tpot_ms <= reference * (1 + tolerance), per profile named in the reference
    A gate with enforce false is informational: reported, never failing the run.
    """
    conf = {name: dict(DEFAULT_GATES[name], **(gates or {}).get(name, {})) for name in DEFAULT_GATES}
    results: list[dict[str, Any]] = []

    def add(gate: str, host: str, profile: str | None, ok: bool, value: Any, threshold: Any, message: str) -> None:
        results.append({"gate": gate, "host": host, "profile": profile, "ok": ok,
                        "enforced": _truthy(conf[gate]["enforce"]), "value": value,
                        "threshold": threshold, "message": message})

    for host, rows in sorted(hosts.items()):
        for mismatch in (parity or {}).get(host, []):
            add("parity", host, mismatch["profile"], False, mismatch["got"], mismatch["baseline"], mismatch["message"])
        if parity is not None and not (parity or {}).get(host):
            add("parity", host, None, True, None, None, "greedy completions identical to the baseline's")
        for row in rows:
            name = row["profile"]
            if name == baseline:
                continue
            rate = row.get("acceptance_rate")
            floor = float(conf["acceptance"]["min_rate"])
            if rate is None:
                add("acceptance", host, name, False, None, floor,
                    f"{name}: no spec_decode_* metrics in the result (the server did not draft)")
            else:
                ok = rate >= floor
                add("acceptance", host, name, ok, rate, floor,
                    f"{name}: acceptance {rate:.1f} % {'>=' if ok else '<'} {floor:.0f} %"
                    + ("" if ok else f"; {ACCEPTANCE_ADVICE}"))
            speedup = row.get("speedup")
            minimum = float(conf["speedup"]["min"])
            if speedup is None:
                add("speedup", host, name, False, None, minimum, f"{name}: no baseline to compute a speedup")
            else:
                ok = speedup >= minimum
                add("speedup", host, name, ok, speedup, minimum,
                    f"{name}: speedup {speedup:.2f}x {'>=' if ok else '<'} {minimum:.2f}x")
        for row in rows:
            ref = (reference or {}).get("profiles", {}).get(row["profile"])
            if not ref:
                continue
            tol = float(conf["reference"]["tolerance"])
            for metric, higher_is_better in (("output_throughput", True), ("median_tpot_ms", False)):
                if metric not in ref or row.get(metric) is None:
                    continue
                bound = ref[metric] * ((1 - tol) if higher_is_better else (1 + tol))
                ok = row[metric] >= bound if higher_is_better else row[metric] <= bound
                add("reference", host, row["profile"], ok, row[metric], bound,
                    f"{row['profile']}: {metric} {row[metric]:.2f} vs reference {ref[metric]:.2f} "
                    f"({'within' if ok else 'beyond'} {tol:.0%} tolerance, {reference.get('name', 'reference')})")
    return results


def eagle3_verdict(gate_results: list[dict[str, Any]], failed_hosts: dict[str, str] | None = None) -> dict[str, Any]:
    """{"ok": bool, "failing": [...enforced gates that failed...], "informational": [...], "failed_hosts": {...}}."""
    failing = [g for g in gate_results if g["enforced"] and not g["ok"]]
    informational = [g for g in gate_results if not g["enforced"] and not g["ok"]]
    return {"ok": not failing and not failed_hosts, "failing": failing, "informational": informational,
            "failed_hosts": failed_hosts or {}, "gates_checked": len(gate_results)}


def load_run(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Read <run_dir>/<host>/*.json as fetched by the vllm_bench role.

    Per host: results {profile: bench JSON}, completions {profile: ...}, manifest, failure.
    A result still being fetched (*.json.part) is not read.
    """
    hosts: dict[str, dict[str, Any]] = {}
    root = Path(run_dir)
    if not root.is_dir():
        return hosts
    for host_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        entry: dict[str, Any] = {"results": {}, "completions": {}, "manifest": None, "failure": None}
        for path in sorted(host_dir.glob("*.json")):
            data = json.loads(path.read_text())
            if path.name == "manifest.json":
                entry["manifest"] = data
            elif path.name == "failure.json":
                entry["failure"] = data
            elif path.name.endswith(".completions.json"):
                entry["completions"][path.name[: -len(".completions.json")]] = data
            else:
                entry["results"][path.stem] = data
        hosts[host_dir.name] = entry
    return hosts


def _sweep_line(host: str, sweep: dict[str, Any]) -> str:
    line = (f"{host}: fastest speculative profile {sweep['winner']} "
            f"({sweep['winner_output_throughput']:.1f} tok/s")
    line += f", {sweep['winner_speedup']:.2f}x)" if sweep.get("winner_speedup") is not None else ")"
    if sweep["differs"]:
        line += (f"; best acceptance is {sweep['best_acceptance']} ({sweep['best_acceptance_rate']:.1f} %): "
                 "pick by throughput, as the tutorial advises")
    return line


def eagle3_report(run_dir: str, hosts: list[str] | None = None, gates: dict[str, Any] | None = None,
                  reference: dict[str, Any] | None = None, baseline: str = BASELINE,
                  outlier_tolerance: float = 0.10, run_id: str | None = None) -> dict[str, Any]:
    """Everything the report needs for one run: per-host comparison, parity, sweep, fleet, gates, verdict."""
    loaded = load_run(run_dir)
    expected = list(hosts or []) or sorted(loaded)
    rows = {h: eagle3_compare(e["results"], baseline) for h, e in loaded.items() if e["results"]}
    parity = {h: eagle3_parity(e["completions"], baseline) for h, e in loaded.items() if e["completions"]}
    failed: dict[str, str] = {}
    for host in expected:
        entry = loaded.get(host)
        if entry and entry["failure"]:
            f = entry["failure"]
            failed[host] = f"profile {f.get('profile')} failed at \"{f.get('task')}\": {f.get('reason')}"
        elif not entry or not entry["results"]:
            failed[host] = "no results fetched (host failed before benchmarking or was unreachable)"
        elif baseline not in entry["results"]:
            failed[host] = f"no {baseline} result"
    gate_results = eagle3_gates({h: r for h, r in rows.items() if h not in failed}, gates, reference,
                                {h: p for h, p in parity.items() if h not in failed}, baseline)
    verdict = eagle3_verdict(gate_results, failed)
    sweep = {h: eagle3_sweep(r, baseline) for h, r in rows.items()}
    verdict["run_id"] = run_id
    summary = {
        "run_id": run_id, "hosts": rows, "fleet": eagle3_fleet(rows, outlier_tolerance),
        "sweep": sweep, "parity": parity, "failed_hosts": failed,
        "missing_hosts": [h for h in expected if h not in rows],
        "manifests": {h: e["manifest"] for h, e in loaded.items() if e["manifest"]},
        "reference": reference, "gates": gate_results,
    }
    lines = [f"verdict: {'OK' if verdict['ok'] else 'FAILED'} ({len(gate_results)} gate checks)"]
    lines += [_sweep_line(h, s) for h, s in sorted(sweep.items()) if s["winner"] and len(
        [r for r in rows[h] if r["profile"] != baseline]) > 1]
    lines += [f"FAIL [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["failing"]]
    lines += [f"info [{g['gate']}] {g['host']}: {g['message']}" for g in verdict["informational"]]
    lines += [f"FAILED HOST {h}: {why}" for h, why in sorted(failed.items())]
    for profile, stats in summary["fleet"].items():
        lines += [f"OUTLIER {o['host']} ({profile}): {o['output_throughput']:.1f} tok/s, "
                  f"{o['below_median']:.0%} below the fleet median" for o in stats["outliers"]]
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
            "eagle3_profiles": eagle3_profiles,
            "eagle3_compare": eagle3_compare,
            "eagle3_is_cidr": eagle3_is_cidr,
            "eagle3_cache_disk": eagle3_cache_disk,
            "eagle3_table": eagle3_table,
            "eagle3_parity": eagle3_parity,
            "eagle3_sweep": eagle3_sweep,
            "eagle3_fleet": eagle3_fleet,
            "eagle3_gates": eagle3_gates,
            "eagle3_verdict": eagle3_verdict,
            "eagle3_report": eagle3_report,
            "eagle3_chart_item": eagle3_chart_item,
            "eagle3_position_items": eagle3_position_items,
            "eagle3_spread_item": eagle3_spread_item,
        }
