"""The other hosts' wait for the canary's compile cache, on the controller (one task with until/retries; the progress
callback shows each window's line).

Usage: compile_cache_ctl.py wait MANIFEST PROFILE WINDOW DEADLINE CANARY_FAILURE
Waits up to WINDOW seconds for the canary's manifest (plugins/module_utils/compile_cache/manifest.py, `wait`) to leave
"compiling" and prints one JSON object: "done" (the canary is finished with it: shipped, empty, failed, or gone; or
DEADLINE, epoch seconds, has passed: "timeout"; or the canary recorded a failure (CANARY_FAILURE, its failure.json on
the controller) newer than the manifest, or with no manifest: "failed"; the host then compiles itself), "state",
"key", "material", "canary", "archive", "waited" and a "progress" line (plugins/callback/eagle3_progress.py). A canary
whose ansible-playbook process is gone (a killed run) counts as "gone"; no manifest yet means the canary has not
reached the profile.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# The collection's plugins/module_utils, as the play resolved it (eagle3_layout's module_utils_dir): the task that runs
# this script sets EAGLE3_MODULE_UTILS.
if not os.environ.get("EAGLE3_MODULE_UTILS"):
    sys.exit("EAGLE3_MODULE_UTILS must name the collection's plugins/module_utils (roles/compile_cache/tasks/settle.yml)")
sys.path.insert(0, os.environ["EAGLE3_MODULE_UTILS"])
from compile_cache.manifest import wait  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) == 7 and argv[1] == "wait":
        print(json.dumps(wait(Path(argv[2]), argv[3], float(argv[4]), float(argv[5]), Path(argv[6]))))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
