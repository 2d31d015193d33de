"""The house (issue 36, item 7): no plugin imports another plugin file's private name; what plugins share lives in
plugins/module_utils. Read from the plugins' own import statements (ast), so an import spread over lines counts."""
from __future__ import annotations

import ast

from conftest import ROOT

PLUGIN_KINDS = ("action", "callback", "filter", "lookup", "modules")


def test_no_plugin_imports_another_plugin_files_private_name():
    found = []
    for path in sorted((ROOT / "plugins").glob("*/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ansible_collections.eagle3"):
                kind = node.module.split(".")[4] if len(node.module.split(".")) > 4 else ""
                private = [a.name for a in node.names if a.name.startswith("_")]
                if kind in PLUGIN_KINDS and private:
                    found.append(f"{path.relative_to(ROOT)}: {node.module} {private}")
    assert found == []
