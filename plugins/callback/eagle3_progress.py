"""Ansible's default screen output, with long waits shown as progress instead of failures."""
from __future__ import annotations

DOCUMENTATION = """
    name: eagle3_progress
    type: stdout
    short_description: default output; waits print progress lines instead of "FAILED - RETRYING"
    description:
        - Ansible's default stdout callback, except for retries of tasks whose result carries a
          C(progress) text (the project's readiness and benchmark probes print JSON with one).
          Each such retry prints one line, C([host] progress), where the default callback prints
          C(FAILED - RETRYING ... (N retries left)), which reads as a failure during a normal wait.
        - Retries of an async_status check on a job still running print that it is still running.
        - Retries of any other task are shown as the default callback shows them.
    extends_documentation_fragment:
      - default_callback
      - result_format_callback
    requirements:
      - set as stdout_callback in ansible.cfg (the project's ansible.cfg does)
"""

import json
from typing import Any

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback
from ansible.release import __version__ as ANSIBLE_CORE


def checks_done(attempts: Any, core_version: str = ANSIBLE_CORE) -> Any:
    """The number of the check that has just run, from the C(attempts) of a retry's result. ansible-core 2.21 hands
    the retry callback the number of the attempt about to run (task_executor: attempt + 1), 2.19 the one that ran;
    "check N" names the check that found the job still running on both."""
    if not isinstance(attempts, int) or isinstance(attempts, bool):
        return attempts
    major, minor = (int(part) for part in core_version.split(".")[:2])
    return attempts - 1 if (major, minor) >= (2, 21) else attempts


def progress_text(result: dict[str, Any], task_name: str = "") -> str | None:
    """The progress text of a probe result: its own key, or the JSON object its stdout holds;
    for an async_status check of a job still running, that it is still running."""
    if isinstance(result.get("progress"), str):
        return result["progress"]
    if result.get("started") == 1 and result.get("finished") == 0 and "ansible_job_id" in result:
        return "%s: still running (check %s)" % (task_name or "background job", result.get("attempts", "?"))
    stdout = result.get("stdout")
    if not isinstance(stdout, str) or not stdout.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    text = data.get("progress") if isinstance(data, dict) else None
    return text if isinstance(text, str) else None


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "eagle3_progress"

    def v2_runner_retry(self, result) -> None:
        shown = dict(result.result)
        if "attempts" in shown:
            shown["attempts"] = checks_done(shown["attempts"])
        text = progress_text(shown, result.task_name or str(result.task))
        if text is None:
            super().v2_runner_retry(result)
            return
        self._display.display("  ... [%s] %s" % (self.host_label(result), text), color=C.COLOR_VERBOSE)
