"""eagle3.trn2.job_wait, the wait both long jobs use (the benchmark client, the trained pair's training).

Its functions (plugins/module_utils/host/job_wait.py) on real logs (vllm bench serve's tqdm bar, the generator's
progress lines), and the module run by a real ansible-playbook against a real async job, retried with `until` as the
roles retry it: one call per window, the job's end seen, the last progress line returned.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.eagle3.trn2.plugins.module_utils.host import job_wait
from conftest import ROOT


def test_requests_from_the_benchmark_clients_tqdm_bar(tmp_path):
    job, log = tmp_path / "job", tmp_path / "bench.log"
    log.write_text(" 10%|#         | 5/50 [00:02<00:20]\r 14%|#         | 7/50 [00:03<00:19]\n")
    waited = job_wait.wait(str(job), str(log), 0, "eagle3 benchmark", "requests", "warming up", since=0)
    assert waited["finished"] is False
    assert waited["progress"].startswith("eagle3 benchmark: 7/50 requests, ") and waited["progress"].endswith(" s")
    # What async_wrapper leaves once the job has ended: the command module's own result (no "started" key).
    job.write_text(json.dumps({"changed": True, "rc": 0, "stdout": "", "stderr": "", "msg": "", "cmd": ["vllm"]}))
    waited = job_wait.wait(str(job), str(tmp_path / "no.log"), 5, "b benchmark", "requests", "warming up", tail=60)
    assert waited == {"finished": True, "progress": "b benchmark: warming up", "job_rc": 0, "job_msg": "", "log_tail": []}
    # Its first write, while the job runs, says started and not finished.
    job.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": "j1.2"}))
    assert job_wait.wait(str(job), str(log), 0, "b", "requests", "warming up", tail=60) == {
        "finished": False, "progress": "b: 7/50 requests"}
    job.write_text("{half")  # being rewritten by async_wrapper
    assert job_wait.finished(str(job)) is False


def test_the_generators_last_progress_line(tmp_path):
    job, log = tmp_path / "job", tmp_path / "train.log"
    log.write_text("[    1 s] corpus: 800 lines, 41230 tokens, vocabulary 1024\nWriting model shards: 100%\n"
                   "[   30 s] target: step 26/240, loss 2.811\nsome warning\n")
    waited = job_wait.wait(str(job), str(log), 0, "training the rehearsal models", "log_line", "starting")
    assert waited == {"finished": False, "progress": "training the rehearsal models: [   30 s] target: step 26/240, loss 2.811"}
    # Only the log's tail is read: a long log costs nothing more, and its last line still shows.
    log.write_text("x" * 1_000_000 + "\n[  99 s] draft: step 5/80\n")
    assert job_wait.wait(str(job), str(log), 0, "t", "log_line", "starting")["progress"] == "t: [  99 s] draft: step 5/80"


PLAYBOOK = """---
- name: Exercise job_wait on a real async job
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: A job that logs progress lines for about 6 s
      ansible.builtin.shell:
        cmd: for i in 1 2 3 4 5 6; do echo "[ $i s] step $i/6" >> {{ base }}/job.log; sleep 1; done
      async: 60
      poll: 0
      register: job
    - name: Wait, a window of 1 s per call
      eagle3.trn2.job_wait:
        results_file: "{{ job.results_file }}"
        log: "{{ base }}/job.log"
        window: 1
        label: job
      register: waited
      until: waited.finished
      retries: 30
      delay: 0
    # The second is killed at its 5 s limit: its shell has written its line long before, even on a loaded machine.
    - name: A job that fails after three lines, and one killed at its async time limit
      ansible.builtin.shell:
        cmd: "{{ item }}"
      async: "{{ 60 if 'exit' in item else 5 }}"
      poll: 0
      register: ends
      loop:
        - printf 'one\\ntwo\\nthree\\n' > {{ base }}/fails.log; exit 3
        - echo started > {{ base }}/killed.log; sleep 60
    - name: Wait for each, with the log's last two lines
      eagle3.trn2.job_wait:
        results_file: "{{ item.0.results_file }}"
        log: "{{ base }}/{{ item.1 }}.log"
        window: 1
        label: "{{ item.1 }}"
        tail: 2
      register: ended
      until: ended.finished
      retries: 30
      delay: 0
      loop: "{{ ends.results | zip(['fails', 'killed']) | list }}"
    - name: A window that is not a number of seconds
      eagle3.trn2.job_wait: {results_file: "{{ job.results_file }}", log: "{{ base }}/job.log", window: -1, label: job}
      register: negative
      ignore_errors: true
    - name: Keep what was returned
      ansible.builtin.copy:
        content: "{{ {'waited': waited, 'negative': negative, 'ended': ended.results} | to_json }}"
        dest: "{{ base }}/returned.json"
        mode: "0644"
"""


def test_module_waits_for_a_real_async_job_window_by_window(tmp_path):
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(book),
                           "-e", json.dumps({"base": str(tmp_path)})],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    returned = json.loads((tmp_path / "returned.json").read_text())
    waited = returned["waited"]
    assert waited["finished"] is True and waited["changed"] is False
    assert waited["progress"] == "job: [ 6 s] step 6/6"
    # About 6 s of job in 1 s windows: more than one call even when a slow machine starts the first call 3 s late,
    # and not one per half second (no busy retry).
    assert 2 <= waited["attempts"] <= 10, waited["attempts"]
    # The project's callback shows each retry as a progress line, not as "FAILED - RETRYING".
    assert "job: [" in proc.stdout and "FAILED - RETRYING" not in proc.stdout
    assert returned["negative"]["failed"] and "window must be >= 0 seconds (got -1" in returned["negative"]["msg"]
    # Once finished, the job's exit status and the log's end, read from what async_wrapper really wrote.
    assert waited["job_rc"] == 0 and waited["job_msg"] == "" and waited["log_tail"] == []
    fails, killed = returned["ended"]
    # A failed job does not fail the wait (the role's check after it names the failure).
    assert not fails.get("failed") and not killed.get("failed")
    assert fails["job_rc"] == 3 and fails["log_tail"] == ["two", "three"], fails
    assert killed["job_rc"] is None and killed["job_msg"] == "Timeout exceeded" and killed["log_tail"] == ["started"], killed
