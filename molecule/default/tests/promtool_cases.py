"""`promtool test rules` cases for the serving alerts (roles/monitoring/templates/eagle3.rules.yml.j2):
synthetic vLLM counters for four hosts, and the alerts the rules file must fire for them, with the file's own
annotations filled in as Prometheus fills them. Pure (no testinfra): test_api_monitoring.py runs them with the monitor
host's promtool; tests/integration/test_live_band.py renders the rules and checks the cases themselves.

The design values, fixed here (the rules file must act on them, not the other way round):
- the floor: 30 % (the acceptance gate's min_rate);
- the live band of profile BAND_PROFILE: rate edge 60 %, position edges 80 / 60 / 40 %;
- "low" serves FLOOR_PROFILE at 20 %: the floor alert fires (threshold floor);
- "fine" serves FLOOR_PROFILE at 80 %: nothing fires;
- "drop" serves BAND_PROFILE at 85 / 62 / 20 % per position (55.67 % overall): above the floor, below the band's
  edge, and position 3 below its edge. With the band: EAGLE3AcceptanceLow (threshold band) and
  EAGLE3PositionAcceptanceLow for position="2"; without one (the floor only): nothing fires;
- "steady" serves BAND_PROFILE at 90 / 70 / 50 % (70 %): nothing fires.
Before the rules' `for` has passed nothing fires (pending only).
"""
from __future__ import annotations

import json
import re
from typing import Any

import yaml

FLOOR = 0.30
FLOOR_PROFILE = "eagle3"
BAND_PROFILE = "eagle3-k3"
BAND = {"profile": BAND_PROFILE, "rate_min": 0.6, "position_min": [0.8, 0.6, 0.4],
        "source": "the live band of k=3 (66.7 % less its 10 % tolerance), recorded from http://127.0.0.1:9090 over 1d "
                  "to 2026-12-04T12:00:00Z on hosts drop, steady"}
DRAFTS = 100  # drafts per host per 15 s step
HOSTS: dict[str, tuple[str, list[float]]] = {  # host: (profile, accepted fraction per position)
    "low": (FLOOR_PROFILE, [0.3, 0.2, 0.1]),
    "fine": (FLOOR_PROFILE, [0.9, 0.8, 0.7]),
    "drop": (BAND_PROFILE, [0.85, 0.62, 0.2]),
    "steady": (BAND_PROFILE, [0.9, 0.7, 0.5]),
}
STEP = 15


def seconds(duration: str) -> int:
    found = re.fullmatch(r"([0-9]+)(s|m|h)", duration)
    assert found, f"a duration of s, m or h, not {duration!r}"
    return int(found.group(1)) * {"s": 1, "m": 60, "h": 3600}[found.group(2)]


def humanize_percentage(value: float) -> str:
    """Prometheus's humanizePercentage (template/template.go: fmt.Sprintf("%.4g%%", v*100))."""
    return f"{value * 100:.4g}%"


def _series(steps: int) -> list[dict[str, str]]:
    out = []
    for host, (profile, positions) in HOSTS.items():
        labels = f'host="{host}", profile="{profile}"'
        accepted = sum(round(DRAFTS * p) for p in positions)
        out += [{"series": f"vllm:spec_decode_num_drafts_total{{{labels}}}", "values": f"0+{DRAFTS}x{steps}"},
                {"series": f"vllm:spec_decode_num_draft_tokens_total{{{labels}}}",
                 "values": f"0+{DRAFTS * len(positions)}x{steps}"},
                {"series": f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}}", "values": f"0+{accepted}x{steps}"}]
        out += [{"series": f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels}, position="{i}"}}',
                 "values": f"0+{round(DRAFTS * p)}x{steps}"} for i, p in enumerate(positions)]
    return out


def _rule(rules: dict, alert: str, threshold: str, profile: str, position: int | None) -> dict:
    found = [r for g in rules["groups"] for r in g["rules"]
             if r.get("alert") == alert and r.get("labels", {}).get("threshold") == threshold
             and (threshold == "floor" or f'profile="{profile}"' in r["expr"])
             and (position is None or f'position="{position}"' in r["expr"])]
    assert len(found) == 1, (alert, threshold, profile, position, found)
    return found[0]


def _expected(rules: dict, alert: str, host: str, threshold: str, position: int | None = None) -> dict[str, Any]:
    profile, positions = HOSTS[host]
    value = positions[position] if position is not None else sum(positions) / len(positions)
    labels = {"severity": "warning", "threshold": threshold, "host": host, "profile": profile}
    if position is not None:
        labels["position"] = str(position)
    rule = _rule(rules, alert, threshold, profile, position)
    annotations = {name: text.replace("{{ $labels.host }}", host).replace("{{ $labels.profile }}", profile)
                   .replace("{{ $labels.position }}", str(position))
                   .replace("{{ $value | humanizePercentage }}", humanize_percentage(value))
                   for name, text in rule.get("annotations", {}).items()}
    return {"exp_labels": labels, "exp_annotations": annotations}


def firing(rules: dict, band: bool) -> dict[str, list[dict[str, Any]]]:
    """The alerts that must fire once `for` has passed, by alert name."""
    return {
        "EAGLE3AcceptanceLow": [_expected(rules, "EAGLE3AcceptanceLow", "low", "floor")]
        + ([_expected(rules, "EAGLE3AcceptanceLow", "drop", "band")] if band else []),
        "EAGLE3PositionAcceptanceLow": [_expected(rules, "EAGLE3PositionAcceptanceLow", "drop", "band", 2)] if band else [],
    }


def rule_test(rules_text: str, rules_path: str, band: bool, wrong: bool = False) -> str:
    """The promtool unit-test file (JSON, which is YAML) for the rules file at `rules_path` (its text `rules_text`):
    `band` says whether the file carries BAND for BAND_PROFILE. `wrong` claims the floor alert for "fine" instead of
    "low": promtool must then fail, which shows the evaluation is real."""
    rules = yaml.safe_load(rules_text)
    window = re.search(r"ratio_rate([0-9]+[smh])\b", rules_text).group(1)
    hold = {r.get("for") for g in rules["groups"] for r in g["rules"] if r.get("alert")}
    assert len(hold) == 1, hold
    hold_s = seconds(hold.pop())
    end = STEP + seconds(window) + hold_s + 60
    expected = firing(rules, band)
    if wrong:
        expected["EAGLE3AcceptanceLow"][0] = dict(expected["EAGLE3AcceptanceLow"][0], exp_labels=dict(
            expected["EAGLE3AcceptanceLow"][0]["exp_labels"], host="fine"))
    cases = []
    for alert, alerts in expected.items():
        # Pending before `for` has passed since the first rate (two samples in): nothing fires yet.
        cases.append({"eval_time": f"{STEP + hold_s // 2}s", "alertname": alert, "exp_alerts": []})
        cases.append({"eval_time": f"{end}s", "alertname": alert, "exp_alerts": alerts})
    return json.dumps({"rule_files": [rules_path], "evaluation_interval": f"{STEP}s",
                       "tests": [{"interval": f"{STEP}s", "input_series": _series(end // STEP + 4),
                                  "alert_rule_test": cases}]}, indent=1)
