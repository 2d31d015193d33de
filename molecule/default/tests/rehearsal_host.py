"""The molecule rehearsal host as the tests reach it (podman://), and its server's readiness."""
from __future__ import annotations

import json
import shlex
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


# One request from inside the host: prints the HTTP status, then the body (the key is an argument of this one
# command, never written anywhere).
REQUEST = """python3 - "$@" <<'EOF'
import sys, urllib.error, urllib.request
method, path, key, body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
req = urllib.request.Request("http://127.0.0.1:%d" + path, data=body.encode() if body != "-" else None, method=method,
                             headers={"Content-Type": "application/json"})
if key != "-":
    req.add_header("Authorization", "Bearer " + key)
try:
    with urllib.request.urlopen(req, timeout=120) as resp:
        print(resp.status); print(resp.read().decode())
except urllib.error.HTTPError as exc:
    print(exc.code); print(exc.read().decode())
EOF""" % PORT


def request(method: str, path: str, key: str | None = None, body: dict | None = None) -> tuple[int, str]:
    """HTTP status and body of one request to the host's server on 127.0.0.1, with the API key when given."""
    out = HOST.run(f"bash -c {shlex.quote(REQUEST)} request {method} {path} {shlex.quote(key or '-')} "
                   f"{shlex.quote(json.dumps(body) if body is not None else '-')}")
    status, _, text = out.stdout.partition("\n")
    assert status.strip().isdigit(), out.stdout + out.stderr
    return int(status), text
