"""Free space check: nothing when the file system holding PATH (or its nearest existing parent) has at least MIN MB
free, else "LABEL PATH has N MB free".

Two uses, one code: on the controller the eagle3_free_space filter (plugins/filter/free_space.py) calls problem() in
Ansible's own process; on a host vllm_bench runs this file with `python -c` (stdlib only, nothing copied there first):
usage free_space.py LABEL PATH MIN, it prints the same text.
"""
from __future__ import annotations

import os
import sys


def free_mb(path: str) -> int:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize // 1048576


def problem(label: str, path: str, need: int) -> str:
    free = free_mb(path)
    return "" if free >= need else "%s %s has %d MB free" % (label, path, free)


if __name__ == "__main__":
    print(problem(sys.argv[1], sys.argv[2], int(sys.argv[3])))
