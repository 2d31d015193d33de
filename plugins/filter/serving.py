"""Which profile each host serves after the benchmark (eagle3_serve: none | best | a profile name).

Pure: computed by eagle3_report from the run's rows and gate results, written into verdict.json and the
report, and read back by playbooks/serve.yml, which puts the plan into service.
"""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.numbers import median


DOCUMENTATION = r"""
  name: serving
  short_description: The serving plan of an EAGLE3 run (which profile serves on which host)
  description:
    - C(eagle3_serving) chooses, from a run's comparison rows and the enforced gates' failures, the profile each
      host serves after the benchmark. none serves nothing; a profile name serves that profile wherever it
      passed every enforced gate; best serves, fleet-wide, the profile with the highest median output_throughput
      (with eagle3_bench_rounds > 1, the highest median lower bound of its speedup's interval) among the profiles that pass every enforced gate on every host that has results (the baseline included,
      so when no speculative profile passes everywhere the fleet serves the baseline). A profile that failed a gate,
      and a host that failed, never serve.
    - C(eagle3_serving_targets) turns a plan into Prometheus scrape targets, one per host that serves, from each
      host's monitor address (HOST:PORT of its serving unit's /metrics).
"""


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


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"eagle3_serving": eagle3_serving, "eagle3_serving_lines": eagle3_serving_lines,
                "eagle3_serving_targets": eagle3_serving_targets}
