"""The molecule scenarios' one shared base config: .config/molecule/config.yml holds what they share, each
molecule/<scenario>/molecule.yml only what is its own (merged over the base by molecule; tests/conftest.py's
molecule_config)."""
from __future__ import annotations

import pytest
import yaml

from conftest import ROOT, molecule_config

BASE = ROOT / ".config/molecule/config.yml"
SCENARIOS = sorted(p.parent.name for p in ROOT.glob("molecule/*/molecule.yml"))


def test_molecule_finds_the_base_config_from_the_checkout(monkeypatch):
    """molecule's default --base-config: .config/molecule/config.yml at the VCS root of the working directory (a git
    worktree's .git file counts), looked up as its shell module does when it starts."""
    from molecule.shell import LOCAL_CONFIG_SEARCH
    from molecule.util import lookup_config_file

    monkeypatch.chdir(ROOT / "molecule")
    assert lookup_config_file(LOCAL_CONFIG_SEARCH) == str(BASE)


def _leaves(data: dict, path: tuple = ()):
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key), value


def _at(data, path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return KeyError
        data = data[key]
    return data


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_file_holds_only_its_own(scenario):
    """Nothing the base config already sets, with the same value, again in a scenario's file; and its own hosts
    (the base has no platforms: a scenario without them would have none)."""
    base = yaml.safe_load(BASE.read_text())
    own = yaml.safe_load((ROOT / f"molecule/{scenario}/molecule.yml").read_text())
    assert "platforms" not in base
    assert molecule_config(scenario)["platforms"]
    repeated = [".".join(path) for path, value in _leaves(own) if _at(base, path) == value]
    assert not repeated, f"molecule/{scenario}/molecule.yml repeats the base config: {repeated}"
