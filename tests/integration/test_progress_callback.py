"""The eagle3_progress stdout callback: long waits read as progress, real retries as retries."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "callback"))

from ansible.release import __version__ as ANSIBLE_CORE  # noqa: E402
from eagle3_progress import checks_done, progress_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_progress_text_from_probe_stdout_and_async_status():
    assert progress_text({"stdout": '{"progress": "vllm-eagle3.service starting: 42 s of 600 s"}'}) \
        == "vllm-eagle3.service starting: 42 s of 600 s"
    assert progress_text({"started": 1, "finished": 0, "ansible_job_id": "j1", "attempts": 3}, "Wait") \
        == "Wait: still running (check 3)"
    assert progress_text({"stdout": "not json {"}) is None
    assert progress_text({"stdout": '["a list"]'}) is None
    assert progress_text({"rc": 1, "stdout": ""}) is None


def test_the_check_number_is_the_check_that_ran_on_both_ansible_cores():
    # 2.19 hands v2_runner_retry the attempt that ran, 2.21 the one about to run
    assert checks_done(1, "2.19.14") == 1 and checks_done(2, "2.21.5") == 1 and checks_done(3, "2.22.0") == 2
    assert checks_done("?", "2.21.5") == "?" and checks_done(None, "2.21.5") is None


def test_waits_print_progress_lines_and_plain_retries_stay_retries():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(ROOT / "tests/playbooks/progress.yml")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, stdin=subprocess.DEVNULL)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert out.count("  ... [localhost] demo starting: 3 s of 600 s") == 2, out
    assert "FAILED - RETRYING: [localhost]: Probe with progress" not in out
    # The 5-s job is checked every second from its start: its first check finds it running unless
    # starting the check took 5 s (a margin of 10x over the 0.5 s it takes here), never a failure line.
    assert "  ... [localhost] Wait for the background job: still running (check 1)" in out, out
    assert "FAILED - RETRYING: [localhost]: Wait for the background job" not in out
    # The default callback's own line, as each ansible-core words it: 2.21 counts the attempt about to run as used
    # (its result's attempts is that attempt's number), so one retry left reads "0 retries left" there.
    left = 1 if tuple(int(p) for p in ANSIBLE_CORE.split(".")[:2]) < (2, 21) else 0
    assert f"FAILED - RETRYING: [localhost]: Ordinary retry ({left} retries left)." in out
