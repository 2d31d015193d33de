"""Shared fixtures: result JSON fetched from real rehearsal runs (see tests/fixtures/README.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(ROOT / "plugins" / "filter"))
sys.path.insert(0, str(ROOT / "scripts"))


def load_run(name: str) -> dict[str, dict]:
    """{profile: result} for one fixture run directory (completions files left out)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted((FIXTURES / name).glob("*.json"))
            if not p.name.endswith(".completions.json")}


@pytest.fixture
def agree_run() -> dict[str, dict]:
    return load_run("rehearsal-agree")
