"""model_assets' gated-access check against a FIXTURE Hugging Face endpoint on 127.0.0.1:
distinct messages for 401, 403 and 404, the token never in the output, the dataset pinned by checksum."""
from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT

TOKEN = "hf_CANARYgated0123456789"
HUB = ROOT / "tests/fixtures/hub"  # FIXTURE config.json files of the real shape (tests/fixtures/hub/README.md)
SONNET = b"From fairest creatures we desire increase (fixture)\n" * 10


class FixtureHub(http.server.BaseHTTPRequestHandler):
    """/ok/* 200 with the right token, 401 without it; /gated/* 403; /missing/* 404."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path == "/sonnet.txt":
            return self.reply(200, SONNET)
        authorized = self.headers.get("Authorization") == f"Bearer {TOKEN}"
        if self.path.startswith("/missing/"):
            return self.reply(404, b"Repository not found")
        if not authorized:
            return self.reply(401, b"Invalid credentials")
        if self.path.startswith("/gated/"):
            return self.reply(403, b"Access to model is restricted")
        if self.path.endswith("/resolve/main/config.json"):
            name = "speculator-eagle3.json" if self.path.startswith("/org/draft/") else "llama-3.1-8b-instruct.json"
            return self.reply(200, (HUB / name).read_bytes())
        return self.reply(200, b"{}")

    def reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FixtureHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run(hub: str, tmp_path: Path, target: str, token: str, checksum: str | None = None, **more):
    extra = {"endpoint": hub, "target": target, "dataset_path": str(tmp_path / "data" / "sonnet.txt"),
             "checksum": checksum or "sha256:" + hashlib.sha256(SONNET).hexdigest(), **more}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-vvv",
                           str(ROOT / "tests/playbooks/gated.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), HF_TOKEN=token))
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize(("target", "token", "expect"), [
    ("ok/model", "hf_NotTheRightOne0123456789", "HTTP 401. No token or an invalid one"),
    ("gated/model", TOKEN, "HTTP 403. The token is valid but may not read this gated repository"),
    ("missing/model", TOKEN, "HTTP 404. No such repository"),
])
def test_refusals_are_distinct_and_named(hub, tmp_path, target, token, expect):
    rc, out = run(hub, tmp_path, target, token)
    assert rc != 0
    assert f"{target}: {expect}" in out
    assert TOKEN not in out  # not even at -vvv
    assert not (tmp_path / "data" / "sonnet.txt").exists()


def test_no_token_is_refused_before_any_request(hub, tmp_path):
    rc, out = run(hub, tmp_path, "ok/model", "")
    assert rc != 0
    assert "model_assets_hf_token (eagle3_hf_token) is empty: ok/model is a gated model" in out
    assert not (tmp_path / "data").exists()


NOT_A_TOKEN = "model_assets_hf_token (eagle3_hf_token) is not a Hugging Face token"
# A newline is refused first by the settings check the play's settings role runs (the schema's rule for every string).
NEWLINE = "eagle3_hf_token holds a newline at position 24: a unit file, an environment file, a YAML config or a command line cannot hold it (the value is not shown)"


@pytest.mark.parametrize(("token", "expect"), [(TOKEN + "\nLD_PRELOAD=evil.so", NEWLINE), (TOKEN + "\n", NEWLINE),
                                               ("hf_short", NOT_A_TOKEN), ("Bearer " + TOKEN, NOT_A_TOKEN),
                                               ("hf_x y" * 5, NOT_A_TOKEN)])
def test_a_token_of_another_shape_is_refused_unshown(hub, tmp_path, token, expect):
    rc, out = run(hub, tmp_path, "ok/model", token)
    assert rc != 0
    assert expect in out
    assert "LD_PRELOAD" not in out and TOKEN not in out and "hf_short" not in out  # not even at -vvv
    assert not (tmp_path / "data").exists()


def test_access_granted_downloads_the_pinned_dataset(hub, tmp_path):
    # with the tutorial's method and max-model-len, which its models fit (judged from the hub's config.json)
    rc, out = run(hub, tmp_path, "ok/model", TOKEN, model_assets_speculative_method="eagle3",
                  model_assets_max_model_len=2048)
    assert rc == 0, out[-2000:]
    assert "Check the models fit the speculative method and max-model-len" in out
    assert (tmp_path / "data" / "sonnet.txt").read_bytes() == SONNET
    assert TOKEN not in out


def test_dataset_with_another_checksum_is_refused(hub, tmp_path):
    rc, out = run(hub, tmp_path, "ok/model", TOKEN, checksum="sha256:" + "0" * 64)
    assert rc != 0 and "checksum" in out.lower()


def test_a_token_on_the_command_line_is_refused_by_the_role_alone(hub, tmp_path):
    # model_assets runs alone in playbooks/host.yml, without the project preflight: its own rule refuses the token
    # that ps and the shell history would show, before any request.
    extra = {"endpoint": hub, "target": "ok/model", "dataset_path": str(tmp_path / "data" / "sonnet.txt"),
             "checksum": "sha256:" + hashlib.sha256(SONNET).hexdigest(), "eagle3_hf_token": TOKEN}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           str(ROOT / "tests/playbooks/gated.yml"), "-e", json.dumps(extra)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), HF_TOKEN=TOKEN))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "eagle3_hf_token given on the ansible-playbook command line" in out and TOKEN not in out
    assert not (tmp_path / "data" / "sonnet.txt").exists()


def test_models_that_do_not_fit_the_server_are_refused_from_the_hubs_config_json(hub, tmp_path):
    # the config.json the gated check fetched is judged before any server starts, each rule by name; the token is
    # never shown
    rc, out = run(hub, tmp_path, "ok/model", TOKEN, model_assets_speculative_method="medusa",
                  model_assets_max_model_len=200000)
    assert rc != 0
    assert ("eagle3_speculative_method medusa does not fit the draft org/draft: its config.json (speculators_model_type "
            "eagle3) describes an EAGLE3 head, and medusa needs a Medusa head; use eagle3, or another draft.") in out
    assert ("eagle3_server_options.max-model-len 200000 exceeds the target model ok/model's own limit 131072 (its "
            "config.json max_position_embeddings)") in out
    assert TOKEN not in out
