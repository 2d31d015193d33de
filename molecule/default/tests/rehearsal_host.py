"""The molecule rehearsal host as the tests reach it (podman://), and its server's readiness."""
from __future__ import annotations

import time

import pytest
import testinfra

NAME = "molecule-rehearsal-1"
PORT = 8100
HOST = testinfra.get_host(f"podman://{NAME}")

HEALTH = """python3 - <<'EOF'
import urllib.request
try:
    print(urllib.request.urlopen("http://127.0.0.1:%d/health", timeout=5).status)
except Exception as exc:
    print(getattr(exc, "code", None) or type(exc).__name__)
EOF""" % PORT


def journal(unit: str) -> str:
    return HOST.run(f"journalctl -u {unit} -n 30 --no-pager -o cat").stdout


def health() -> str:
    return HOST.run(HEALTH).stdout.strip()


def wait_healthy(unit: str, timeout: float = 300) -> None:
    """Wait for /health 200 while the unit runs. 300 s: a start takes 25-45 s here (enforce-eager,
    docs/performance.md), so a machine 2.5x slower under load still has a margin of 2.5x or more."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if health() == "200":
            return
        assert HOST.service(unit).is_running or HOST.run(f"systemctl is-active {unit}").stdout.strip() == "activating", journal(unit)
        time.sleep(2)
    pytest.fail(f"{unit} not healthy after {timeout} s:\n{journal(unit)}")
