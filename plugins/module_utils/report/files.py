"""A run's report files written on the controller, verdict.json last, never leaving a stale verdict (the action
eagle3.trn2.report_files; its documentation says the order and the failure versions).

Each file is compared with what is on disk and replaced atomically (plugins/module_utils/controller_io.py) only when
its content differs; with `failure`, every report file is replaced by its failure version (output.py, failure_files)
and report.csv removed, each file that could not be written or removed named.
"""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import read_text as _read
from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import write_atomic as _write
from ansible_collections.eagle3.trn2.plugins.module_utils.report.output import REPORT_FILES, failure_files

VERDICT = "verdict.json"
VALID_ARGS = frozenset(("dir", "files", "verdict", "run_id", "mode", "failure"))


def report_files(args: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> dict[str, Any]:
    """The action's work: its options checked, the files written verdict last (or the failure versions); the task's
    result (changed, written, diff; with `failure`: not_written, stuck, failed_report, failed and msg)."""
    result: dict[str, Any] = {}
    unknown = set(args) - VALID_ARGS
    if unknown:
        raise AnsibleActionFail(f"report_files: unknown options {sorted(unknown)}; valid: {sorted(VALID_ARGS)}")
    directory, files, verdict = args.get("dir"), args.get("files") or {}, args.get("verdict")
    if not isinstance(directory, str) or not os.path.isabs(directory):
        raise AnsibleActionFail(f"report_files: dir must be an absolute path, got {directory!r}")
    if args.get("failure") is not None:
        return _failure(result, directory, str(args["failure"]), str(args.get("run_id", "")),
                        int(str(args.get("mode", "0644")), 8), check_mode)
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise AnsibleActionFail("report_files: files must map file names to their text")
    if not isinstance(verdict, str):
        raise AnsibleActionFail("report_files: verdict must be the text of verdict.json")
    bad = [n for n in files if n == VERDICT or os.sep in n or n.startswith(".")]
    if bad:
        raise AnsibleActionFail(f"report_files: file names must be plain names other than {VERDICT}, got {bad}")
    mode = int(str(args.get("mode", "0644")), 8)

    wanted = dict(files)
    wanted[VERDICT] = verdict
    changed = [n for n, text in wanted.items() if _read(os.path.join(directory, n)) != text]
    modes = [n for n in wanted if n not in changed and os.path.exists(os.path.join(directory, n))
             and stat.S_IMODE(os.stat(os.path.join(directory, n)).st_mode) != mode]
    result.update(changed=bool(changed or modes or not os.path.isdir(directory)), written=changed)
    if diff:
        result["diff"] = [{"before_header": os.path.join(directory, n), "after_header": os.path.join(directory, n),
                           "before": _read(os.path.join(directory, n)) or "", "after": wanted[n]}
                          for n in changed if n.endswith((".md", ".csv", ".json"))]
    if check_mode or not result["changed"]:
        return result

    os.makedirs(directory, mode=0o755, exist_ok=True)
    if VERDICT in changed:
        progress = {"ok": False, "status": "in progress", "run_id": args.get("run_id", "")}
        _write(os.path.join(directory, VERDICT), json.dumps(progress, indent=4) + "\n", mode)
    for name in [n for n in wanted if n != VERDICT]:
        if name in changed:
            _write(os.path.join(directory, name), wanted[name], mode)
        elif name in modes:
            os.chmod(os.path.join(directory, name), mode)
    if VERDICT in changed:
        _write(os.path.join(directory, VERDICT), verdict, mode)
    elif VERDICT in modes:
        os.chmod(os.path.join(directory, VERDICT), mode)
    return result


def _failure(result: dict, directory: str, error: str, run_id: str, mode: int, check_mode: bool) -> dict:
    """Replace every report file by its failure version, remove report.csv (see the action's doc). Returns
    `written` (the failure files written), `not_written` ("NAME (REASON)" for each that could not be) and `stuck`
    ("NAME (REASON)" for each file that could be neither replaced nor removed: an earlier version is left)."""
    wanted = failure_files(run_id, error)
    changed = [n for n in REPORT_FILES if _read(os.path.join(directory, n)) != wanted.get(n)
               and (n in wanted or os.path.lexists(os.path.join(directory, n)))]
    result.update(changed=bool(changed), written=changed, not_written=[], stuck=[], failed_report=error)
    if check_mode or not changed:
        return result
    made = _attempt(os.makedirs, directory, mode=0o755, exist_ok=True)
    written, not_written, removed, missing, stuck = [], [], [], [], []
    for name in [n for n in REPORT_FILES if n in changed]:
        path = os.path.join(directory, name)
        if name in wanted:
            reason = made or _attempt(_write, path, wanted[name], mode)
            if not reason:
                written.append(name)
                continue
            not_written.append(f"{name} ({reason})")
        if os.path.lexists(path):
            reason = _attempt(os.unlink, path)
            if reason:
                stuck.append(f"{name} ({reason})")
                continue
            removed.append(name)
        if name in wanted:
            missing.append(name)  # neither the failure nor an earlier version: no such file there now
    result.update(changed=bool(written or removed), written=written, not_written=not_written, stuck=stuck)
    problems = []
    if not_written:
        problems.append(f"the report's failure could not be written in {directory}: {', '.join(not_written)}"
                        + (f", so there is no {', '.join(missing)} there now" if missing else ""))
    if stuck:
        problems.append(f"{', '.join(stuck)} in {directory} could be neither replaced by the report's failure nor "
                        "removed: it may still show an earlier report")
    if problems:
        result.update(failed=True, msg="report_files: " + "; ".join(problems))
    return result


def _attempt(action, *args, **kwargs) -> str:
    """Empty when action(*args, **kwargs) succeeds, else why not (the OSError's text: "No space left on device")."""
    try:
        action(*args, **kwargs)
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""
