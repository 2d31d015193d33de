"""Filters for the EAGLE3 benchmark: profiles as data, comparison of `vllm bench serve` results.

Pure functions over plain dicts/lists so they are tested with pytest directly (tests/), on
result JSON produced by real rehearsal runs.
"""
from __future__ import annotations

from typing import Any, Iterable

DOCUMENTATION = r"""
  name: eagle3
  short_description: EAGLE3 benchmark helpers (profiles, comparison)
  description:
    - C(eagle3_profiles) expands num_speculative_tokens values into server profiles.
    - C(eagle3_compare) compares each profile's bench result with the baseline's.
    - C(eagle3_table) formats a comparison as text lines.
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
    values = [ks] if isinstance(ks, int) else list(ks)
    if not values:
        raise ValueError("num_speculative_tokens: expected one or more integers, got none")
    if len(set(values)) != len(values):
        raise ValueError(f"num_speculative_tokens: values must be distinct, got {values}")
    profiles: list[dict[str, Any]] = [{"name": baseline}]
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
            raise ValueError(f"num_speculative_tokens: expected integers 1..8, got {k!r}")
        name = method if len(values) == 1 else f"{method}-k{k}"
        profiles.append({
            "name": name,
            "speculative_config": {"method": method, "model": draft, "num_speculative_tokens": k},
        })
    return profiles


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


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "eagle3_profiles": eagle3_profiles,
            "eagle3_compare": eagle3_compare,
            "eagle3_table": eagle3_table,
        }
