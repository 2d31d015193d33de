"""Many files and directories on a host in one call (the module eagle3.trn2.host_files): the entries checked and
brought to their state in order with the controller's own semantics (settle() of plugins/module_utils/controller_io.py,
less its controller-only state `moved`), then the directories listed (look_in) and the files read (read,
read_if_present), and the invocation a log keeps (each file's size and SHA-256, never its text). A refusal is one
exception, HostFilesError, whose message is the module's msg. Plain Python, no Ansible import.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
from typing import Any, Iterable, Mapping

from ansible_collections.eagle3.trn2.plugins.module_utils.controller_io import ControllerFileError, settle

ENTRY_KEYS = frozenset(("path", "state", "content", "mode", "owner", "group"))


class HostFilesError(Exception):
    """A refusal: the message names the option, the entry's index and what was expected. `changed_paths` are the paths
    changed (or, in check mode, that would change) before it; None where the failed result names none (a refused
    look_in place)."""

    def __init__(self, msg: str, changed_paths: list[str] | None = None):
        super().__init__(msg)
        self.changed_paths = changed_paths

    def result(self) -> dict[str, Any]:
        """What the failed result carries beside msg and invocation."""
        return {} if self.changed_paths is None else {"changed_paths": self.changed_paths}


def invocation(params: Mapping[str, Any]) -> dict:
    """The module's arguments as the result shows them: each content replaced by its size and SHA-256."""
    files = []
    for entry in params.get("files") or []:
        shown = dict(entry)
        if isinstance(shown.get("content"), str):
            text = shown["content"].encode("utf-8", "surrogateescape")
            shown["content"] = f"({len(text)} bytes, sha256 {hashlib.sha256(text).hexdigest()})"
        files.append(shown)
    return {"module_args": {"files": files, "look_in": params.get("look_in") or [], "read": params.get("read") or [],
                            "read_if_present": params.get("read_if_present") or []}}


def settle_entries(entries: Iterable[Mapping[str, Any]], check: bool = False) -> tuple[list[str], list[dict]]:
    """Each entry brought to its state, in order: (the paths that changed, their diffs). An entry refused stops the
    rest; the entries before it stay written."""
    changed: list[str] = []
    diffs: list[dict] = []
    for index, entry in enumerate(entries):
        unknown = sorted(set(entry) - ENTRY_KEYS)
        if unknown:
            raise HostFilesError(f"files[{index}]: unknown key(s) {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(ENTRY_KEYS))})", changed)
        if entry.get("state", "file") == "moved":
            raise HostFilesError(f"files[{index}]: state must be file, directory or absent, got 'moved'", changed)
        try:
            done = settle(entry.get("path"), state=entry.get("state", "file"), content=entry.get("content"),
                          mode=entry.get("mode"), owner=entry.get("owner"), group=entry.get("group"), check=check)
        except ControllerFileError as exc:
            raise HostFilesError(f"files[{index}]: {exc}", changed) from exc
        except OSError as exc:
            raise HostFilesError(f"files[{index}]: {entry.get('path')}: {exc.strerror or exc}", changed) from exc
        if done["changed"]:
            changed.append(entry["path"])
            diffs.append(done["diff"])
    return changed, diffs


def look_in(places: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per place's path, the sorted names in it matching its patterns; a directory that does not exist lists nothing."""
    found = {}
    for index, place in enumerate(places):
        if not isinstance(place.get("path"), str) or not isinstance(place.get("patterns"), list):
            raise HostFilesError(f"look_in[{index}] needs path (a directory) and patterns (a list), got {place!r}")
        try:
            names = os.listdir(place["path"])
        except (FileNotFoundError, NotADirectoryError):
            names = []
        found[place["path"]] = sorted(n for n in names if any(fnmatch.fnmatchcase(n, p) for p in place["patterns"]))
    return found


def read_texts(read: Iterable[str], read_if_present: Iterable[str],
               changed: list[str] | None = None) -> tuple[dict[str, str], list[str]]:
    """(the text of each file by path, the read_if_present paths that do not exist); a file that cannot be read, or
    is not UTF-8 text, is refused by name (`changed`: the paths a refusal names as changed before it)."""
    changed = [] if changed is None else changed
    texts: dict[str, str] = {}
    absent: list[str] = []
    for option, paths in (("read", read), ("read_if_present", read_if_present)):
        for index, path in enumerate(paths):
            if not os.path.isabs(path):
                raise HostFilesError(f"{option}[{index}]: {path!r} is not an absolute path", changed)
            try:
                with open(path, "rb") as handle:
                    texts[path] = handle.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HostFilesError(f"{option}[{index}]: {path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                                     changed) from exc
            except OSError as exc:
                if option == "read_if_present" and isinstance(exc, FileNotFoundError):
                    absent.append(path)
                    continue
                raise HostFilesError(f"{option}[{index}]: {path}: {exc.strerror or exc}", changed) from exc
    return texts, absent


def host_files(files: Iterable[Mapping[str, Any]], places: Iterable[Mapping[str, Any]] = (), read: Iterable[str] = (),
               read_if_present: Iterable[str] = (), check: bool = False) -> dict[str, Any]:
    """The module's work in order (the entries, then look_in, then the reads, each seeing the writes before it): its
    result's changed, changed_paths, found, read and absent, and diff (one per changed entry, returned with --diff)."""
    changed, diffs = settle_entries(files, check)
    found = look_in(places)
    texts, absent = read_texts(read, read_if_present, changed)
    return {"changed": bool(changed), "changed_paths": changed, "found": found, "read": texts, "absent": absent,
            "diff": diffs}
