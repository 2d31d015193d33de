"""Checks of the controller itself, run by the preflight before any change (playbooks/preflight.yml) through
the lookups eagle3.trn2.dir_problem and eagle3.trn2.cli_secrets: they look at the controller's file system and
at the ansible-playbook command line that started the run, which is a lookup's job, not a filter's."""
from __future__ import annotations

import os
import re
import shlex
import tempfile
from typing import Any

import yaml

HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{20,}")


def eagle3_dir_problem(path: Any) -> str:
    """Why `path` cannot be used as a directory to write into ("" when it can).

    Walks up to the deepest existing ancestor; refuses a file where a directory is needed, a broken
    symbolic link on the way, a missing name longer than the file system allows, and an ancestor
    where nothing can be created (read-only file system, /proc, permissions), found by creating and
    removing an empty probe directory there: the only trace is the ancestor's modification time.
    """
    if not isinstance(path, str) or not path.strip():
        return "it is empty"
    full = os.path.abspath(path)
    current, missing = full, []
    while not os.path.exists(current):
        if os.path.islink(current):
            return f"{current} is a broken symbolic link (to {os.readlink(current)})"
        missing.append(os.path.basename(current))
        current = os.path.dirname(current)
    if not os.path.isdir(current):
        return f"{current} is not a directory"
    name_max = os.pathconf(current, "PC_NAME_MAX")
    for name in missing:
        if len(name.encode()) > name_max:
            return f"the name {name[:24]}... is {len(name.encode())} bytes, longer than the file system allows ({name_max})"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".eagle3-probe-", dir=current))
    except OSError as exc:
        return f"nothing can be created in {current} ({exc.strerror})"
    return ""


def _extra_vars(argv: list[str]) -> list[str]:
    """The values of every -e / --extra-vars option in an ansible-playbook command line."""
    values, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-e", "--extra-vars") and i + 1 < len(argv):
            values.append(argv[i + 1])
            i += 1
        elif arg.startswith("--extra-vars="):
            values.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and not arg.startswith("--") and len(arg) > 2:
            values.append(arg[2:])
        i += 1
    return values


def _structured(value: str) -> bool:
    """An -e value that is JSON or YAML text (typed values), not key=value pairs (text)."""
    return value.lstrip().startswith(("{", "---"))


def _given(value: str) -> dict[str, Any]:
    """Variables set by one -e value: JSON/YAML text or key=value pairs; a @file is not on the command line."""
    if value.startswith("@"):
        return {}
    if _structured(value):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {}
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    return dict(word.split("=", 1) for word in words if "=" in word)


def eagle3_cli_secrets(names: list[str], argv: list[str] | None = None) -> list[str]:
    """The variables of `names` given a non-empty value with -e, plus "an hf_ token" for a token-shaped
    word anywhere on the command line. `argv` defaults to the ansible-playbook process that runs this."""
    if argv is None:
        argv = _playbook_argv()
    found = []
    for value in _extra_vars(argv):
        for key, given in _given(value).items():
            if key in names and given not in (None, "") and key not in found:
                found.append(key)
    if not found and any(HF_TOKEN.search(arg) for arg in argv):
        found.append("an hf_ token")
    return found


def cli_secrets_refusal(names: list[str]) -> str:
    """The refusal of the secrets eagle3_cli_secrets found, worded once (names only, never values); empty for none."""
    if not names:
        return ""
    return (", ".join(names) + " given on the ansible-playbook command line: every user of the controller sees it in"
            " the process list, and the shell history keeps it. Give eagle3_hf_token through the HF_TOKEN environment"
            " variable (eagle3_serve_api_key: EAGLE3_API_KEY) or an Ansible Vault file (-e @vault.yml) instead (the"
            " value is not shown).")


def eagle3_cli_text_names(argv: list[str] | None = None) -> list[str]:
    """The variables given as text with -e key=value (Ansible hands them over as strings), not as JSON or YAML."""
    if argv is None:
        argv = _playbook_argv()
    names: list[str] = []
    for value in _extra_vars(argv):
        if not _structured(value):
            names += [key for key in _given(value) if key not in names]
    return names


def _playbook_argv() -> list[str]:
    """The command line of the ansible-playbook process this runs under (Linux /proc; [] elsewhere)."""
    pid = os.getpid()
    for _ in range(16):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
            with open(f"/proc/{pid}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return []
        if any(os.path.basename(part) == "ansible-playbook" for part in argv[:2]):
            return argv
        if parent <= 1:
            return []
        pid = parent
    return []
