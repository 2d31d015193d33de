"""Tests of plugins/module_utils/settings/controller_checks.py (the lookups dir_problem and cli_secrets): the results
directory and secrets on the command line."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import (
    eagle3_cli_secrets, eagle3_dir_problem)

NAMES = ["eagle3_hf_token", "model_assets_hf_token", "vllm_service_hf_token"]
TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123"


def test_a_new_directory_under_a_writable_one_is_fine(tmp_path):
    assert eagle3_dir_problem(str(tmp_path / "a" / "b")) == ""
    assert eagle3_dir_problem(str(tmp_path)) == ""
    assert os.listdir(tmp_path) == []  # the probe leaves nothing behind


def test_relative_paths_are_judged_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert eagle3_dir_problem("results") == ""


def test_a_file_where_a_directory_is_needed(tmp_path):
    (tmp_path / "file").write_text("x")
    assert eagle3_dir_problem(str(tmp_path / "file")) == f"{tmp_path}/file is not a directory"
    assert eagle3_dir_problem(str(tmp_path / "file" / "results")) == f"{tmp_path}/file is not a directory"


def test_a_broken_symbolic_link_on_the_way(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    assert eagle3_dir_problem(str(tmp_path / "link")).startswith(f"{tmp_path}/link is a broken symbolic link")
    assert eagle3_dir_problem(str(tmp_path / "link" / "results")).startswith(f"{tmp_path}/link is a broken symbolic link")


def test_a_name_longer_than_the_file_system_allows(tmp_path):
    assert "longer than the file system allows" in eagle3_dir_problem(str(tmp_path / ("x" * 300) / "results"))


def test_nothing_can_be_created_in_proc():
    assert eagle3_dir_problem("/proc/eagle3-results").startswith("nothing can be created in /proc")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory mode")
def test_a_directory_without_write_permission(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    assert eagle3_dir_problem(str(locked / "results")).startswith(f"nothing can be created in {locked}")


@pytest.mark.parametrize("path", ["", "  ", None, 3])
def test_empty_or_not_text(path):
    assert eagle3_dir_problem(path) == "it is empty"


@pytest.mark.parametrize(("argv", "found"), [
    (["ansible-playbook", "site.yml", "-e", f"eagle3_hf_token={TOKEN}"], ["eagle3_hf_token"]),
    (["ansible-playbook", "-e", json.dumps({"eagle3_hf_token": TOKEN}), "site.yml"], ["eagle3_hf_token"]),
    (["ansible-playbook", f"--extra-vars=vllm_service_hf_token={TOKEN} eagle3_port=8000", "site.yml"], ["vllm_service_hf_token"]),
    (["ansible-playbook", f"-emodel_assets_hf_token={TOKEN}", "site.yml"], ["model_assets_hf_token"]),
    (["ansible-playbook", "--extra-vars", "eagle3_hf_token: " + TOKEN, "site.yml"], ["an hf_ token"]),  # YAML without braces
    (["ansible-playbook", "-e", "hf=" + TOKEN, "site.yml"], ["an hf_ token"]),  # token-shaped, under another name
    (["ansible-playbook", "-e", json.dumps({"eagle3_hf_token": ""}), "site.yml"], []),  # empty: nothing given
    (["ansible-playbook", "-e", "@vault.yml", "site.yml"], []),  # a file: not on the command line
    (["ansible-playbook", "-e", "eagle3_port=8000", "site.yml"], []),
    (["ansible-playbook", "-e", "{not json", "site.yml"], []),
])
def test_secrets_given_on_the_command_line(argv, found):
    assert eagle3_cli_secrets(NAMES, argv) == found


def test_the_own_command_line_is_read_when_none_is_given():
    assert eagle3_cli_secrets(NAMES) == []  # pytest is not ansible-playbook: nothing found, no error
