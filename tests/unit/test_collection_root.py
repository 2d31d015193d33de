"""The collection finds its own files through one resolution (plugins/module_utils/collection.py, collection_root():
where Python imported ansible_collections.eagle3.trn2 from), never by climbing directories from a file: no
`Path(__file__).parents[N]` in its Python, no `role_path ~ '/../..'` in its YAML. An installed copy resolves to itself
(tests/integration/test_collection.py: its provenance)."""
from __future__ import annotations

import re

from conftest import ROOT

from ansible_collections.eagle3.trn2.plugins.module_utils.collection import collection_root

CLIMB = re.compile(r"parents\[\d+\]|\.parent\.parent|\.\./\.\./")


def test_the_checkout_link_resolves_to_the_checkout():
    assert collection_root() == ROOT.resolve()
    assert (collection_root() / "galaxy.yml").is_file()


def test_no_file_of_the_collection_climbs_to_find_another():
    files = [p for place in ("plugins", "roles", "playbooks", "templates") for p in (ROOT / place).rglob("*")
             if p.suffix in (".py", ".yml", ".yaml", ".j2") and p.is_file()]
    climbs = [f"{p.relative_to(ROOT)}:{n}" for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
              if CLIMB.search(line) and not line.lstrip().startswith("#")]
    assert not climbs, climbs
