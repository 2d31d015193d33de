"""The benchmark window lock (roles/vllm_bench/files/window_lock.py), run as the play runs it: a process per call."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import ROOT

LOCK = ROOT / "roles/vllm_bench/files/window_lock.py"
# As the play runs it: the collection's module_utils named by the task (eagle3_layout's module_utils_dir).
ENV = dict(os.environ, EAGLE3_MODULE_UTILS=str(ROOT / "plugins/module_utils"))


def call(*args: str) -> dict:
    proc = subprocess.run([sys.executable, str(LOCK), *args], capture_output=True, text=True, timeout=60, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_second_host_waits_until_the_first_releases(tmp_path):
    lock = tmp_path / "run" / ".bench-window.lock"
    first = call("acquire", str(lock), "host-a", "baseline", "1")
    assert first["acquired"] and json.loads(lock.read_text())["host"] == "host-a"
    began = time.monotonic()
    second = call("acquire", str(lock), "host-b", "eagle3", "1")
    assert not second["acquired"] and time.monotonic() - began >= 1.0
    assert second["holder"]["host"] == "host-a" and "host-a benchmarks baseline" in second["progress"]
    # Only the owner releases: host-b's release leaves host-a's lock in place.
    assert call("release", str(lock), "host-b", "eagle3")["released"] is False and lock.exists()
    assert call("release", str(lock), "host-a", "baseline")["released"] is True and not lock.exists()
    assert call("acquire", str(lock), "host-b", "eagle3", "1")["acquired"]


def test_a_waiting_host_takes_the_window_as_soon_as_it_is_released(tmp_path):
    lock = tmp_path / ".bench-window.lock"
    assert call("acquire", str(lock), "host-a", "baseline", "1")["acquired"]
    waiter = subprocess.Popen([sys.executable, str(LOCK), "acquire", str(lock), "host-b", "eagle3", "20"],
                              stdout=subprocess.PIPE, text=True, env=ENV)
    time.sleep(1.5)
    assert waiter.poll() is None  # still waiting
    call("release", str(lock), "host-a", "baseline")
    out, _ = waiter.communicate(timeout=20)
    got = json.loads(out)
    assert got["acquired"] and 1.0 <= got["waited"] < 10 and got["holder"]["host"] == "host-a"


def test_a_lock_left_by_a_dead_ansible_playbook_is_taken_over(tmp_path):
    lock = tmp_path / ".bench-window.lock"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(json.dumps({"host": "host-a", "profile": "baseline", "pid": dead.pid, "start": "1", "since": 0}))
    got = call("acquire", str(lock), "host-b", "eagle3", "1")
    assert got["acquired"] and json.loads(lock.read_text())["host"] == "host-b"


def test_a_lock_of_a_live_process_is_respected(tmp_path):
    lock = tmp_path / ".bench-window.lock"
    start = (open("/proc/1/stat").read().rsplit(")", 1)[1].split())[19]
    lock.write_text(json.dumps({"host": "host-a", "profile": "baseline", "pid": 1, "start": start, "since": time.time()}))
    assert not call("acquire", str(lock), "host-b", "eagle3", "1")["acquired"]
