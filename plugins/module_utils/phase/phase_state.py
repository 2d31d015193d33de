"""A host phase's state, recorded when the phase succeeds and compared before the next run, so a converged host's rerun
costs one call per phase.

A host phase (host: the SDK, vLLM and the models; service: the server units) is skipped on a rerun when two things
equal what its record says, the record being written on the host when the phase last finished:
  - its inputs: a digest of the phase's role inputs as resolved for the host and of the phase's code (the controller
    computes it: plugins/module_utils/phase/phase_inputs.py, in the action eagle3.trn2.phase_state);
  - the host: a fingerprint of everything the phase writes or reads back on the host (the play names the paths,
    playbooks/host.yml and service.yml), taken here, in one module call.
Anything else (a changed setting, a unit edited by hand, a package upgraded, a model removed, a new version of the
collection) differs and the phase runs. A phase that runs drops its record first, so a phase that fails leaves none.

Path specs (dicts), each with a glob `path` (no match: recorded as absent) and optional `exclude` globs of the
matched names to leave out (another phase's files):
  file     content digest, mode, owner (the units, configs, environment files, dpkg's status)
  tree     every entry below, recursively: type, mode, owner, size, mtime (the models); `exclude` globs of names
  entries  the entries of a directory matching `match` globs, with their mtime (the venv's *.dist-info: a package
           installed, removed or reinstalled changes them, the __pycache__ a run writes does not)
  stat     the path itself: type, mode, owner (a directory the phase creates)
  user     a system account: uid, gid, home, shell      group  a group: gid

The module eagle3.trn2.phase_state is the entry point: compare_on_host and record_on_host read, drop and write the
records in its state_dir (one JSON file per phase, root only).
"""
from __future__ import annotations

import fnmatch
import glob
import grp
import hashlib
import json
import os
import pwd
import stat
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import write_atomic

FORMAT = 1
KINDS = ("file", "tree", "entries", "stat", "user", "group")
# The phases in site.yml's order: a phase that runs makes every later one run too (its inputs may be what it changed).
PHASES = ("host", "service")


def _stat_row(st: os.stat_result, times: bool) -> list[Any]:
    row = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid]
    if times and not stat.S_ISDIR(st.st_mode):
        row += [st.st_size, st.st_mtime_ns]
    return row


def _file(path: str) -> list[Any]:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ["link", os.readlink(path)]
    row = _stat_row(st, times=False)
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        row.append(digest.hexdigest())
    return row


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _tree(path: str, exclude: Iterable[str]) -> list[Any]:
    exclude = list(exclude)
    rows: list[Any] = [_stat_row(os.lstat(path), times=False)]
    for top, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _matches(d, exclude))
        for name in sorted(dirs) + sorted(f for f in files if not _matches(f, exclude)):
            full = os.path.join(top, name)
            st = os.lstat(full)
            row = _stat_row(st, times=True)
            if stat.S_ISLNK(st.st_mode):
                row.append(os.readlink(full))
            rows.append([os.path.relpath(full, path), row])
    return rows


def _entries(path: str, match: Iterable[str]) -> list[Any]:
    match = list(match) or ["*"]
    rows: list[Any] = [_stat_row(os.lstat(path), times=False)]
    for name in sorted(os.listdir(path)):
        if _matches(name, match):
            st = os.lstat(os.path.join(path, name))
            rows.append([name, stat.S_IFMT(st.st_mode), st.st_mtime_ns])
    return rows


def _account(kind: str, name: str) -> list[Any] | None:
    try:
        if kind == "user":
            entry = pwd.getpwnam(name)
            return [entry.pw_uid, entry.pw_gid, entry.pw_dir, entry.pw_shell]
        return [grp.getgrnam(name).gr_gid]
    except KeyError:
        return None


def spec_key(spec: Mapping[str, Any]) -> str:
    return f"{spec['kind']}:{spec['path']}"


def check_specs(specs: Any) -> list[str]:
    """What is wrong with a list of path specs (empty when nothing)."""
    if not isinstance(specs, list) or not specs:
        return [f"expected a non-empty list of path specs, got {specs!r}"]
    problems = []
    for spec in specs:
        if not isinstance(spec, Mapping) or spec.get("kind") not in KINDS or not isinstance(spec.get("path"), str) \
                or not spec["path"]:
            problems.append(f"expected {{kind: one of {', '.join(KINDS)}, path: a non-empty string}}, got {spec!r}")
        elif spec["kind"] not in ("user", "group") and not spec["path"].startswith("/"):
            problems.append(f"{spec_key(spec)}: expected an absolute path")
    return problems


def fingerprint(specs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each spec's digest (by spec_key): what the phase left there, or "absent"."""
    out: dict[str, str] = {}
    for spec in specs:
        kind, path = spec["kind"], spec["path"]
        if kind in ("user", "group"):
            parts: list[Any] = [[path, _account(kind, path)]]
        else:
            parts = []
            matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
            if kind != "tree":  # a tree's exclude is of the names below it
                matches = [m for m in matches if not _matches(os.path.basename(m), spec.get("exclude") or [])]
            for match in matches:
                try:
                    if kind == "file":
                        row: Any = _file(match)
                    elif kind == "tree":
                        row = _tree(match, spec.get("exclude") or [])
                    elif kind == "entries":
                        row = _entries(match, spec.get("match") or [])
                    else:
                        row = _stat_row(os.lstat(match), times=False)
                except FileNotFoundError:
                    row = None
                except OSError as err:  # unreadable now: differs from any record, so the phase runs and says why
                    row = ["unreadable", err.errno]
                parts.append([match, row])
        absent = all(row is None for _, row in parts)
        out[spec_key(spec)] = "absent" if absent else hashlib.sha256(
            json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return out


def record(phase: str, inputs: str, prints: Mapping[str, str], run: str, written: str,
           input_digests: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"format": FORMAT, "phase": phase, "inputs": inputs, "fingerprint": dict(prints), "run": run,
            "written": written, "input_digests": dict(input_digests or {})}


def same_record(old: Any, new: Mapping[str, Any]) -> bool:
    """Whether a record on the host says what a new one would (its run and time aside)."""
    return isinstance(old, Mapping) and all(old.get(key) == new[key] for key in ("format", "phase", "inputs",
                                                                                  "fingerprint"))


def _differ(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    return sorted(set(old) ^ set(new) | {k for k in new if old.get(k) != new[k]})


def _shown(keys: list[str]) -> str:
    return ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")


def compare(old: Any, phase: str, inputs: str, prints: Mapping[str, str],
            input_digests: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """(skip, why): the phase may be skipped only when its record holds these inputs and this fingerprint."""
    if not isinstance(old, Mapping) or old.get("format") != FORMAT or old.get("phase") != phase:
        return False, "no record of the phase on this host"
    if old.get("inputs") != inputs:
        named = _differ(old.get("input_digests") or {}, input_digests or {})
        named = ["the code of the collection" if key == "code" else key for key in named]
        return False, "its inputs changed: " + (_shown(named) if named else "a setting, a role input or the code")
    changed = _differ(old.get("fingerprint") or {}, prints)
    if changed:
        return False, f"changed on the host since {_by(old)}: {_shown([key.split(':', 1)[1] for key in changed])}"
    return True, f"as {_by(old)} left it at {old.get('written')}"


def _by(old: Mapping[str, Any]) -> str:
    return f"run {old['run']}" if old.get("run") else "its last run"


def record_path(state_dir: str, phase: str) -> str:
    return os.path.join(state_dir, f"{phase}.json")


def read_record(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_record(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(path), 0o700)
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True), 0o600)


def compare_on_host(state_dir: str, phase: str, inputs: str, specs: Iterable[Mapping[str, Any]],
                    input_digests: Mapping[str, str] | None = None, shortcut: bool = True,
                    unused_because: str = "eagle3_rerun_shortcut is off", check: bool = False) -> dict[str, Any]:
    """state=compare: {skip, why, record} (the record as it is, {} when none). A phase not skipped drops its record and
    every later phase's first (unless `check`)."""
    old = read_record(record_path(state_dir, phase))
    prints = fingerprint(specs)
    skip, why = compare(old, phase, inputs, prints, input_digests)
    if not shortcut:
        skip, why = False, unused_because
    if not skip and not check:
        for later in PHASES[PHASES.index(phase):]:
            try:
                os.unlink(record_path(state_dir, later))
            except FileNotFoundError:
                pass
    return {"skip": skip, "why": why, "record": old or {}}


def record_on_host(state_dir: str, phase: str, inputs: str, specs: Iterable[Mapping[str, Any]],
                   input_digests: Mapping[str, str] | None = None, run: str = "", check: bool = False,
                   written: str | None = None) -> dict[str, Any]:
    """state=recorded: {skip, why, record}, the record written (unless `check`) when the one there says otherwise;
    `written` its time (default now, UTC)."""
    path = record_path(state_dir, phase)
    old = read_record(path)
    prints = fingerprint(specs)
    new = record(phase, inputs, prints, run, written or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 input_digests)
    if same_record(old, new):
        return {"skip": False, "why": "the record already says so", "record": old}
    if not check:
        write_record(path, new)
    return {"skip": False, "why": "recorded", "record": new}
