"""The house (a plugin can change its private names without breaking another): no plugin imports another plugin file's
private name; what plugins share lives in plugins/module_utils. Read from the plugins' own import statements (ast), so
an import spread over lines counts.

A private name is one starting with "_" (not a dunder). Each of these, from one file of plugins/ (module_utils and its
packages included) into another, is an import of it:
- `from <module> import _name` and `from <module> import _name as other`, with <module> absolute
  (ansible_collections.eagle3.trn2.plugins.<kind>.<file>) or relative (`from .compare import _name`,
  `from ..module_utils.numbers import _name`);
- `import <module> [as m]` or `from <package> import <file> [as m]`, then `m._name` (or the whole dotted path `._name`).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PREFIX = "ansible_collections.eagle3.trn2"


def module_of(path: Path) -> str:
    """The dotted name Ansible loads a plugin file as: ansible_collections.eagle3.trn2.plugins.<kind>.<file>."""
    return ".".join([PREFIX, *path.relative_to(ROOT).with_suffix("").parts])


def is_project_module(dotted: str) -> bool:
    """A file of the collection's plugins/ (not a package, not another collection)."""
    if not dotted.startswith(PREFIX + ".plugins."):
        return False
    return (ROOT / Path(*dotted[len(PREFIX) + 1:].split("."))).with_suffix(".py").is_file()


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def dotted(node: ast.AST) -> str | None:
    """a.b.c of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def private_imports(source: str, module: str) -> list[str]:
    """Each import of another plugin file's private name in `source`, the file loaded as `module`."""
    tree = ast.parse(source)
    package = module.rsplit(".", 1)[0]
    found: list[str] = []
    bound: dict[str, str] = {}  # a local name -> the plugin module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source_module = f"{base}.{node.module}" if node.module else base
            else:
                source_module = node.module or ""
            for alias in node.names:
                whole = f"{source_module}.{alias.name}"
                if is_project_module(whole):  # from <package> import <file> [as m]
                    bound[alias.asname or alias.name] = whole
                elif is_project_module(source_module) and source_module != module and private(alias.name):
                    found.append(f"from {source_module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if is_project_module(alias.name):
                    bound[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            path = dotted(node.value)
            if path is None:
                continue
            head, _, rest = path.partition(".")
            target = bound.get(path) or (f"{bound[head]}.{rest}" if head in bound and rest else None) or path
            if is_project_module(target) and target != module:
                found.append(f"{target}.{node.attr}")
    return sorted(set(found))


def test_no_plugin_imports_another_plugin_files_private_name():
    found = []
    # rglob: the packages of plugins/module_utils too (one file of a package importing another's private name)
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        found += [f"{path.relative_to(ROOT)}: {what}" for what in private_imports(path.read_text(), module_of(path))]
    assert found == []


HERE = f"{PREFIX}.plugins.filter.report"


@pytest.mark.parametrize("source", [
    f"from {PREFIX}.plugins.filter.compare import _pct\n",
    f"from {PREFIX}.plugins.filter.compare import (\n    eagle3_compare,\n    _pct as pct,\n)\n",
    f"from {PREFIX}.plugins.module_utils.settings.settings import _resolve\n",
    "from .compare import _pct\n",
    "from ..module_utils.settings.settings import _resolve as resolve\n",
    f"import {PREFIX}.plugins.filter.compare as compare\nx = compare._pct\n",
    f"import {PREFIX}.plugins.filter.compare\nx = {PREFIX}.plugins.filter.compare._pct(1)\n",
    f"from {PREFIX}.plugins.filter import compare\ncompare._pct(1)\n",
    f"from {PREFIX}.plugins.module_utils.settings import settings as S\nS._resolve({{}})\n",
    "from . import compare as c\nc._pct(1)\n",
], ids=["from", "from-as-multiline", "module_utils", "relative", "relative-up-as", "import-as", "import-dotted",
        "from-package", "from-package-as", "relative-package"])
def test_each_form_of_a_private_import_is_found(source):
    assert private_imports(source, HERE) != [], source


@pytest.mark.parametrize("source", [
    f"from {PREFIX}.plugins.filter.compare import eagle3_compare\n",
    f"from {PREFIX}.plugins.module_utils.settings import schema as _schema\n_schema.plain(1)\n",  # a private alias, public names
    "from __future__ import annotations\n",
    f"from {PREFIX}.plugins.filter.report import _own\n",  # its own file
    "import json\njson._default_decoder\n",  # not the collection's
    "from ansible.plugins.filter.core import _something\n",
    f"from {PREFIX}.plugins.filter import compare\ncompare.__name__\n",  # a dunder is not private
    "self._templar.template(x)\n",
], ids=["public", "private-alias", "future", "own-file", "stdlib", "ansible", "dunder", "self"])
def test_what_is_not_a_private_import_is_not_found(source):
    assert private_imports(source, HERE) == [], source
