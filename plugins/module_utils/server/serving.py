"""Which profile each host serves after the benchmark (eagle3_serve: none | best | a profile name), and whether the
host still has the configuration the run measured.

Pure: the plan is computed by eagle3_report from the run's rows and gate results, written into verdict.json and the
report, and read back by playbooks/serve.yml, which puts the plan into service; vllm_serving compares the profile's
unit and server config on the host with the run's manifest.json before it serves (serve what was measured).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any
import yaml

from ansible_collections.eagle3.trn2.plugins.module_utils.results.numbers import median


def eagle3_serving(rows: dict[str, list[dict[str, Any]]], blocked: dict[str, dict[str, list[str]]],
                   failed_hosts: dict[str, str], expected: list[str], serve: str = "none") -> dict[str, Any]:
    """{"mode", "profile", "why", "hosts": {host: {"profile": name or None, "why": text}}}.

    `rows`: the comparison rows per host that was judged; `blocked[host][profile]`: the enforced gates that
    profile failed on that host (empty or missing: passed); `failed_hosts`: hosts that failed outright.
    """
    plan: dict[str, Any] = {"mode": serve, "profile": None, "why": None, "hosts": {}}
    if serve == "none":
        plan["why"] = "eagle3_serve is none: every server is stopped after the benchmark"
        plan["hosts"] = {h: {"profile": None, "why": plan["why"]} for h in expected}
        return plan

    judged = [h for h in expected if h in rows and h not in failed_hosts]
    # rounds > 1 on every host: the lower bound of each profile's speedup over its host's baseline (1 for the baseline)
    rounds = bool(judged) and all((r.get("rounds") or 1) > 1 and r.get("decision") is not None
                                  for h in judged for r in rows.get(h, []))
    key, what = ("decision", "lower bound of the speedup") if rounds else ("output_throughput", "output_throughput")

    def passing(host: str) -> dict[str, float]:
        host_blocked = blocked.get(host, {})
        return {r["profile"]: r[key] for r in rows.get(host, [])
                if r.get(key) is not None and not host_blocked.get(r["profile"])}

    if serve == "best":
        common = set.intersection(*(set(passing(h)) for h in judged)) if judged else set()
        if common:
            medians = {p: median([passing(h)[p] for h in judged]) for p in common}
            choice = max(sorted(medians), key=lambda p: medians[p])
            shown = f"{medians[choice]:.2f}x" if rounds else f"{medians[choice]:.1f} tok/s"
            plan.update(profile=choice, why=(
                f"{choice}: the highest median {what} ({shown} over {len(judged)} "
                f"host(s)) among the profiles that pass every enforced gate on every host"))
        else:
            plan["why"] = ("no profile passes every enforced gate on every host with results"
                           if judged else "no host has usable results")
    else:
        choice = serve
        plan.update(profile=choice, why=f"{choice}: named by eagle3_serve")
    for host in expected:
        if host in failed_hosts:
            why = f"the host failed: {failed_hosts[host]}"
        elif host not in rows:
            why = "the host has no results"
        elif plan["profile"] is None:
            why = plan["why"]
        elif plan["profile"] not in {r["profile"] for r in rows[host]}:
            why = f"{plan['profile']} has no result on this host"
        elif blocked.get(host, {}).get(plan["profile"]):
            why = f"{plan['profile']} failed an enforced gate here: {blocked[host][plan['profile']][0]}"
        else:
            plan["hosts"][host] = {"profile": plan["profile"], "why": plan["why"]}
            continue
        plan["hosts"][host] = {"profile": None, "why": why}
    return plan


def eagle3_serving_lines(plan: dict[str, Any]) -> list[str]:
    """One line per host for the verdict's printout."""
    if plan.get("mode", "none") == "none":
        return []
    return [f"serving {host}: {entry['profile']}" if entry["profile"] else f"serving {host}: nothing ({entry['why']})"
            for host, entry in sorted(plan.get("hosts", {}).items())]


def eagle3_serving_targets(plan: dict[str, Any] | None, addresses: dict[str, str]) -> list[dict[str, str]]:
    """[{"host", "address", "profile"}] for every host the plan puts into service, sorted by host; `addresses`
    maps each inventory host to HOST:PORT of its serving unit. A serving host without an address is an error."""
    targets = []
    for host, entry in sorted(((plan or {}).get("hosts") or {}).items()):
        if not (entry or {}).get("profile"):  # serves nothing (a serving record's null)
            continue
        if not addresses.get(host):
            raise ValueError(f"eagle3_serving_targets: {host} serves {entry['profile']} but has no monitor address")
        targets.append({"host": host, "address": addresses[host], "profile": entry["profile"]})
    return targets


# Serve what was measured: a roll, a service run with other settings or a hand edit may change a
# profile's unit or server config after the run benchmarked it; the run's figures then belong to another configuration.
def _sha256(text: str) -> str:
    """As the manifest's sha256 (Ansible's hash('sha256') of the text, UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _leaves(value: Any, prefix: str = "") -> dict[str, str]:
    """A parsed config's values by dotted key (speculative-config.num_speculative_tokens), each as JSON."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, sub in value.items():
            out.update(_leaves(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


def _shown(value: str | None) -> str:
    if value is None:
        return "absent"
    parsed = json.loads(value)
    return parsed if isinstance(parsed, str) else value


def _config_keys(host_text: str, run_text: str) -> list[str]:
    """The keys whose values differ between two YAML server configs; [] when either is no mapping."""
    try:
        host, run = yaml.safe_load(host_text), yaml.safe_load(run_text)
    except yaml.YAMLError:
        return []
    if not isinstance(host, dict) or not isinstance(run, dict):
        return []
    here, measured = _leaves(host), _leaves(run)
    return [f"{key}: {_shown(here.get(key))} on the host, {_shown(measured.get(key))} measured"
            for key in sorted(set(here) | set(measured)) if here.get(key) != measured.get(key)]


def _line_changes(host_text: str, run_text: str, most: int = 3) -> list[str]:
    """The lines of a unit only on the host, then only in the run (up to `most` each)."""
    here, measured = host_text.splitlines(), run_text.splitlines()
    out = []
    for where, lines, other in (("on the host only", here, set(measured)), ("measured only", measured, set(here))):
        only = [line for line in lines if line not in other]
        if only:
            more = f" and {len(only) - most} more" if len(only) > most else ""
            out.append(f"{where}: {', '.join(json.dumps(line) for line in only[:most])}{more}")
    return out


def eagle3_serving_drift(manifest: dict[str, Any] | None, current: dict[str, str], paths: list[str],
                         run_id: str = "") -> list[str]:
    """One line per path of `paths` (a profile's unit and server config) that is not as run `run_id` measured it;
    [] when every one is. `manifest`: the run's manifest.json of this host (None: it has none); `current`: path ->
    text as the host has it now (a path not in it is not on the host)."""
    if not run_id:
        return ["no run is named (vllm_serving_measured_run is empty): nothing says this configuration was measured"]
    run = f"run {run_id}"
    if not isinstance(manifest, dict):
        return [f"{run} recorded no manifest.json for this host: it did not benchmark here"]
    recorded, texts = manifest.get("sha256") or {}, manifest.get("files") or {}
    out = []
    for path in paths:
        if path not in recorded:
            out.append(f"{path}: {run} did not record it (its manifest.json has no sha256 for it)")
        elif path not in current:
            out.append(f"{path}: not on the host")
        elif _sha256(current[path]) != recorded[path]:
            text = texts.get(path)
            if not isinstance(text, str) or _sha256(text) != recorded[path]:
                detail = ["the manifest keeps only its sha256"]
            elif path.endswith((".yaml", ".yml")):
                detail = _config_keys(current[path], text) or ["the same keys and values: a comment or the layout differs"]
            else:
                detail = _line_changes(current[path], text) or ["the same lines, in another order or with other line ends"]
            out.append(f"{path} differs from what {run} measured ({'; '.join(detail)})")
    return out


def _measured_settings(manifest: dict[str, Any] | None) -> dict[str, Any]:
    """The settings that render the run's speculative profiles again, from its manifest's parameters.profiles."""
    profiles = ((manifest or {}).get("parameters") or {}).get("profiles") or []
    specs = [p["speculative_config"] for p in profiles if isinstance(p, dict) and isinstance(p.get("speculative_config"), dict)]
    if not specs:
        return {}
    return {"eagle3_num_speculative_tokens": [s.get("num_speculative_tokens") for s in specs],
            "eagle3_draft_model": specs[0].get("model"), "eagle3_speculative_method": specs[0].get("method")}


def eagle3_serving_refusal(drift: list[str], host: str, profile: str, run_id: str,
                           manifest: dict[str, Any] | None = None, inventory: list[str] | None = None) -> str:
    """vllm_serving's refusal to serve `profile` on `host` for run `run_id` ("" when `drift` is empty): what differs,
    and the commands that recover: the run's settings rendered again (eagle3.trn2.service), or a new run."""
    if not drift:
        return ""
    sources = " ".join(f"-i {source}" for source in inventory or []) or "-i INVENTORY"
    settings = _measured_settings(manifest)
    put_back = (f"put back what run {run_id} measured, ansible-playbook {sources} eagle3.trn2.service -e "
                f"'{json.dumps(settings)}' (with run {run_id}'s settings for any other key named above), then serve "
                f"run {run_id} again; or " if settings else "")
    return (f"{host}: refusing to serve {profile} for run {run_id}: its unit or server config is not what the run "
            f"measured: {'; '.join(drift)}. vllm-serve.service on {host} was left as it was. To recover, {put_back}"
            f"benchmark what {host} has now as a new run (ansible-playbook {sources} eagle3.trn2.site -e "
            f"eagle3_run_id=NEW with the settings that made it) and serve that run. -e vllm_serving_unmeasured=true "
            f"serves it regardless.")


def eagle3_served_config(text: str | None) -> dict[str, Any]:
    """{"method", "k", "config_sha256"} of the server config a serving unit starts with (`text`: as the host has it;
    None: not there): method and k are its speculative-config's method and num_speculative_tokens, None for the
    baseline."""
    if text is None:
        return {"method": None, "k": None, "config_sha256": None}
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        config = None
    spec = config.get("speculative-config") if isinstance(config, dict) else None
    if isinstance(spec, str):  # vllm serve takes it as JSON text too
        try:
            spec = json.loads(spec)
        except ValueError:
            spec = None
    return {"method": spec.get("method") if isinstance(spec, dict) else None,
            "k": spec.get("num_speculative_tokens") if isinstance(spec, dict) else None, "config_sha256": _sha256(text)}


def eagle3_serving_now(record: dict[str, Any]) -> list[str]:
    """One line per host of a serving record (serving.json): what serves, with which method, k and config."""
    lines = []
    for host, what in sorted((record.get("hosts") or {}).items()):
        if not what or not what.get("profile"):
            lines.append(f"{host}: serves nothing")
            continue
        spec = (f"method {what.get('method')}, k {what.get('k')}" if what.get("k") is not None
                else "no speculative decoding")
        sha = what.get("config_sha256")
        lines.append(f"{host}: serves {what['profile']} ({spec}, config sha256 {sha[:12] if sha else 'unknown'}) "
                     f"at {what.get('url')}")
    return lines
