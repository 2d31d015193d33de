"""Every `vllm bench serve` result file is validated before a gate reads it: a gate must never judge figures from a file
that is not a complete, valid measurement.

One module for every check of a result file; docs/results.md, "What the validator checks", lists them with where each
rule comes from:
- the shape (plugins/module_utils/results/result_schema.yml, copied from vLLM 0.24.0 and 0.29.0 `vllm/benchmarks/serve.py`),
  through the project's shared validator (plugins/module_utils/settings/schema.py: strict types, whole-value patterns): the
  type of every key the project reads, counts at least 0, the acceptance rate 0..100, the per-position rates 0..1,
  the acceptance length at least 1, the spec_decode_* keys together;
- numbers are finite (Python's json reads NaN and Infinity, which serve.py's json.dump can write);
- the file's own counters: completed and failed at most num_prompts; the acceptance rate is 100 x accepted / draft
  tokens, the length 1 + accepted / drafts and 1 + the sum of the per-position rates, as serve.py computes them;
- the file's own run id, host and profile are the run's own record: run.json's run_id, the host's manifest.json
  (run_id, host, parameters.profiles), the file's name (vllm_bench writes <profile>.json), never the directory name;
- the workload keys are equal across the profiles compared: each profile with its host's baseline, each host's
  baseline with the first host's, each later round (<profile>.round<r>.json, eagle3_bench_rounds) with its host's
  baseline, and a round file's `round` is its name's.

`check_run(run, baseline, hosts)` returns the run (as the eagle3_run lookup reads it) with every result file that fails
moved from its host's `results` to its `bad_files`, the reasons joined, so the report names it and its host fails.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

from ansible_collections.eagle3.trn2.plugins.module_utils import results_layout as layout
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema as _schema
from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import is_number as _is_number

SCHEMA = Path(__file__).with_name("result_schema.yml")

# What one bench run was asked to do; every profile compared must have run the same on each key present in either
# result (`--metadata` adds dataset/input_len/output_len/temperature/seed).
WORKLOAD_KEYS = ("dataset", "input_len", "output_len", "num_prompts", "max_concurrency", "request_rate",
                 "burstiness", "temperature", "seed", "tokenizer_id", "model_id", "total_input_tokens")

# Rounding: serve.py computes the rates from the same integers in float64 and json keeps a float exactly, so a true
# file agrees to the last bits; 1e-9 relative leaves room for a writer rounding to 9 significant digits, no more.
REL_TOL = 1e-9
ABS_TOL = 1e-9

WHY_REQUIRED = {"run_id": "vllm_bench passes it as --metadata", "host": "vllm_bench passes it as --metadata",
                "profile": "vllm_bench passes it as --metadata"}


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return _schema.load_yaml(SCHEMA.read_text())


@lru_cache(maxsize=1)
def _shape() -> dict[str, Any]:
    """The schema as the shared validator reads it: presence (required, dependentRequired) is said here, by key."""
    return {k: v for k, v in schema().items() if k not in ("required", "dependentRequired")}


def non_finite(value: Any, parts: list[Any] | None = None) -> Iterator[tuple[str, Any]]:
    """(path, value) of every NaN or infinite number in a JSON value."""
    parts = parts or [""]
    if isinstance(value, float) and not math.isfinite(value):
        yield _schema.path_name(parts), value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from non_finite(item, [*parts, key])
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from non_finite(item, [*parts, index])


def _num(value: float) -> str:
    return f"{value:.12g}"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def counter_problems(data: Mapping[str, Any]) -> list[str]:
    """The file against its own counters (only where the keys involved are finite numbers)."""
    def num(key: str) -> float | None:
        value = data.get(key)
        return value if _is_number(value) and math.isfinite(value) else None

    out = []
    prompts = num("num_prompts")
    for key in ("completed", "failed"):
        value = num(key)
        if prompts is not None and value is not None and value > prompts:
            out.append(f"{key} {_num(value)} is more than num_prompts {_num(prompts)} (a run cannot finish more "
                       "requests than it sent)")
    rate, length = num("spec_decode_acceptance_rate"), num("spec_decode_acceptance_length")
    drafts, drafted, accepted = (num("spec_decode_num_drafts"), num("spec_decode_draft_tokens"),
                                 num("spec_decode_accepted_tokens"))
    if rate is not None and accepted is not None and drafted:
        want = accepted / drafted * 100
        if not _close(rate, want):
            out.append(f"spec_decode_acceptance_rate {_num(rate)} disagrees with the file's own counters: "
                       f"100 x spec_decode_accepted_tokens / spec_decode_draft_tokens = 100 x {_num(accepted)} / "
                       f"{_num(drafted)} = {_num(want)}")
    if accepted is not None and drafted is not None and accepted > drafted:
        out.append(f"spec_decode_accepted_tokens {_num(accepted)} is more than spec_decode_draft_tokens "
                   f"{_num(drafted)}")
    if length is not None and accepted is not None and drafts:
        want = 1 + accepted / drafts
        if not _close(length, want):
            out.append(f"spec_decode_acceptance_length {_num(length)} disagrees with the file's own counters: "
                       f"1 + spec_decode_accepted_tokens / spec_decode_num_drafts = 1 + {_num(accepted)} / "
                       f"{_num(drafts)} = {_num(want)}")
    rates = data.get("spec_decode_per_position_acceptance_rates")
    if (length is not None and isinstance(rates, list) and rates
            and all(_is_number(r) and math.isfinite(r) for r in rates)):
        want = 1 + sum(rates)
        if not _close(length, want):
            out.append(f"spec_decode_acceptance_length {_num(length)} disagrees with "
                       f"spec_decode_per_position_acceptance_rates: 1 + their sum = {_num(want)}")
    return out


def completeness_problems(data: Mapping[str, Any]) -> list[str]:
    """Every request completed and none failed: a client whose server died under it still exits 0 and writes
    a file ("Successful requests: 19, Failed requests: 31"); its figures measure a broken run, whatever its workload."""
    prompts, completed, failed = (data.get(k) for k in ("num_prompts", "completed", "failed"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (prompts, completed, failed)):
        return []  # the schema names the wrong type
    if failed:
        return [f"{failed} of {prompts} requests failed (the server did not answer them; {completed} completed)"]
    if completed != prompts:
        return [f"{completed} of {prompts} requests completed"]
    return []


def file_problems(data: Any) -> list[str]:
    """Every problem of one result file on its own: presence, shape and types, finite numbers, every request completed
    and none failed (first: the cause an operator needs), its own counters."""
    if not isinstance(data, Mapping):
        return [f"a JSON {type(data).__name__}, not an object"]
    out, skip = [], set()
    for path, value in non_finite(data):
        shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        out.append(f"{path} must be a finite number (got {shown}; strict JSON has no NaN or Infinity)")
        skip.add(path)
    for key in schema()["required"]:
        if key not in data:
            out.append(f"{key} is missing ({WHY_REQUIRED.get(key, 'vllm bench serve writes it in every result')})")
    present = [k for k in schema()["dependentRequired"] if k in data]
    if present:
        out += [f"{other} is missing (the spec_decode_* keys are written together; {present[0]} is there)"
                for other in schema()["dependentRequired"][present[0]] if other not in data]
    for line in _schema.problems(_schema.plain(data), _shape(), ""):
        if not any(line.startswith(f"{p} ") or line.startswith(f"{p}[") for p in skip):
            out.append(line)
    return completeness_problems(data) + out + counter_problems(data)


def record_problems(data: Mapping[str, Any], profile: str, record: Mapping[str, Any], round_no: int = 1) -> list[str]:
    """The file's own run id, host, profile and round against the run's own record and its name.

    `record`: {"run_id": [(source, value), ...], "host": (source, value) or None, "profiles": [names] or None,
    "host_dir": the directory name, only to say why a host cannot be checked, "sha256": the manifest's path -> sha256
    of the rendered units and configs, or None}. A result that names its server config (--metadata config,
    config_sha256) must have been measured with the config the manifest records (a later
    roll must not lend its config to the run's figures).
    """
    out = []
    run_id = data.get("run_id")
    if isinstance(run_id, str):
        if not record.get("run_id"):
            out.append(f"run_id {run_id!r} cannot be checked: the run has no run.json run_id and "
                       f"{record.get('host_dir')} no usable manifest.json")
        for source, value in record.get("run_id") or []:
            if run_id != value:
                out.append(f"run_id {run_id!r} is not this run's ({source} says {value!r})")
    host = data.get("host")
    if isinstance(host, str):
        if not record.get("host"):
            out.append(f"host {host!r} cannot be checked: {record.get('host_dir')} has no usable manifest.json")
        else:
            source, value = record["host"]
            if host != value:
                out.append(f"host {host!r} is not this host's ({source} says {value!r})")
    name = layout.result_name(profile, round_no)
    own = data.get("profile")
    if isinstance(own, str):
        if own != profile:
            out.append(f"profile {own!r} is not the file's ({name}: vllm_bench writes each profile's result "
                       "as <profile>.json, round r >= 2 as <profile>.round<r>.json)")
        elif record.get("profiles") is not None and own not in record["profiles"]:
            out.append(f"profile {own!r} is not one of the host's profiles (manifest.json parameters.profiles: "
                       f"{', '.join(record['profiles']) or 'none'})")
    config, measured = data.get("config"), data.get("config_sha256")
    recorded = record.get("sha256")
    if isinstance(config, str) and isinstance(measured, str) and isinstance(recorded, Mapping):
        if config not in recorded:
            out.append(f"measured with server config {config}, which {record.get('host_dir')}/manifest.json does not "
                       "record")
        elif recorded[config] != measured:
            out.append(f"measured with server config {config} of sha256 {measured[:12]}, but "
                       f"{record.get('host_dir')}/manifest.json records {str(recorded[config])[:12]} (the config "
                       "changed after this result was measured: a stale result)")
    own_round = data.get("round")
    if own_round is None and round_no > 1:
        out.append(f"no round in a round-{round_no} file ({name}: vllm_bench passes --metadata round={round_no})")
    elif own_round is not None and str(own_round) != str(round_no):
        out.append(f"round {own_round!r} is not the file's ({name} is round {round_no})")
    return out


def _same(a: Any, b: Any) -> bool:
    """Workload values from JSON or --metadata strings: 512 == "512", 0 == "0.0", None only None."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def workload_diff(want: Mapping[str, Any], got: Mapping[str, Any], keys: Iterable[str] | None = None) -> list[str]:
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


def workload_problems(results: Mapping[str, Mapping[str, Mapping[str, Any]]], baseline: str,
                      hosts: Iterable[str]) -> dict[tuple[str, str], str]:
    """{(host, profile): why} for every result whose workload differs from the one it is compared with: each profile
    with its host's baseline, each host's baseline with the first host's (in `hosts` order) that has one."""
    out: dict[tuple[str, str], str] = {}
    first = None
    for host in hosts:
        own = results.get(host) or {}
        base = own.get(baseline)
        if base is None:
            continue
        if first is None:
            first = host
        else:
            diff = workload_diff(results[first][baseline], base, WORKLOAD_KEYS)
            if diff:
                out[(host, baseline)] = f"workload differs from {first}'s {baseline}: " + "; ".join(diff)
        for profile, data in own.items():
            if profile != baseline:
                diff = workload_diff(base, data, WORKLOAD_KEYS)
                if diff:
                    out[(host, profile)] = f"workload differs from {baseline}'s: " + "; ".join(diff)
    return out


def run_record(run: Mapping[str, Any], host: str) -> dict[str, Any]:
    """The run's own record of one host: run.json's run_id, the host's manifest (run_id, host, profiles)."""
    ids: list[tuple[str, str]] = []
    data = (run.get("run_json") or {}).get("data")
    if isinstance(data, Mapping) and isinstance(data.get("run_id"), str):
        ids.append(("run.json", data["run_id"]))
    manifest = ((run.get("hosts") or {}).get(host) or {}).get("manifest")
    record: dict[str, Any] = {"run_id": ids, "host": None, "profiles": None, "host_dir": host, "sha256": None}
    if isinstance(manifest, Mapping):
        if isinstance(manifest.get("run_id"), str):
            ids.append((f"{host}/manifest.json", manifest["run_id"]))
        if isinstance(manifest.get("sha256"), Mapping):
            record["sha256"] = manifest["sha256"]
        if isinstance(manifest.get("host"), str):
            record["host"] = (f"{host}/manifest.json", manifest["host"])
        parameters = manifest.get("parameters")
        profiles = parameters.get("profiles") if isinstance(parameters, Mapping) else None
        if isinstance(profiles, list):
            record["profiles"] = [p.get("name") for p in profiles if isinstance(p, Mapping)]
            record["k"] = {p.get("name"): (p.get("speculative_config") or {}).get("num_speculative_tokens")
                           for p in profiles if isinstance(p, Mapping)}
    return record


MEASURED = ("output_throughput", "median_tpot_ms", "median_ttft_ms", "duration", "total_output_tokens")


def round_problems(entry: Mapping[str, Any], record: Mapping[str, Any], baseline: str = "baseline",
                   skip: Iterable[tuple[str, int]] = ()) -> dict[tuple[str, int], str]:
    """The identity of every round of one host (rounds pooled together must be of one setup), over its files that passed
    the per-file checks:
    one engine version across all of them; no speculative-decoding counters in a baseline round; as many per-position
    rates as the profile's k (the manifest's); no two files with the same measurements (a copy is not a measurement);
    each profile's rounds in time order (vllm bench's own `date`), each inside its own benchmark window (timeline.json).
    (profile, round) -> why."""
    skip, out = set(skip), {}
    files = [(p, r, d) for p, r, d in _files(entry) if (p, r) not in skip and isinstance(d, Mapping)]
    first = next(((p, r, d["vllm_version"]) for p, r, d in files if isinstance(d.get("vllm_version"), str)), None)
    seen: dict[tuple, str] = {}
    last_date: dict[str, tuple[str, int]] = {}
    timeline = (entry.get("timeline") or {}).get("profiles") if isinstance(entry.get("timeline"), Mapping) else None
    for profile, round_no, data in sorted(files, key=lambda f: (f[1], f[0])):
        name, why = layout.result_name(profile, round_no), []
        version = data.get("vllm_version")
        if first and isinstance(version, str) and version != first[2]:
            why.append(f"vllm_version {version} is not {layout.result_name(first[0], first[1])}'s {first[2]}: the engine "
                       "changed within the run")
        drafts = data.get("spec_decode_num_drafts")
        if profile == baseline and isinstance(drafts, (int, float)) and drafts > 0:
            why.append(f"a baseline round with speculative-decoding counters ({drafts:g} drafts): its server "
                       "speculated, so it is no baseline")
        k, positions = (record.get("k") or {}).get(profile), data.get("spec_decode_per_position_acceptance_rates")
        if isinstance(k, int) and isinstance(positions, list) and len(positions) != k:
            why.append(f"{len(positions)} per-position rates, but the profile's k is {k} (manifest.json): measured "
                       "with another k")
        measured = tuple(data.get(key) for key in MEASURED)
        if all(isinstance(v, (int, float)) for v in measured):
            if measured in seen:
                why.append(f"the same measurements as {seen[measured]} ({', '.join(MEASURED)}): a copy, not a measurement")
            seen.setdefault(measured, name)
        date = data.get("date")
        if isinstance(date, str) and profile in last_date and date < last_date[profile][0]:
            why.append(f"dated {date}, before round {last_date[profile][1]} of {profile} ({last_date[profile][0]}): "
                       "not measured in this run's order")
        if isinstance(date, str):
            last_date[profile] = max(last_date.get(profile, (date, round_no)), (date, round_no))
        outside = _outside_window(date, (timeline.get(name[:-len(".json")]) if isinstance(timeline, Mapping) else None))
        if outside:
            why.append(outside)
        if why:
            out[(profile, round_no)] = "; ".join(why)
    return out


# How far a result's `date` may lie outside its benchmark's window (timeline.json, the controller's clock): the clocks
# of controller and host (NTP keeps them within a second), `date`'s whole seconds, and the file written after the end.
WINDOW_SLACK_S = 300


def _outside_window(date: Any, times: Any) -> str | None:
    """Why a result dated `date` (vllm bench's "%Y%m%d-%H%M%S", the client's local time: UTC, as the role runs it with
    TZ=UTC) was not measured in its own benchmark window `times` ({bench_start, bench_end}, UTC epoch seconds); None
    when it was, or when either is missing (a run recorded before timelines, a result written by hand is caught by its
    other checks)."""
    if not (isinstance(date, str) and isinstance(times, Mapping)):
        return None
    start, end = times.get("bench_start"), times.get("bench_end")
    if not (_is_number(start) and _is_number(end)):
        return None
    try:
        when = datetime.strptime(date, "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
    if start - WINDOW_SLACK_S <= when <= end + WINDOW_SLACK_S:
        return None
    shown = lambda t: datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
    return (f"dated {date} (UTC), outside its own benchmark window {shown(start)} to {shown(end)} UTC (timeline.json, "
            f"{WINDOW_SLACK_S} s either side): not measured in this run")


def check_run(run: Mapping[str, Any], baseline: str = "baseline",
              hosts: Iterable[str] | None = None) -> dict[str, Any]:
    """The run with every result file that fails a check moved to its host's bad_files (see the module's doc).
    `hosts`: the expected hosts, in the order the workload is compared (the first one's baseline is the fleet's)."""
    loaded = run.get("hosts") or {}
    expected = [h for h in (hosts or []) if h in loaded]
    order = expected + sorted(h for h in loaded if h not in expected)
    problems: dict[tuple[str, str, int], list[str]] = {}
    for host in order:
        record = run_record(run, host)
        for profile, round_no, data in _files(loaded[host]):
            found = file_problems(data)
            if isinstance(data, Mapping):
                found += record_problems(data, profile, record, round_no)
            if found:
                problems[(host, profile, round_no)] = found
    valid = {h: {p: d for p, d in (loaded[h].get("results") or {}).items() if (h, p, 1) not in problems}
             for h in order}
    for (host, profile), why in workload_problems(valid, baseline, expected if hosts else order).items():
        problems.setdefault((host, profile, 1), []).append(why)
    for host in order:
        for (profile, round_no), why in round_problems(loaded[host], run_record(run, host), baseline,
                                                       [(p, r) for (h, p, r) in problems if h == host]).items():
            problems[(host, profile, round_no)] = [why]
    for host in order:
        base = valid[host].get(baseline)
        for profile, round_no, data in _files(loaded[host]):
            if round_no > 1 and base is not None and (host, profile, round_no) not in problems:
                diff = workload_diff(base, data, WORKLOAD_KEYS)
                if diff:
                    problems[(host, profile, round_no)] = [f"workload differs from {baseline}'s: " + "; ".join(diff)]
    out = dict(run, hosts={})
    for host, entry in loaded.items():
        entry = dict(entry)
        bad = sorted((p, r) for (h, p, r) in problems if h == host)
        if bad:
            entry["results"] = {p: d for p, d in entry["results"].items() if (p, 1) not in bad}
            entry["rounds"] = {p: {r: d for r, d in later.items() if (p, r) not in bad}
                               for p, later in (entry.get("rounds") or {}).items()}
            entry["bad_files"] = list(entry.get("bad_files") or []) + [
                {"file": f"{host}/{layout.result_name(p, r)}", "reason": "; ".join(problems[(host, p, r)])}
                for p, r in bad]
        out["hosts"][host] = entry
    return out


def _files(entry: Mapping[str, Any]) -> Iterator[tuple[str, int, Any]]:
    """(profile, round, data) of every result file of a host: round 1 from `results`, later ones from `rounds`."""
    for profile, data in (entry.get("results") or {}).items():
        yield profile, 1, data
    for profile, later in (entry.get("rounds") or {}).items():
        for round_no, data in sorted(later.items()):
            yield profile, round_no, data


# A throughput reference (roles/bench_report/files/references/*.json, or an operator's file): what the reference gate
# reads of it (plugins/module_utils/report/gates.py), so that a file that is not one is refused before the benchmarks, not after
# them.
_FIGURE = {"type": "number", "exclusiveMinimum": 0}
REFERENCE = {
    # without a workload the gate is skipped with its reason (plugins/module_utils/report/gates.py): allowed
    "type": "object", "required": ["name", "source", "profiles"],
    "x-expect": "a reference: {name, source, key: {target, draft}, workload, profiles: {baseline: {output_throughput, "
                "median_tpot_ms}, <profile>: {...}}}, as roles/bench_report/files/references/ has them",
    "properties": {
        "name": {"type": "string", "minLength": 1}, "source": {"type": "string", "minLength": 1},
        "key": {"type": "object", "properties": {"target": {"type": "string"}, "draft": {"type": "string"}}},
        "workload": {"type": "object"},
        "profiles": {"type": "object", "required": ["baseline"], "minProperties": 2, "additionalProperties": {
            "type": "object", "required": ["output_throughput", "median_tpot_ms"],
            "properties": {"output_throughput": _FIGURE, "median_tpot_ms": _FIGURE, "median_ttft_ms": _FIGURE,
                           "acceptance_rate": {"type": "number", "minimum": 0, "maximum": 100},
                           "acceptance_length": {"type": "number", "minimum": 1}}}},
    },
}


def reference_problems(text: Any, where: str) -> list[str]:
    """Refusals of a reference file's text (strict JSON, REFERENCE's shape), each naming `where`."""
    try:
        data = json.loads(str(text), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
    except ValueError as exc:
        return [f"{where} is not a reference: not JSON ({' '.join(str(exc).split())[:120]})."]
    return _schema.problems(data, REFERENCE, where)


def warm() -> None:
    """Fill the result schema's cache in ansible-playbook's process (the preload callback), for the forked workers."""
    _shape()
