"""Files written in one process: on the controller by the action plugins controller_file.py and report_files.py (in
the task's own worker, no module call), on a host by the module host_files.py (many files in one call, through
host/files.py). Read back, and replaced atomically (a temporary file in the same directory, then rename), so a reader
never sees half a file. Plain Python, no Ansible import.
"""
from __future__ import annotations

import grp
import os
import pwd
import stat
import tempfile


def read_text(path: str) -> str | None:
    """The file's text; None when it is absent, a directory or not text (replacing it then differs)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:  # "\r" read back as written
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, UnicodeDecodeError):
        return None


def write_atomic(path: str, content: str, mode: int, uid: int = -1, gid: int = -1) -> None:
    """Write `content` to `path` with `mode` (and owner `uid`, group `gid` unless -1) through a temporary file renamed
    over it."""
    fd, tmp = tempfile.mkstemp(prefix=".eagle3-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        if uid != -1 or gid != -1:
            os.chown(tmp, uid, gid)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


STATES = ("file", "directory", "absent", "moved")


class ControllerFileError(Exception):
    """A request that cannot be carried out; the message names the option and what was expected."""


def _ids(owner: str | None, group: str | None, check: bool) -> tuple[int, int] | None:
    """(uid, gid) of `owner` and `group` (-1 for one not given); None in check mode when one does not exist yet (the
    task that makes it ran in check mode too), an error otherwise."""
    ids = []
    for kind, name, number in (("owner", owner, lambda n: pwd.getpwnam(n).pw_uid),
                               ("group", group, lambda n: grp.getgrnam(n).gr_gid)):
        try:
            ids.append(-1 if name is None else number(name))
        except KeyError:
            if check:
                return None
            raise ControllerFileError(f"{kind} {name!r} does not exist on this machine") from None
    return ids[0], ids[1]


def _owned(path: str, ids: tuple[int, int]) -> bool:
    """Whether `path` has the owner and group of `ids` (-1: any)."""
    st = os.stat(path)
    return ids[0] in (-1, st.st_uid) and ids[1] in (-1, st.st_gid)


def settle(path: str, state: str = "file", content: str | None = None, src: str | None = None,
           mode: str | None = None, check: bool = False, owner: str | None = None, group: str | None = None) -> dict:
    """Bring `path` to `state` on the machine this runs on; returns {"changed", "diff"} and writes nothing when `check`.

    file: `content` written when the text differs, `mode` (default 0644) put right; the parent directory must exist.
    directory: created with its parents, `mode` (default 0755) on the leaf. absent: a file or link removed (a
    directory is refused: nothing here removes trees). moved: the file `src` renamed onto `path` (atomic, on one file
    system), as `mv` does; `src` must exist.
    `owner` and `group` (names; file and directory only) are put right as the mode is.
    In check mode what an earlier task would have made (the parent directory of a file, the `src` of a move, the owner
    or group) may be missing: the request then reports changed, as the write or the move would be.
    """
    if state not in STATES:
        raise ControllerFileError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ControllerFileError(f"path must be an absolute path, got {path!r}")
    if (content is not None) != (state == "file"):
        raise ControllerFileError(f"content is given with state file and only then (state {state})")
    if (src is not None) != (state == "moved"):
        raise ControllerFileError(f"src is given with state moved and only then (state {state})")
    for name, value in (("mode", mode), ("owner", owner), ("group", group)):
        if value is not None and state in ("absent", "moved"):
            raise ControllerFileError(f"{name} is not taken with state {state}")
    try:
        wanted_mode = int(str(mode if mode is not None else ("0755" if state == "directory" else "0644")), 8)
    except ValueError as exc:
        raise ControllerFileError(f"mode must be an octal string such as \"0644\", got {mode!r}") from exc
    if not 0 <= wanted_mode <= 0o7777:
        raise ControllerFileError(f"mode must be an octal string such as \"0644\", got {mode!r}")
    if state == "file":
        if not isinstance(content, str):
            raise ControllerFileError(f"content must be text, got {type(content).__name__}")
        if os.path.isdir(path):
            raise ControllerFileError(f"{path} is a directory, not a file")
        if not os.path.isdir(os.path.dirname(path)):
            if check:
                return {"changed": True, "diff": {"before_header": path, "after_header": path, "before": "",
                                                  "after": content}}
            raise ControllerFileError(f"the directory of {path} does not exist")
        ids = _ids(owner, group, check)
        before = read_text(path)
        differs = before != content or ids is None
        wrong_mode = not differs and stat.S_IMODE(os.stat(path).st_mode) != wanted_mode
        wrong_owner = not differs and not _owned(path, ids)
        result = {"changed": differs or wrong_mode or wrong_owner,
                  "diff": {"before_header": path, "after_header": path, "before": before or "", "after": content}}
        if not check:
            if differs:
                write_atomic(path, content, wanted_mode, *ids)
            else:
                if wrong_owner:
                    os.chown(path, *ids)
                if wrong_mode or wrong_owner:  # chown clears setuid bits: the mode after it
                    os.chmod(path, wanted_mode)
        return result
    if state == "directory":
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ControllerFileError(f"{path} exists and is not a directory")
        exists = os.path.isdir(path)
        ids = _ids(owner, group, check)
        changed = (not exists or ids is None or stat.S_IMODE(os.stat(path).st_mode) != wanted_mode
                   or not _owned(path, ids))
        if changed and not check:
            os.makedirs(path, exist_ok=True)
            if ids != (-1, -1):
                os.chown(path, *ids)
            os.chmod(path, wanted_mode)
        return {"changed": changed, "diff": {"before": {"path": path, "state": "directory" if exists else "absent"},
                                             "after": {"path": path, "state": "directory"}}}
    if state == "absent":
        if os.path.isdir(path) and not os.path.islink(path):
            raise ControllerFileError(f"{path} is a directory: state absent removes files only")
        exists = os.path.lexists(path)
        if exists and not check:
            os.unlink(path)
        return {"changed": exists, "diff": {"before": {"path": path, "state": "file" if exists else "absent"},
                                            "after": {"path": path, "state": "absent"}}}
    if not isinstance(src, str) or not os.path.isabs(src):
        raise ControllerFileError(f"src must be an absolute path, got {src!r}")
    if os.path.isdir(path):
        raise ControllerFileError(f"{path} is a directory, not a file")
    if not os.path.isfile(src) and not (check and not os.path.lexists(src)):
        raise ControllerFileError(f"src {src} is not a file: nothing to move onto {path}")
    if not check:
        os.replace(src, path)
    return {"changed": True, "diff": {"before": {"path": path, "moved_from": src}, "after": {"path": path}}}
