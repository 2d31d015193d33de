"""The controller's pip requirements per Python (requirements.txt, requirements-dev.txt, requirements-collection.txt):
the PEP 508 markers, evaluated with `packaging` the way pip evaluates them, give a Python 3.11 controller ansible 12.3.0
with ansible-core 2.19.14 (2.20+ needs Python >= 3.12) and a Python 3.12+ controller ansible 14.5.0 with ansible-core
2.21.5; every line is an exact pin and no package is pinned twice for one Python. No Ansible process runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
FILES = ("requirements.txt", "requirements-dev.txt", "requirements-collection.txt")
# (python_version, python_full_version): the controllers this project runs on (Debian bookworm's 3.11, the pyenv
# 3.12.1 and 3.13.0, Debian trixie's 3.13) and the next Python, which must get the newer line too.
PYTHONS = [("3.11", "3.11.2"), ("3.11", "3.11.7"), ("3.12", "3.12.1"), ("3.13", "3.13.0"), ("3.13", "3.13.5"),
           ("3.14", "3.14.0")]
OLD = {"ansible": "12.3.0", "ansible-core": "2.19.14"}
NEW = {"ansible": "14.5.0", "ansible-core": "2.21.5"}


def lines(name: str, seen: tuple[str, ...] = ()) -> list[tuple[str, int, str]]:
    """(file, line number, requirement text) of a requirements file, its `-r` includes expanded in place."""
    assert name not in seen, f"{name} includes itself through {' -> '.join(seen)}"
    out = []
    for number, raw in enumerate((ROOT / name).read_text().splitlines(), 1):
        text = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not text:
            continue
        include = re.fullmatch(r"-r\s+(\S+)", text)
        if include:
            out += lines(include.group(1), (*seen, name))
            continue
        assert not text.startswith("-"), f"{name}:{number}: {text!r}: only requirements and -r lines are expected"
        out.append((name, number, text))
    return out


def environment(version: str, full: str) -> dict[str, str]:
    return {**default_environment(), "python_version": version, "python_full_version": full,
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "sys_platform": "linux",
            "platform_system": "Linux", "os_name": "posix"}


def pins(name: str, version: str, full: str) -> dict[str, str]:
    """{canonical name: version} that pip installs from the file for that Python; refuses a second pin of a name."""
    env = environment(version, full)
    out: dict[str, str] = {}
    where: dict[str, str] = {}
    for path, number, text in lines(name):
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        key = canonicalize_name(req.name)
        assert key not in out, f"{key} pinned twice for Python {full}: {where[key]} and {path}:{number}"
        (spec,) = req.specifier
        out[key], where[key] = spec.version, f"{path}:{number}"
    return out


@pytest.mark.parametrize("name", FILES)
def test_every_line_is_an_exact_pin(name):
    for path, number, text in lines(name):
        req = Requirement(text)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version, \
            f"{path}:{number}: {text!r} is not an exact pin (name==version)"
        assert not req.url, f"{path}:{number}: {text!r} installs from a URL"


@pytest.mark.parametrize(("version", "full"), PYTHONS)
@pytest.mark.parametrize("name", FILES)
def test_no_package_is_pinned_twice_for_one_python(name, version, full):
    pins(name, version, full)  # asserts on a second pin


@pytest.mark.parametrize(("version", "full"), PYTHONS)
def test_each_python_gets_the_ansible_it_supports(version, full):
    want = OLD if version == "3.11" else NEW
    for name in ("requirements.txt", "requirements-dev.txt"):
        got = pins(name, version, full)
        assert {k: got.get(k) for k in want} == want, f"{name} on Python {full}"


def test_the_two_lines_differ_only_in_ansible():
    """The markers choose Ansible and nothing else: the test tools and the collection's own dependencies are the same
    pins on both Pythons, so both controllers run the same suite."""
    old, new = pins("requirements-dev.txt", "3.11", "3.11.7"), pins("requirements-dev.txt", "3.13", "3.13.0")
    assert {k: v for k, v in old.items() if k not in OLD} == {k: v for k, v in new.items() if k not in NEW}


def test_the_collection_requirements_carry_no_ansible_and_no_marker():
    """requirements-collection.txt goes into any execution environment (meta/execution-environment.yml), whose
    ansible-core comes from its own definition."""
    for path, number, text in lines("requirements-collection.txt"):
        req = Requirement(text)
        assert canonicalize_name(req.name) not in {"ansible", "ansible-core"}, f"{path}:{number}"
        assert req.marker is None, f"{path}:{number}: {text!r}"


def test_the_execution_environment_pins_the_ansible_core_of_its_python():
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())["dependencies"]
    python = re.fullmatch(r"/usr/bin/python(3\.\d+)", ee["python_interpreter"]["python_path"])
    assert python, ee["python_interpreter"]["python_path"]
    want = pins("requirements.txt", python.group(1), python.group(1) + ".0")["ansible-core"]
    assert ee["ansible_core"]["package_pip"] == f"ansible-core=={want}"
