"""The units' service account in one call (tasks/configure.yml): its group and its system user, created when missing
and set back when the user's group, home or shell differ (ansible.builtin.group and ansible.builtin.user did this in
two calls, 1.7 s on a rehearsal host; docs/lab/overhead-2026-12.md).

Usage: service_account.py NAME HOME [check]. Prints one line per change ("group NAME created", "user NAME created",
"user NAME: shell /bin/sh -> /usr/sbin/nologin"), nothing when all is as asked; with "check" it changes nothing.
A command that fails ends the call with its status and its stderr.
"""
from __future__ import annotations

import grp
import pwd
import subprocess
import sys
from typing import Callable

SHELL = "/usr/sbin/nologin"


def group_id(name: str) -> int:
    return grp.getgrnam(name).gr_gid


def account(name: str) -> tuple[int, str, str]:
    found = pwd.getpwnam(name)
    return found.pw_gid, found.pw_dir, found.pw_shell


def plan(name: str, home: str, group_id: Callable[[str], int] = group_id,
         user: Callable[[str], tuple[int, str, str]] = account) -> list[tuple[str, list[str]]]:
    """(line, command) for each change, in order. user(name) gives (gid, home, shell); both lookups raise KeyError
    for a name that is not there."""
    steps = []
    try:
        gid = group_id(name)
    except KeyError:
        gid = None
        steps.append((f"group {name} created", ["groupadd", "--system", name]))
    try:
        has = user(name)
    except KeyError:
        return steps + [(f"user {name} created", ["useradd", "--system", "--gid", name, "--shell", SHELL,
                                                    "--home-dir", home, "--no-create-home", name])]
    wrong = [f"{what} {now} -> {want}" for what, now, want in
             (("group", has[0], gid), ("home", has[1], home), ("shell", has[2], SHELL)) if now != want]
    if wrong:
        steps.append((f"user {name}: " + ", ".join(wrong),
                      ["usermod", "--gid", name, "--home", home, "--shell", SHELL, name]))
    return steps


def main(argv: list[str]) -> int:
    name, home, check = argv[1], argv[2], argv[3:] == ["check"]
    for line, command in plan(name, home):
        print(line, flush=True)
        if not check:
            done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                sys.stderr.write(f"{' '.join(command)}: exit {done.returncode}: {done.stderr}")
                return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
