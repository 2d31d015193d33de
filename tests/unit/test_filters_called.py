"""The collection registers only filters its YAML calls: each name a plugins/filter/*.py FilterModule.filters() returns
is used in a template of the collection's YAML or Jinja (roles, playbooks, templates, inventories, group_vars,
molecule, the settings schema's defaults), as `eagle3.trn2.<name>` or, under `collections:`, as `| <name>`. A function
only Python calls (eagle3_report's helpers, what tests call directly) stays a function, unregistered."""
from __future__ import annotations

import importlib
import re

from conftest import ROOT

# Where the collection's YAML and Jinja live (tests/ is not the collection: its playbooks do not count).
PLACES = ("roles", "playbooks", "templates", "inventories", "group_vars", "molecule", "plugins")


def registered() -> dict[str, str]:
    """Filter name -> the file stem that registers it."""
    names = {}
    for path in sorted((ROOT / "plugins/filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.eagle3.trn2.plugins.filter.{path.stem}")
        names.update(dict.fromkeys(module.FilterModule().filters(), path.stem))
    return names


def yaml_text() -> str:
    """Every YAML and Jinja file of the collection, comment lines left out."""
    files = [p for p in ROOT.glob("*.yml")]
    for place in PLACES:
        files += [p for p in (ROOT / place).rglob("*") if p.suffix in (".yml", ".yaml", ".j2") and p.is_file()]
    return "\n".join(line for path in files for line in path.read_text().splitlines()
                     if not line.lstrip().startswith("#"))


def test_every_registered_filter_has_a_yaml_caller():
    text = yaml_text()
    uncalled = sorted(f"{stem}: {name}" for name, stem in registered().items()
                      if not re.search(rf"(eagle3\.trn2\.|\|\s*){re.escape(name)}\b", text))
    assert not uncalled, f"registered filters no YAML calls (unregister them; Python imports the function): {uncalled}"


def test_every_filter_file_registers_a_filter():
    """The preload (plugins/callback/preload.py) loads each filter file through its first filter; a file that registers
    none belongs in module_utils."""
    stems = set(registered().values())
    assert stems == {p.stem for p in (ROOT / "plugins/filter").glob("*.py")}
