"""The preflight's check of every eagle3_* setting against plugins/module_utils/settings/settings_schema.yml, so a wrong value is
refused by name before any host changes.

`settings_problems(values, given_as_text, allowed)`: one refusal per problem, each naming the setting:
- a name under eagle3_ that is neither a setting, one of the plays' facts (x-facts) nor in eagle3_settings_allow
  is refused with the closest setting ("eagle3_num_speculative_token is not a setting; did you mean
  eagle3_num_speculative_tokens?"): a misspelt setting would leave its default in place, silently;
- every value against its schema (plugins/module_utils/settings/schema.py: strict types, whole-value patterns, no control
  characters, closed mappings with suggestions). A value given as text (`-e key=value`) or made by a template is first
  converted once by the declared type: "20" to 20 for an integer, "2,3,4" to [2, 3, 4] for a list of integers,
  "false" to false for a boolean; any other value keeps its type (a YAML true is not a number).
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from ansible_collections.eagle3.trn2.plugins.module_utils.settings import schema as _schema
from ansible_collections.eagle3.trn2.plugins.module_utils.results.bands import band_problems
from ansible_collections.eagle3.trn2.plugins.module_utils.collection import collection_root
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.layers import eagle3_merged

SCHEMA = Path(__file__).with_name("settings_schema.yml")
# The roles' own defaults: an input a setting does not feed unchanged is computed there from settings.
ROLES = collection_root() / "roles"
SETTING = re.compile(r"eagle3_[a-z0-9_]+")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INTEGER = re.compile(r"[+-]?[0-9]+")
NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
TRUE, FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return _schema.load_yaml(SCHEMA.read_text())


@lru_cache(maxsize=2)
def _effective(allow_loader: bool) -> dict[str, Any]:
    """The schema as the validator reads it: each `x-loader` list (environment names that change what code runs)
    refused as key names unless eagle3_environment_allow_loader is true."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if "x-loader" in out and not allow_loader:
                out["not"] = {"enum": list(out["x-loader"])}
            return out
        return [walk(v) for v in node] if isinstance(node, list) else node
    return walk(schema())


def settings() -> list[str]:
    """The eagle3_* settings (the schema also describes the role inputs an operator sets directly)."""
    return sorted(name for name in schema()["properties"] if name.startswith("eagle3_"))


def role_inputs() -> list[str]:
    return sorted(name for name in schema()["properties"] if not name.startswith("eagle3_"))


@lru_cache(maxsize=1)
def input_sources() -> dict[str, list[str]]:
    """Each role input the project's settings make, with the eagle3_* settings its value is made from: the inputs a
    setting feeds unchanged (its `inputs:` in the schema), then the inputs a role computes from settings in its own
    defaults (each setting once, in the order the value names them)."""
    out: dict[str, list[str]] = {}
    for name, node in schema()["properties"].items():
        for role_input in node.get("inputs", []):
            out[role_input] = [name]
    for path in sorted(ROLES.glob("*/defaults/main.yml")):
        for name, value in (_schema.load_yaml(path.read_text()) or {}).items():
            found = [n for n in dict.fromkeys(SETTING.findall(str(value))) if n in schema()["properties"]]
            if found and name not in out:
                out[str(name)] = found
    return out


def refusal_sources(reason: str) -> list[str]:
    """For each role input a refusal names (by its exact name, as a whole token: vllm_bench_dataset_path names that
    input only, not vllm_bench_dataset), "<input> is set from <settings>": the settings to change."""
    named = set(NAME.findall(str(reason)))
    return [f"{name} is set from {', '.join(found)}" for name, found in input_sources().items() if name in named]


def facts() -> list[str]:
    return list(schema()["x-facts"])


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return {**schema()["$defs"][ref.rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def convert(text: Any, node: dict[str, Any]) -> Any:
    """A text (from -e key=value or a template) as the declared type, when it reads as one; else unchanged."""
    if not isinstance(text, str):
        return text
    node = _resolve(node)
    for alternative in node.get("anyOf", []):
        value = convert(text, alternative)
        if value is not text:
            return value
    kinds = node.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds or "enum" in node or "const" in node:
        return text
    word = text.strip()
    if "integer" in kinds and INTEGER.fullmatch(word):
        return int(word)
    if "number" in kinds and NUMBER.fullmatch(word):
        return float(word) if not INTEGER.fullmatch(word) else int(word)
    if "boolean" in kinds and word.lower() in TRUE | FALSE:
        return word.lower() in TRUE
    if "null" in kinds and word.lower() in ("", "null", "none", "~"):
        return None
    if "array" in kinds:
        items = node.get("items", {})
        return [convert(part.strip(), items) for part in word.split(",")] if word else []
    return text


def unknown_names(names: Iterable[str], allowed: Any = ()) -> list[str]:
    """A refusal per name an operator most likely meant as one of the project's (a misspelt name would
    otherwise be ignored silently and its default used): any unknown name
    under `eagle3_`; a name that is one of the project's in another case (`EAGLE3_PORT`, an environment variable's
    spelling); and a name under `eagle_` or a role's prefix within two edits of one of the project's (a misspelt role
    input would be ignored without a word). Names of your own go in eagle3_settings_allow."""
    if isinstance(allowed, str) or not isinstance(allowed, (list, tuple)):
        return [f"eagle3_settings_allow must be a list of variable names (got {_schema.shown(allowed)})."]
    known = project_names() | {str(a) for a in allowed}
    out = []
    for name in sorted({str(n) for n in names} - known):
        lower = name.lower()
        if lower != name and lower in known:
            out.append(f"{name} is not a setting: did you mean {lower}? (names are lower case; an environment "
                       "variable's spelling is not read)")
        elif lower.startswith(PREFIXES + role_prefixes()):
            near = min(((_edits_within(lower, k, 2), k) for k in known), default=(3, ""))
            what = "a setting" if name.startswith("eagle") else "an input of the role"
            if near[0] <= 2:
                out.append(f"{name} is not {what}; did you mean {near[1]}? (a misspelt name is ignored without a "
                           "word; a variable of your own goes in eagle3_settings_allow)")
            elif name.startswith("eagle3_"):
                out.append(f"{name} is not a setting" + (_schema.closest(name, settings()) or
                           " (docs/settings.md lists the settings; a variable of your own under eagle3_ goes in"
                           " eagle3_settings_allow)."))
    return out


def _edits_within(a: str, b: str, bound: int) -> int:
    """The Levenshtein distance of a and b when it is at most `bound`, else bound + 1. Only the cells within `bound` of the diagonal can hold
    a distance that small, and a row past `bound` ends it: a misspelt name is compared with every name of the project,
    so the full table's cost counts."""
    over = bound + 1
    if abs(len(a) - len(b)) > bound:
        return over
    prev = [min(j, over) for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        lo, hi = max(1, i - bound), min(len(b), i + bound)
        row = [over] * (len(b) + 1)
        row[0] = min(i, over)
        for j in range(lo, hi + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != b[j - 1]), over)
        if min(row[lo - 1:hi + 1]) > bound:
            return over
        prev = row
    return prev[-1]


def serial_batch(batch: Any, fleet: int) -> int:
    """The hosts a `serial` batch takes of a fleet, as Ansible counts it (ansible.utils.helpers.pct_to_int: a
    percentage of the fleet, truncated, at least 1)."""
    if isinstance(batch, str) and batch.endswith("%"):
        return max(1, int(int(batch[:-1]) / 100.0 * fleet))
    return int(batch)


DURATION = re.compile(r"([1-9][0-9]*)(ms|s|m|h|d)")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(duration: Any) -> float | None:
    """A Prometheus duration ("15s", "5m") in seconds, as the schema's $defs.duration takes it; None for anything else."""
    found = DURATION.fullmatch(duration) if isinstance(duration, str) else None
    return int(found.group(1)) * UNIT_SECONDS[found.group(2)] if found else None


def meaning_problems(values: Mapping[str, Any], fleet: int) -> list[str]:
    """The rules that span settings (no single setting's schema can say them), on values the schema already accepted,
    for each host as its values resolve there:
    - on neuron the instance type is one whose NeuronCores and devices the project knows, and the release is not one
      a newer patch of its minor supersedes (unless eagle3_neuron_allow_superseded);
    - eagle3_serve is none, best or one of the run's profiles, and serving needs an API key;
    - podman hosts share the machine's network: they serve on loopback only;
    - the CPU build serves only the rehearsal's generated models;
    - acceptance bands agree with themselves (bands.band_problems);
    - the rate window holds two scrape intervals at least (rate() needs two samples in it);
    - the first roll batch is the canary: smaller than the fleet when the fleet has more than one host;
    - a benchmark whose estimated length (rounds x profiles x prompts x output tokens at the accelerator's stated rate per
      concurrent request) exceeds eagle3_bench_max_hours is refused unless eagle3_bench_long_confirmed is true.
    """
    out, get = [], values.get
    accelerator, instance, serve = get("eagle3_accelerator"), get("eagle3_instance_type"), get("eagle3_serve")
    for table, what in (("eagle3_neuron_cores", "Neuron devices"), ("eagle3_neuron_devices", "Neuron device count")):
        if accelerator == "neuron" and isinstance(get(table), Mapping) and instance not in get(table):
            out.append(f"eagle3_instance_type {instance} has no {what} the project knows of ({table} lists "
                       f"{', '.join(get(table))}); accelerator neuron needs one.")
    if accelerator == "neuron" and get("eagle3_neuron_allow_superseded") is not True:
        out += superseded_problems(get("eagle3_neuron_sdk_version"), get("eagle3_neuron_releases"))
    names = [p.get("name") for p in get("eagle3_profiles") or [] if isinstance(p, Mapping)]
    if isinstance(serve, str) and names and serve not in ["none", "best", *names]:
        out.append(f"eagle3_serve must be none, best or one of the run's profiles {', '.join(names)} (got \"{serve}\").")
    if serve not in (None, "none") and not get("eagle3_serve_api_key"):
        out.append(f"eagle3_serve {serve} needs an API key: set eagle3_serve_api_key from the EAGLE3_API_KEY environment "
                   "variable or an Ansible Vault file (-e @vault.yml).")
    if get("eagle3_teardown", "never") != "never" and serve not in (None, "none"):
        out.append(f"eagle3_teardown {get('eagle3_teardown')} tears down a fleet that eagle3_serve {serve} puts into "
                   "service: a run that serves keeps its fleet (eagle3_teardown: never), a run that only benchmarks "
                   "(eagle3_serve: none) may tear it down.")
    if get("eagle3_provider") == "podman" and get("eagle3_serve_bind_address") not in ("127.0.0.1", get("eagle3_bind_address")):
        out.append("eagle3_serve_bind_address must be 127.0.0.1 on podman hosts: they share this machine's network, and "
                   f"the rehearsal serves on loopback only (got \"{get('eagle3_serve_bind_address')}\").")
    if accelerator == "cpu" and get("eagle3_model_source", "rehearsal") != "rehearsal":
        out.append("eagle3_model_source must be rehearsal with accelerator cpu; the CPU build serves only the tiny generated "
                   f"models (got \"{get('eagle3_model_source')}\").")
    out += band_problems(get("eagle3_acceptance_bands"), "eagle3_acceptance_bands")
    window, interval = _rate_window(values)
    if window is not None and interval is not None and window < 2 * interval:
        out.append(f"eagle3_monitor_rate_window {get('eagle3_monitor_rate_window')} holds fewer than two scrape intervals "
                   f"(eagle3_monitor_scrape_interval {get('eagle3_monitor_scrape_interval')}): rate() needs two samples "
                   "in its window; four intervals or more is Prometheus's advice.")
    batches = values.get("eagle3_roll_batches")
    if isinstance(batches, list) and batches and fleet > 1 and serial_batch(batches[0], fleet) >= fleet:
        out.append(f"eagle3_roll_batches' first batch {_schema.shown(batches[0])} takes all {fleet} hosts of the fleet: "
                   f"it is the canary, so it must be smaller (such as 1) (got {_schema.shown(batches)}).")
    estimate = bench_hours(values)
    limit = values.get("eagle3_bench_max_hours")
    if estimate is not None and isinstance(limit, (int, float)) and estimate[0] > limit \
            and values.get("eagle3_bench_long_confirmed") is not True:
        hours, why = estimate
        out.append(f"eagle3_bench_num_prompts {values.get('eagle3_bench_num_prompts')}: the benchmark would take about "
                   f"{hours:.1f} h ({why}), more than eagle3_bench_max_hours {limit:g}: fewer prompts, or "
                   f"eagle3_bench_long_confirmed: true to run it.")
    return out


RELEASE = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")


def superseded_by(version: Any, releases: Any) -> str | None:
    """The newest row of the same minor as `version` with a higher patch number (2.33.1 for 2.33.0), or None."""
    found = RELEASE.fullmatch(version) if isinstance(version, str) else None
    if not found or not isinstance(releases, Mapping) or version not in releases:
        return None
    newer = [(int(m.group(3)), name) for name in releases if isinstance(name, str)
             for m in [RELEASE.fullmatch(name)] if m and m.group(1, 2) == found.group(1, 2)
             and int(m.group(3)) > int(found.group(3))]
    return max(newer)[1] if newer else None


def superseded_problems(version: Any, releases: Any) -> list[str]:
    """A release a newer patch of its minor supersedes, refused naming the patch, its date and what it fixes."""
    newer = superseded_by(version, releases)
    if newer is None:
        return []
    patch = releases[newer].get("patch") if isinstance(releases[newer], Mapping) else None
    patch = patch if isinstance(patch, Mapping) else {}
    fixes = [f if f.endswith(".") else f + "." for f in (str(x).strip() for x in patch.get("fixes") or []) if f]
    when = f" of {patch['released']}" if patch.get("released") else ""
    return [f"eagle3_neuron_sdk_version {version} is superseded by the patch release {newer}{when}, which fixes: "
            f"{' '.join(fixes) if fixes else 'see its release notes'} Select it (eagle3_neuron_sdk_version: "
            f'"{newer}"), or set eagle3_neuron_allow_superseded: true to install {version} anyway.']


def _rate_window(values: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(rate window, scrape interval) in seconds, None where a setting is missing or not a Prometheus duration."""
    return seconds(values.get("eagle3_monitor_rate_window")), seconds(values.get("eagle3_monitor_scrape_interval"))


def meaning_warnings(values: Mapping[str, Any]) -> list[str]:
    """What the settings allow but an operator should hear about (the lookup shows each as an Ansible warning)."""
    out, get = [], values.get
    window, interval = _rate_window(values)
    if window is not None and interval is not None and 2 * interval <= window < 4 * interval:
        out.append(f"eagle3_monitor_rate_window {get('eagle3_monitor_rate_window')} holds fewer than four scrape intervals "
                   f"(eagle3_monitor_scrape_interval {get('eagle3_monitor_scrape_interval')}): one missed scrape leaves "
                   "rate() a single sample and the acceptance alert blind; four intervals or more is Prometheus's advice.")
    return out


def _rounds(rounds: Any) -> int:
    """eagle3_bench_rounds as the estimates count it: a positive integer, else 1."""
    return rounds if isinstance(rounds, int) and not isinstance(rounds, bool) and rounds > 0 else 1


def _profiles(ks: Any) -> int:
    """The profiles of a round: the baseline and one per k (one when the k list is unreadable)."""
    return 1 + (len(ks) if isinstance(ks, list) else 1)


def bench_hours(values: Mapping[str, Any]) -> tuple[float, str] | None:
    """(hours, how) of a run's benchmarks, estimated from its settings; None when a value it needs is not there."""
    rates, accelerator = values.get("eagle3_bench_stream_rate"), values.get("eagle3_accelerator")
    prompts, tokens = values.get("eagle3_bench_num_prompts"), values.get("eagle3_bench_output_len")
    concurrency, ks = values.get("eagle3_bench_max_concurrency"), values.get("eagle3_num_speculative_tokens")
    if not (isinstance(rates, Mapping) and accelerator in rates and all(isinstance(v, int) for v in
                                                                     (prompts, tokens, concurrency))):
        return None
    options = eagle3_merged(values.get("eagle3_server_options_defaults"), values.get("eagle3_server_options") or {})
    seqs = options.get("max-num-seqs") if isinstance(options, Mapping) else None
    streams = min(concurrency, seqs) if isinstance(seqs, int) and seqs > 0 else concurrency
    profiles, rounds = _profiles(ks), _rounds(values.get("eagle3_bench_rounds"))
    rate = float(rates[accelerator]) * streams
    hours = rounds * profiles * prompts * tokens / rate / 3600
    return hours, ((f"{rounds} rounds x " if rounds > 1 else "")
                   + f"{profiles} profiles x {prompts} prompts x {tokens} output tokens at about {rate:g} tok/s, "
                   f"{rates[accelerator]:g} per concurrent request on {accelerator} x {streams}")


# The part of a run that is neither a server start nor a benchmark (the install, the model download, the report): the
# dead-man switch's allowance for it (eagle3_run_hours).
SETUP_HOURS = 1.0


RUN_HOURS_NAMES = ("eagle3_bench_stream_rate", "eagle3_accelerator", "eagle3_bench_num_prompts", "eagle3_bench_output_len",
                   "eagle3_bench_max_concurrency", "eagle3_num_speculative_tokens", "eagle3_server_options_defaults",
                   "eagle3_server_options", "eagle3_bench_rounds", "eagle3_ready_timeout")


def typed(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` (resolved) each converted by its declared type, as the check converts -e text and templates' output."""
    props = _effective(False)["properties"]
    return {name: convert(_schema.plain(value), props[name]) if name in props else _schema.plain(value)
            for name, value in values.items()}


def run_hours(values: Mapping[str, Any]) -> float:
    """The expected length of a run, in hours rounded up to the quarter: the benchmark estimate (bench_hours), plus the
    readiness bound (eagle3_ready_timeout) for each server start (every profile of every round), plus SETUP_HOURS.
    Settings it cannot read count as 6 hours of benchmark."""
    bench = bench_hours(values)
    ready = values.get("eagle3_ready_timeout")
    starts = _rounds(values.get("eagle3_bench_rounds")) * _profiles(values.get("eagle3_num_speculative_tokens"))
    ready = ready if isinstance(ready, int) and not isinstance(ready, bool) and ready > 0 else 3600
    hours = (bench[0] if bench else 6.0) + starts * ready / 3600 + SETUP_HOURS
    return math.ceil(hours * 4) / 4


def settings_problems(values: Mapping[str, Any], as_text: Iterable[str] = (), allowed: Any = (),
                      unresolved: Mapping[str, str] | None = None, templated: Iterable[str] = (),
                      fleet: int = 1, others: Iterable[str] = ()) -> list[str]:
    """Every refusal of the eagle3_* variables `values` (name -> resolved value).

    `as_text`: the names given as text (-e key=value), converted by the declared type; `templated`: the names whose
    value a template made (converted too: a template renders "8191" from a text it was given). A value a template
    made is refused only when no value given directly is: its problem is then the given one's (eagle3_port=abc
    makes eagle3_serve_port "abc"), named once. `unresolved`: name -> why its template failed; only its name is
    checked here (a failing template is left to the rules that know what it means, below). `others`: every other
    variable name the play sees, judged by its name only (a misspelt or environment-style spelling of a project name).
    """
    full = _effective(values.get("eagle3_environment_allow_loader") is True)
    props, as_text, templated = full["properties"], set(as_text), set(templated)
    out = unknown_names([*values, *(unresolved or {}), *others], allowed)
    derived: list[str] = []
    for name in sorted(values):
        if name not in props:
            continue
        node = props[name]
        value = _schema.plain(values[name])
        if name in as_text or name in templated:
            value = convert(value, node)
        found = _schema.problems(value, node, name, full["$defs"])
        (derived if name in templated and name not in as_text else out).extend(found)
    # A template that fails (eagle3_vllm_packages without a row for eagle3_neuron_sdk_version) is left to the rules
    # that know what it means: the roles' preflight names the setting to change.
    if out or derived:
        return out or derived
    converted = {name: convert(_schema.plain(value), props[name]) if name in as_text | templated and name in props
                 else _schema.plain(value) for name, value in values.items()}
    return meaning_problems(converted, fleet)


def doc_rows() -> list[str]:
    """docs/settings.md, "The schema": one table row per setting and role input, from the schema itself (the test
    tests/unit/test_settings_schema.py compares the committed rows with these)."""
    rows = ["| setting | expected |", "|---|---|"]
    for name in sorted(schema()["properties"]):
        node = _resolve(schema()["properties"][name])
        expect = node.get("x-expect")
        if not expect:
            kinds = node.get("type", "")
            kinds = kinds if isinstance(kinds, list) else [kinds]
            expect = " or ".join(_schema.WORDS.get(k, k) for k in kinds if k) or "see its row above"
            if node.get("additionalProperties") is False:
                expect += " with the keys " + ", ".join(node.get("properties", {}))
        text = (str(expect) + (" (secret)" if node.get("x-secret") else "")).replace("|", "\\|")
        rows.append(f"| `{name}` | {text} |")
    return rows


@lru_cache(maxsize=None)
def role_input_entries(role: str) -> dict[str, str]:
    """Each input of `role` the schema describes -> the schema entry that describes it: the setting that feeds it
    unchanged (`inputs:`), or the input's own entry (an input an operator sets directly)."""
    out = {}
    for name, node in schema()["properties"].items():
        for role_input in node.get("inputs", []):
            if role_input.startswith(role + "_"):
                out[role_input] = name
        if name.startswith(role + "_"):
            out[name] = name
    return out


def input_problems(values: Mapping[str, Any], entries: Mapping[str, str], converted: Iterable[str] = (),
                   allow_loader: bool = False) -> list[str]:
    """Refusals of role inputs (name -> resolved value) by the schema entries that describe them (`entries`, as
    role_input_entries gives them), each naming the input. A value in `converted` (given as text with -e key=value, or
    made by a template) is converted once by the declared type, as the settings' check does; `allow_loader` is
    eagle3_environment_allow_loader's value."""
    full = _effective(allow_loader is True)
    converted, out = set(converted), []
    for name in sorted(set(values) & set(entries)):
        node = full["properties"][entries[name]]
        value = _schema.plain(values[name])
        if name in converted:
            value = convert(value, node)
        out.extend(_schema.problems(value, node, name, full["$defs"]))
    return out


def resolve(templar: Any, variables: Mapping[str, Any], names: Iterable[str]) -> tuple[dict, dict, set]:
    """(values, unresolved, templated) of `names` as a task sees them: each resolved on its own with the task's
    templar; a template that fails is kept in `unresolved` (name -> why, one line) for the rule that knows what it
    means; `templated` names the values a template made. The one resolver of both lookups (settings_problems,
    input_problems)."""
    values, unresolved, templated = {}, {}, set()
    for name in names:
        raw = variables[name]
        try:
            values[name] = templar.template(raw)
        except Exception as exc:  # a template failing because of another setting is that setting's refusal
            unresolved[name] = " ".join(str(exc).split())[:300]
            continue
        if isinstance(raw, str) and templar.is_template(raw):
            templated.add(name)
    return values, unresolved, templated


# One host's benchmark units and its serving unit never run together: they may share a port (the serving port's default
# is eagle3_port). Any other two services on one network may not.
SHARED_PORTS = frozenset({"eagle3_port", "eagle3_serve_port"})
LOOPBACK = "this machine"


def port_problems(hosts: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every port two services would take on one network (the second
    would fail at its start, after changes), over the hosts as each resolved its own values:
    `hosts` is name -> {"network": where its ports live (LOOPBACK for podman hosts and loopback addresses: they share
    the machine's network, the controller's included), "ports": {setting or ansible_port: port}}."""
    taken: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for host, record in sorted(hosts.items()):
        for what, port in sorted((record.get("ports") or {}).items()):
            if isinstance(port, int) and not isinstance(port, bool):
                taken.setdefault((str(record.get("network", host)), port), []).append((host, what))
    out = []
    for (network, port), users in sorted(taken.items()):
        if len(users) > 1 and not (len({host for host, _ in users}) == 1 and {what for _, what in users} <= SHARED_PORTS):
            where = "this machine's network, which the podman hosts share" if network == LOOPBACK else f"host {network}"
            out.append(f"port {port} is taken twice on {where}: " + ", ".join(f"{what} of {host}" for host, what in users)
                       + "; give each service its own port.")
    return out


# What a run measures: the hosts of one run, and every rerun of it, must measure the same (else their figures are
# not comparable). Neutral keys, as
# vllm_bench records them in run.json, each with the setting an operator changes.
WORKLOAD = {"dataset": "eagle3_bench_dataset", "input_len": "eagle3_bench_input_len",
            "output_len": "eagle3_bench_output_len", "num_prompts": "eagle3_bench_num_prompts",
            "max_concurrency": "eagle3_bench_max_concurrency", "temperature": "eagle3_bench_temperature",
            "rounds": "eagle3_bench_rounds", "profiles": "eagle3_num_speculative_tokens"}


def workload_problems(hosts: Mapping[str, Mapping[str, Any]], recorded: Mapping[str, Any] | None = None,
                      run_id: str = "") -> list[str]:
    """Hosts (name -> {"workload": {...}}, as each resolved its values) that would measure something else than the
    first host, or than the run's recorded workload (run.json of a run being resumed)."""
    own = {host: r["workload"] for host, r in sorted(hosts.items()) if isinstance(r, Mapping) and isinstance(r.get("workload"), Mapping)}
    if not own:
        return []

    def differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
        return [f"{key} {a.get(key)!r} vs {b.get(key)!r} ({WORKLOAD[key]})" for key in WORKLOAD if key in a and key in b
                and a[key] != b[key]]

    out = []
    if isinstance(recorded, Mapping) and recorded:
        for host, workload in own.items():
            diff = differs(recorded, workload)
            if diff:
                out.append(f"run {run_id} was benchmarked with another workload than {host} would measure now "
                           f"(recorded vs now: {'; '.join(diff)}): its results would not compare. Set the recorded "
                           f"values, or start a new run (another eagle3_run_id, or none for a new one).")
        return out
    first, base = next(iter(own.items()))
    for host, workload in own.items():
        diff = differs(base, workload)
        if diff:
            out.append(f"{host} would measure another workload than {first} ({first} vs {host}: {'; '.join(diff)}): "
                       "the fleet's results would not compare; set these settings for the whole fleet.")
    return out


# Prefixes an operator's name is judged under: the project's, a slip of it, and each role's (the names an operator most
# likely meant as one of the project's).
PREFIXES = ("eagle3_", "eagle_")


@lru_cache(maxsize=1)
def project_names() -> frozenset[str]:
    """Every variable name the project itself defines: settings and their facts, each role's inputs (its defaults and
    its argument_specs options, every entry point) and what its tasks register or set as facts."""
    names = set(settings()) | set(facts()) | set(role_inputs())
    for role in ROLES.iterdir():
        for file in (role / "defaults" / "main.yml", role / "meta" / "argument_specs.yml"):
            data = _schema.load_yaml(file.read_text()) if file.is_file() else None
            if file.name == "main.yml" and isinstance(data, dict):
                names |= set(data)
            elif isinstance(data, dict):
                names |= {o for spec in (data.get("argument_specs") or {}).values() for o in (spec.get("options") or {})}
    for file in [*ROLES.glob("*/tasks/*.yml"), *(collection_root() / "playbooks").rglob("*.yml")]:
        text = file.read_text()
        names |= set(re.findall(r"^\s*register: ([a-z][a-z0-9_]*)\s*$", text, re.M))
        for block in re.findall(r"set_fact:\n((?:\s{4,}[a-z_][a-z0-9_]*:.*\n?)+)", text):
            names |= set(re.findall(r"^\s+([a-z][a-z0-9_]*):", block, re.M))
    return frozenset(names)


@lru_cache(maxsize=1)
def role_prefixes() -> tuple[str, ...]:
    return tuple(sorted(f"{role.name}_" for role in ROLES.iterdir() if (role / "tasks").is_dir()))


def warm() -> None:
    """Fill the caches above (the schema, its effective forms, each role's inputs, the project's names). The preload
    callback calls it in ansible-playbook's own process: the task workers, forked from it, find them filled instead of
    parsing the schema and the roles' YAML again in each task (about half of a preflight's worker time before)."""
    for allow_loader in (False, True):
        _effective(allow_loader)
    input_sources()
    project_names()
    for prefix in role_prefixes():
        role_input_entries(prefix[:-1])
