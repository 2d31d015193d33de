"""The dead-man switch on a live host: site.yml's phases armed it on molecule-rehearsal-1 (eagle3_deadman:
true in this inventory) and serving removed it; the module arms a systemd timer whose live properties hold the
deadline and the power-off, keeps a deadline that leaves enough, pushes one that does not, and leaves a serving host
without one. Each start's start-to-ready is in the manifest and the report."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rehearsal_host import HOST, NAME
from site_run import EPHEMERAL, ROOT, site_env

RUN_DIR = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "results" / "molecule"
TIMER, SERVICE = "eagle3-deadman.timer", "eagle3-deadman.service"


def switch(**args) -> dict:
    """The module eagle3.trn2.deadman run on the host as root (a play with the project's settings, which the
    inventory's connection variables read); its result."""
    play = EPHEMERAL / "deadman_play.yml"
    play.write_text(f"- hosts: {NAME}\n  gather_facts: false\n  become: true\n  roles: [eagle3.trn2.settings]\n"
                    f"  tasks:\n    - name: The switch\n      eagle3.trn2.deadman: {json.dumps(args)}\n")
    # Through podman, as testinfra reaches the host: after test_api_serving's reboot its sshd is not up again until
    # the next provision (test_drills' runs)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                           "-e", "ansible_connection=podman", "-e", f"ansible_host={NAME}", str(play)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(site_env("deadman"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # ansible.cfg also enables profile_tasks, whose lines follow the JSON document
    document, _ = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{"):])
    return document["plays"][0]["tasks"][-1]["hosts"][NAME]


def live(unit: str, *props: str) -> dict[str, str]:
    out = HOST.run(f"systemctl show {unit} -p {','.join(props)}").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_the_phases_armed_the_switch_and_serving_removed_it():
    manifest = json.loads((RUN_DIR / NAME / "manifest.json").read_text())
    # the benchmark phase's push, recorded before serving: armed hours ahead
    assert manifest["deadman"]["armed"] is True and manifest["deadman"]["serving"] is False, manifest["deadman"]
    deadline = datetime.strptime(manifest["deadman"]["deadline"], "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=timezone.utc)
    assert deadline.timestamp() > time.time() + 900
    # the host serves now (eagle3_serve: best): no switch left on it
    assert HOST.run("systemctl is-enabled vllm-serve.service").stdout.strip() == "enabled"
    assert not HOST.file(f"/etc/systemd/system/{TIMER}").exists and not HOST.file(f"/etc/systemd/system/{SERVICE}").exists


@pytest.fixture
def armed():
    """The switch armed on the host as if it served nothing (a serving unit that does not exist); removed after."""
    yield lambda hours: switch(hours=hours, serving_unit="eagle3-nothing.service")
    switch(state="absent")
    assert not HOST.file(f"/etc/systemd/system/{TIMER}").exists


def test_the_switch_is_a_timer_that_powers_the_host_off_at_its_deadline_and_a_push_only_when_due(armed):
    before = time.time()
    first = armed(2)
    assert first["changed"] and first["armed"] and not first["serving"]
    assert before + 3 * 3600 <= first["deadline_epoch"] <= time.time() + 3 * 3600 + 60
    state = live(TIMER, "ActiveState", "UnitFileState", "TimersCalendar", "Persistent")
    assert (state["ActiveState"], state["UnitFileState"], state["Persistent"]) == ("active", "enabled", "yes"), state
    assert first["deadline"].replace(" UTC", "") in state["TimersCalendar"], state
    assert "poweroff" in live(SERVICE, "ExecStart")["ExecStart"]
    # a rerun that has enough left changes nothing; one that needs more pushes the deadline
    assert armed(2)["changed"] is False
    pushed = armed(4)
    assert pushed["changed"] and pushed["deadline_epoch"] >= first["deadline_epoch"] + 2.9 * 3600
    assert pushed["deadline"].replace(" UTC", "") in live(TIMER, "TimersCalendar")["TimersCalendar"]


def test_a_serving_host_is_left_without_a_switch(armed):
    armed(2)
    kept = switch(hours=2)  # the real serving unit, enabled on this host
    assert kept["serving"] and not kept["armed"] and kept["changed"]
    assert not HOST.file(f"/etc/systemd/system/{TIMER}").exists and live(TIMER, "ActiveState")["ActiveState"] == "inactive"


def test_each_start_to_ready_is_in_the_manifest_and_the_report():
    starts = json.loads((RUN_DIR / NAME / "manifest.json").read_text())["starts"]
    assert {"baseline", "eagle3"} <= set(starts), starts
    for key in ("baseline", "eagle3"):
        assert 1 < starts[key]["start_to_ready_s"] < 600 and starts[key]["compile_cache"] in ("cold", "local", "shipped")
    report = (RUN_DIR / "report.md").read_text()
    shown = re.search(rf"compile cache per start \(start to ready\):.*{NAME} baseline (\d+) s", report)
    assert shown and abs(int(shown.group(1)) - starts["baseline"]["start_to_ready_s"]) <= 1, report[-2000:]
