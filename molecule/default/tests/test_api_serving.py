"""After site.yml with eagle3_serve: best: the chosen profile serves, enabled at boot, on loopback, answering only
with its API key, and again after the host reboots. (Named to run before test_converged.py, whose one-profile test
takes the devices from the serving unit.)"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from rehearsal_host import HOST, NAME, PORT, journal, wait_healthy
from rehearsal_host import request as host_request

RUN_DIR = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "results" / "molecule"
KEY = os.environ["EAGLE3_API_KEY"]
UNIT = "vllm-serve.service"

def request(method: str, path: str, key: str | None = None) -> tuple[int, str]:
    """A completion-shaped request (POST) or a plain GET."""
    model = yaml.safe_load(HOST.file("/etc/eagle3/baseline.yaml").content_string)["served-model-name"]
    body = {"model": model, "prompt": "1 2 3 4 5", "max_tokens": 8, "temperature": 0} if method == "POST" else None
    return host_request(method, path, key, body)


@pytest.fixture(scope="module")
def plan() -> dict:
    return json.loads((RUN_DIR / "verdict.json").read_text())["serving"]


def test_the_plan_serves_the_fastest_profile_passing_every_gate(plan):
    summary = json.loads((RUN_DIR / "summary.json").read_text())
    rows = {r["profile"]: r for r in summary["hosts"][NAME]}
    assert plan["mode"] == "best"
    assert plan["hosts"][NAME]["profile"] == plan["profile"] == max(rows, key=lambda p: rows[p]["output_throughput"])
    served = json.loads((RUN_DIR / "serving.json").read_text())
    assert served["hosts"][NAME]["profile"] == plan["profile"]
    assert served["hosts"][NAME]["unauthorized_status"] == 401


def test_serving_unit_runs_the_chosen_profile_and_starts_at_boot(plan):
    service = HOST.service(UNIT)
    assert service.is_running and service.is_enabled
    exec_start = service.systemd_properties["ExecStart"]
    assert f"--config /etc/eagle3/{plan['profile']}.yaml" in exec_start
    assert "--middleware eagle3_api_guard.RequireApiKey" in exec_start
    # The benchmark's profile units are not started at boot: only the chosen one serves.
    for profile in ("baseline", "eagle3"):
        assert not HOST.service(f"vllm-{profile}.service").is_enabled
        assert not HOST.service(f"vllm-{profile}.service").is_running


def test_it_listens_on_loopback_only():
    assert HOST.socket(f"tcp://127.0.0.1:{PORT}").is_listening
    assert not HOST.socket(f"tcp://0.0.0.0:{PORT}").is_listening


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/models"), ("POST", "/v1/completions"),
    # vLLM 0.29's own key check covers /v1, /v2, /inference and /cohere only; these two answered without it.
    ("POST", "/invocations"), ("POST", "/tokenize"),
])
def test_requests_without_the_key_get_401(method, path):
    assert request(method, path)[0] == 401
    assert request(method, path, "a-wrong-key-of-some-length")[0] == 401


def test_the_key_opens_it_and_the_engine_speculates_when_eagle3_serves(plan):
    status, body = request("POST", "/v1/completions", KEY)
    assert status == 200, body
    assert json.loads(body)["choices"][0]["text"]
    assert request("GET", "/health")[0] == 200  # liveness stays open for load balancers
    metrics = request("GET", "/metrics")
    assert metrics[0] == 200
    drafts = [float(line.split()[-1]) for line in metrics[1].splitlines()
              if line.startswith("vllm:spec_decode_num_drafts_total")]
    if plan["profile"].startswith("eagle3"):
        assert drafts and sum(drafts) > 0, "the serving engine made no drafts"
    else:
        assert not drafts or sum(drafts) == 0


def test_the_key_is_in_no_command_line_environment_dump_or_log():
    pid = HOST.service(UNIT).systemd_properties["MainPID"]
    assert pid != "0"
    assert KEY not in HOST.run(f"tr '\\0' ' ' < /proc/{pid}/cmdline").stdout
    assert KEY not in HOST.run(f"systemctl show {UNIT}").stdout
    assert KEY not in HOST.run(f"journalctl -u {UNIT} --no-pager -o cat").stdout
    key_file = HOST.file("/etc/eagle3/serve.env")
    assert (key_file.mode, key_file.user, key_file.group) == (0o600, "root", "root")
    leaked = HOST.run(f"grep -rlF {json.dumps(KEY)} /etc /var/lib/eagle3 /opt/eagle3 /tmp /var/tmp 2>/dev/null").stdout.split()
    assert leaked == ["/etc/eagle3/serve.env"]
    assert not [p for p in RUN_DIR.rglob("*") if p.is_file() and KEY in p.read_text(errors="replace")]


def test_it_serves_again_after_the_host_reboots(plan):
    before = HOST.service(UNIT).systemd_properties["MainPID"]
    subprocess.run(["podman", "restart", "--time", "10", NAME], check=True, capture_output=True, timeout=300)
    deadline = time.monotonic() + 120
    while HOST.run("systemctl is-system-running").stdout.strip() not in ("running", "degraded"):
        assert time.monotonic() < deadline, "the container did not finish booting"
        time.sleep(1)
    wait_healthy(UNIT)
    assert HOST.service(UNIT).systemd_properties["MainPID"] != before
    status, body = request("POST", "/v1/completions", KEY)
    assert status == 200, body + journal(UNIT)
    assert request("POST", "/v1/completions")[0] == 401
