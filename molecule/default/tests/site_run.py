"""Running the project's own site.yml against the molecule inventory, for the tests that need a
real run (test_bad_inputs.py, test_drills.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])


def site_command(*extra: str, verbose: str = "", playbook: str = "eagle3.trn2.site") -> list[str]:
    """ansible-playbook eagle3.trn2.site, or other playbooks of the collection run in turn by one ansible-playbook
    (space-separated, such as "eagle3.trn2.provision eagle3.trn2.benchmark"), from the installed collection when
    scripts/test.sh installed one, on the molecule inventory; extra goes before the playbooks."""
    args = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory")]
    return args + ([verbose] if verbose else []) + list(extra) + playbook.split()


def site_env(run_id: str, results: Path | None = None, token: str = "") -> dict[str, str]:
    """The run id and results directory; HF_TOKEN only when a token is given."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), EAGLE3_RUN_ID=run_id,
               ANSIBLE_COLLECTIONS_PATH=os.environ.get("EAGLE3_COLLECTIONS", str(ROOT / "collections")),
               EAGLE3_RESULTS_DIR=str(results or EPHEMERAL / "results"), ANSIBLE_NOCOLOR="1")
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return env


def run_site(run_id: str, *extra: str, results: Path | None = None, timeout: int = 900,
             token: str = "", playbook: str = "eagle3.trn2.site") -> tuple[int, str]:
    """Return code and output with whitespace folded (the yaml callback wraps long messages);
    HF_TOKEN in the environment when a token is given (never on the command line)."""
    proc = subprocess.run(site_command(*extra, playbook=playbook), capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT,
                          env=site_env(run_id, results, token), stdin=subprocess.DEVNULL)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())
