#!/usr/bin/python
"""Wait a window for an async job on the host and say how far it got, from its log
(plugins/module_utils/host/job_wait.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: job_wait
short_description: Wait up to a window for an async job and report its progress from its log
description:
  - Waits up to I(window) seconds for the async job whose results file is I(results_file) (the
    C(results_file) of a task run with C(async) and C(poll=0)) to finish, then returns C(finished)
    and a C(progress) line read from the job's log. A task retries it until C(result.finished)
    with C(delay=0), so a long wait prints one progress line per window (the eagle3_progress callback
    shows it instead of "FAILED - RETRYING"), and the job's end is noticed within half a second.
  - Once the job has finished, also returns its exit status and message from the results file and,
    with I(tail), the log's last lines, so no M(ansible.builtin.async_status) and no C(tail) task are needed
    after it (each is one more round trip to the host). Read-only.
options:
  results_file: {description: The async job's results file., type: path, required: true}
  log: {description: The job's log (it may not exist yet)., type: path, required: true}
  window: {description: Seconds to wait at most in this call (0 looks once)., type: float, default: 10}
  label: {description: Text the progress line starts with., type: str, required: true}
  measure:
    description:
      - C(requests) - the last tqdm counter C(n/N [) in the log, as "n/N requests" (vllm bench serve's client).
      - C(log_line) - the last log line starting with C([) (the rehearsal model generator's progress lines).
    type: str
    choices: [requests, log_line]
    default: log_line
  idle: {description: Shown while the log has nothing to measure yet., type: str, default: starting}
  since: {description: Epoch second the job started; when given the line ends with the seconds since., type: int}
  tail: {description: Lines of the log's end returned as C(log_tail) once the job has finished (0 none)., type: int, default: 0}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Wait for the benchmark, one progress line every 15 s
  eagle3.trn2.job_wait:
    results_file: "{{ job.results_file }}"
    log: /var/lib/eagle3/results/run/eagle3.log
    window: 15
    label: eagle3 benchmark
    measure: requests
    idle: warming up
    since: "{{ started }}"
  register: waited
  until: waited.finished
  retries: 240
  delay: 0
"""

RETURN = r"""
finished: {description: Whether the job has finished (its results file says so)., type: bool, returned: always}
progress: {description: "One line: label, what the log shows, and the seconds since I(since)", type: str, returned: always}
job_rc:
  description:
    - The job's exit status (C(rc) of the module the job ran); null when the job has none, as when async_wrapper
      killed it at its C(async) time limit (C(job_msg) Timeout exceeded) or could not run it.
    - Not named C(rc), which would make Ansible count this task as failed when the job failed.
  type: int
  returned: when finished
job_msg: {description: The job's message (its results file's C(msg)); empty when there is none., type: str, returned: when finished}
log_tail: {description: "The last I(tail) lines of the log, split at newlines as C(tail -n) does.", type: list, elements: str, returned: when finished}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.host.job_wait import wait


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            results_file=dict(type="path", required=True),
            log=dict(type="path", required=True),
            window=dict(type="float", default=10),
            label=dict(type="str", required=True),
            measure=dict(type="str", choices=["requests", "log_line"], default="log_line"),
            idle=dict(type="str", default="starting"),
            since=dict(type="int"),
            tail=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["window"] < 0:
        module.fail_json(msg="window must be >= 0 seconds (got %s)" % p["window"])
    if p["tail"] < 0:
        module.fail_json(msg="tail must be >= 0 lines (got %s)" % p["tail"])
    module.exit_json(changed=False, **wait(p["results_file"], p["log"], p["window"], p["label"], p["measure"],
                                           p["idle"], p["since"], p["tail"]))


if __name__ == "__main__":
    main()
