"""Prometheus on the monitor host (playbooks/monitor.yml, Debian's package) watching the serving unit that
site.yml left running (eagle3_serve: best): its target comes from the inventory and the serving plan, it scrapes
the real server, and its recording rules compute live acceptance, acceptance length, TPOT and throughput from the
scraped counters; the alert rules are evaluated by Prometheus's own rule engine (promtool test rules): the real file
(the floor) and the role's template rendered with a live band. (Named to run
before test_api_serving.py, whose last test reboots the serving host.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import testinfra
import yaml
from rehearsal_host import HOST, NAME, PORT, wait_healthy

import promtool_cases

MONITOR = testinfra.get_host("podman://molecule-monitor")
PROMETHEUS = "http://127.0.0.1:9190"  # the monitor's eagle3_prometheus_listen_address (molecule inventory)
RUN_DIR = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "results" / "molecule"
KEY = os.environ["EAGLE3_API_KEY"]
WINDOW = "1m"  # eagle3_monitor_rate_window of the rehearsal (inventories/rehearsal/group_vars/eagle3/main.yml)
RULES = "/etc/prometheus/rules/eagle3.rules.yml"
BAND_RULES = "/tmp/eagle3-band.rules.yml"  # the template rendered with a live band, beside the real file (not loaded)
ROLE = Path(__file__).resolve().parents[3] / "roles" / "monitoring"


def api(path: str, **params: str) -> dict:
    url = f"{PROMETHEUS}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]


def query(expr: str) -> dict[str, float]:
    """An instant query: {position or host: value} for every series of the result."""
    return {r["metric"].get("position", r["metric"].get("host", "")): float(r["value"][1])
            for r in api("/api/v1/query", query=expr)["result"]}


def vllm(path: str, body: dict | None = None, key: str | None = None) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", method="POST" if body else "GET",
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=120) as resp:
        return resp.read().decode()


def counters() -> dict[str, float]:
    """The spec-decode counters straight from the serving unit's /metrics (summed over label sets)."""
    totals: dict[str, float] = {}
    for line in vllm("/metrics").splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total",
                    "vllm:spec_decode_num_drafts_total"):
            totals[name] = totals.get(name, 0.0) + float(line.rsplit(" ", 1)[-1])
    return totals


@pytest.fixture(scope="module")
def plan() -> dict:
    return json.loads((RUN_DIR / "verdict.json").read_text())["serving"]


def test_prometheus_runs_from_the_package_on_loopback_only():
    service = MONITOR.service("prometheus.service")
    assert service.is_running and service.is_enabled
    assert MONITOR.package("prometheus").is_installed
    assert MONITOR.socket("tcp://127.0.0.1:9190").is_listening
    assert not MONITOR.socket("tcp://0.0.0.0:9190").is_listening
    assert MONITOR.run("promtool check config /etc/prometheus/prometheus.yml").rc == 0


def test_the_target_is_the_serving_host_from_the_inventory_and_it_is_up(plan):
    targets = api("/api/v1/targets", state="active")["activeTargets"]
    vllm_targets = [t for t in targets if t["scrapePool"] == "eagle3-vllm"]
    assert [(t["labels"]["host"], t["labels"]["profile"], t["scrapeUrl"]) for t in vllm_targets] == [
        (NAME, plan["hosts"][NAME]["profile"], f"http://127.0.0.1:{PORT}/metrics")]
    assert vllm_targets[0]["health"] == "up", vllm_targets[0]["lastError"]


def test_the_recording_rules_compute_live_acceptance_from_the_scraped_counters(plan):
    profile = plan["hosts"][NAME]["profile"]
    assert profile.startswith("eagle3"), f"the agreeing pair's EAGLE3 profile should serve, not {profile}"
    k = yaml.safe_load(HOST.file(f"/etc/eagle3/{profile}.yaml").content_string)["speculative-config"]
    k = (json.loads(k) if isinstance(k, str) else k)["num_speculative_tokens"]
    if not HOST.service("vllm-serve.service").is_running:  # an earlier test may have taken the devices
        assert HOST.run("systemctl start vllm-serve.service").rc == 0
    wait_healthy("vllm-serve.service")
    model = yaml.safe_load(HOST.file(f"/etc/eagle3/{profile}.yaml").content_string)["served-model-name"]
    before = counters()
    for i in range(6):
        vllm("/v1/completions", {"model": model, "prompt": f"Sonnet {i}: shall I compare thee", "max_tokens": 48,
                                 "temperature": 0}, KEY)
    after = counters()
    drafted = after["vllm:spec_decode_num_draft_tokens_total"] - before.get("vllm:spec_decode_num_draft_tokens_total", 0)
    accepted = after["vllm:spec_decode_num_accepted_tokens_total"] - before.get("vllm:spec_decode_num_accepted_tokens_total", 0)
    drafts = after["vllm:spec_decode_num_drafts_total"] - before.get("vllm:spec_decode_num_drafts_total", 0)
    assert drafted > 0, "the serving engine drafted nothing"
    # Rules are evaluated every 5 s over the last minute: wait until the window holds the traffic (two scrapes after it).
    rate = f"eagle3:spec_decode_acceptance_rate:ratio_rate{WINDOW}"
    deadline = time.monotonic() + 90
    while not query(rate) and time.monotonic() < deadline:
        time.sleep(2)
    time.sleep(12)
    acceptance = query(rate)
    assert set(acceptance) == {NAME}, acceptance
    # The agreeing pair accepts every draft at temperature 0; the rule's figure is the counters' own ratio.
    assert acceptance[NAME] == pytest.approx(accepted / drafted, abs=0.02)
    assert acceptance[NAME] == pytest.approx(1.0, abs=0.02)
    length = query(f"eagle3:spec_decode_acceptance_length:mean_rate{WINDOW}")[NAME]
    assert length == pytest.approx(1 + accepted / drafts, abs=0.05)
    assert length == pytest.approx(1 + k, abs=0.1)
    positions = query(f"eagle3:spec_decode_position_acceptance_rate:ratio_rate{WINDOW}")
    assert sorted(positions) == [str(i) for i in range(k)]
    assert all(v == pytest.approx(1.0, abs=0.02) for v in positions.values()), positions
    tpot = query(f"eagle3:time_per_output_token_seconds:mean_rate{WINDOW}")[NAME]
    assert 0 < tpot < 1.0
    assert query(f"eagle3:generation_tokens:rate{WINDOW}")[NAME] > 0
    # High acceptance: the alert is loaded and not firing.
    alerts = api("/api/v1/rules", type="alert")["groups"]
    rule = [r for g in alerts for r in g["rules"] if r["name"] == "EAGLE3AcceptanceLow"]
    assert len(rule) == 1 and rule[0]["state"] == "inactive" and rule[0]["health"] == "ok", rule


# promtool test rules (promtool_cases.py): synthetic vLLM counters of four hosts, and the alerts each rules file must fire.
def promtool(rules_path: str, rules_text: str, band: bool, wrong: bool = False) -> testinfra.backend.base.CommandResult:
    test = promtool_cases.rule_test(rules_text, rules_path, band, wrong)
    MONITOR.run(f"cat > /tmp/eagle3-rule-test.yml <<'EOF'\n{test}\nEOF")
    return MONITOR.run("promtool test rules /tmp/eagle3-rule-test.yml")


def test_the_alert_fires_below_the_thirty_percent_floor_after_its_for_duration_and_only_there():
    """The rules Prometheus runs here (no live band is recorded in the scenario): the floor for every profile."""
    rules = MONITOR.file(RULES).content_string
    assert "threshold: floor" in rules and "threshold: band" not in rules, rules
    result = promtool(RULES, rules, band=False)
    assert result.rc == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr
    # The same test claiming the alert for the 80 % host must fail: the evaluation is real, not a formality.
    wrong = promtool(RULES, rules, band=False, wrong=True)
    assert wrong.rc != 0 and "FAILED" in wrong.stdout + wrong.stderr, wrong.stdout


def test_with_a_live_band_the_alert_fires_below_the_band_and_per_position_and_the_floor_holds_the_rest(tmp_path):
    """The role's template rendered with a live band for eagle3-k3 (as the monitoring role's default makes one) and the
    scenario's own window and for, checked and tested by the monitor host's promtool: a host above the floor but below
    the band fires with threshold band, its fallen position fires EAGLE3PositionAcceptanceLow, a host of another
    profile is held to the floor."""
    real = yaml.safe_load(MONITOR.file(RULES).content_string)
    window = WINDOW
    hold = {r["for"] for g in real["groups"] for r in g["rules"] if r.get("alert")}.pop()
    inputs = dict(yaml.safe_load((ROLE / "defaults/main.yml").read_text()), monitoring_rate_window=window,
                  monitoring_alert_for=hold, monitoring_acceptance_threshold=promtool_cases.FLOOR,
                  monitoring_acceptance_bands=[promtool_cases.BAND])
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    rendered = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "-m", "ansible.builtin.template",
         "-a", f"src={ROLE}/templates/eagle3.rules.yml.j2 dest={tmp_path}/eagle3.rules.yml", "-e", f"@{tmp_path}/inputs.json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    text = (tmp_path / "eagle3.rules.yml").read_text()
    MONITOR.run(f"cat > {BAND_RULES} <<'EOF'\n{text}\nEOF")
    check = MONITOR.run(f"promtool check rules {BAND_RULES}")
    assert check.rc == 0, check.stdout + check.stderr
    result = promtool(BAND_RULES, text, band=True)
    assert result.rc == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr
    # The floor's expectations against the band's file fail: the band is what fires for eagle3-k3.
    floor_only = promtool(BAND_RULES, text, band=False)
    assert floor_only.rc != 0 and "FAILED" in floor_only.stdout + floor_only.stderr, floor_only.stdout
