"""The execution environment of eagle3.trn2 (execution-environment.yml, ansible-builder 3.2.0, schema 3).

`ansible-builder create` writes the build context (context/Containerfile and context/_build/: the copied
requirements.yml, requirements.txt, bindep.txt and ansible-builder's scripts); these tests check it.
`ansible-builder build` is not run: it pulls the base image from quay.io, which this machine cannot reach.
The collection-level meta/execution-environment.yml is checked the way ansible-builder reads it when another
execution environment installs the collection (`ansible-builder introspect` over an installed copy).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EE = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())


def run(*argv: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)


def requirements(text: str, python: str | None = None) -> dict[str, Requirement]:
    """{name: requirement} of a pip requirements text (comments and blank lines skipped, no -r); with python (a
    python_version such as "3.12"), only the lines whose markers hold for that Python."""
    lines = [re.sub(r"(^|\s)#.*$", "", line).strip() for line in text.splitlines()]
    reqs = [Requirement(line) for line in lines if line]
    if python is not None:
        env = {**default_environment(), "python_version": python, "python_full_version": f"{python}.0"}
        reqs = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
    return {r.name.lower(): r for r in reqs}


def pin(req: Requirement) -> str:
    (spec,) = list(req.specifier)
    assert spec.operator == "==", f"{req} is not an exact pin"
    return spec.version


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("ee")
    out = work / "context"
    proc = run("ansible-builder", "create", "-f", str(ROOT / "execution-environment.yml"), "-c", str(out),
               "--output-filename", "Containerfile", "-v", "3", cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Complete! The build context can be found at" in proc.stdout
    return out


@pytest.fixture(scope="module")
def containerfile(context) -> list[str]:
    return (context / "Containerfile").read_text().splitlines()


def test_the_definition_is_schema_3_on_the_documented_base_image():
    assert EE["version"] == 3
    assert EE["images"]["base_image"]["name"] == "quay.io/centos/centos:stream9"
    text = (ROOT / "execution-environment.yml").read_text()
    assert "cannot reach container registries" in text  # the file says why the image was never built here


def test_build_context_layout(context):
    build = context / "_build"
    assert (context / "Containerfile").is_file()
    assert {p.name for p in build.iterdir()} == {"requirements.yml", "requirements.txt", "bindep.txt", "scripts"}
    assert {p.name for p in (build / "scripts").iterdir()} == {
        "assemble", "check_ansible", "check_galaxy", "entrypoint", "install-from-bindep", "introspect.py", "pip_install"}
    # ansible-builder copies the definition's files unchanged under their standard names
    assert (build / "requirements.txt").read_bytes() == (ROOT / EE["dependencies"]["python"]).read_bytes()
    assert (build / "bindep.txt").read_bytes() == (ROOT / EE["dependencies"]["system"]).read_bytes()
    assert (build / "requirements.yml").read_bytes() == (ROOT / EE["dependencies"]["galaxy"]).read_bytes()


def test_containerfile_installs_the_python_and_system_requirements(containerfile):
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.12"' in containerfile
    assert 'ARG PYPKG="python3.12"' in containerfile
    # builder stage: the collection's Python and bindep files go to introspect, then assemble builds the wheels
    # and lists the system packages
    assert "COPY _build/requirements.txt requirements.txt" in containerfile
    assert "COPY _build/bindep.txt bindep.txt" in containerfile
    introspect = [line for line in containerfile if "introspect.py introspect" in line]
    assert len(introspect) == 1
    assert "--user-pip=requirements.txt" in introspect[0] and "--user-bindep=bindep.txt" in introspect[0]
    assert containerfile.index(introspect[0]) < containerfile.index("RUN /output/scripts/assemble")
    # final stage: the system packages and the wheels are installed
    final = containerfile[containerfile.index("FROM base AS final"):]
    assert "RUN /output/scripts/install-from-bindep && rm -rf /output/wheels" in final
    assert "RUN /output/scripts/check_ansible $PYCMD" in final
    assert "LABEL ansible-execution-environment=true" in final


def test_containerfile_installs_the_pinned_collections_and_ansible_core(containerfile):
    galaxy = containerfile[containerfile.index("FROM base AS galaxy"):containerfile.index("FROM base AS builder")]
    assert any(line.startswith("RUN ") and "ansible-galaxy collection install" in line
               and "-r requirements.yml" in line and '--collections-path "/usr/share/ansible/collections"' in line
               for line in galaxy)
    refs = next(line for line in containerfile if line.startswith("ARG ANSIBLE_INSTALL_REFS="))
    controller = requirements((ROOT / "requirements.txt").read_text().replace("-r requirements-collection.txt", ""),
                              python="3.12")
    # the image runs the ansible-core the suite runs on its Python (requirements.txt's pin for Python 3.12, the same
    # in the definition)
    assert f"ansible-core=={pin(controller['ansible-core'])}" in refs.split('"')[1].split()
    assert any(ref.startswith("ansible-runner==") for ref in refs.split('"')[1].split())
    assert "RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS" in containerfile


def test_galaxy_requirements_pin_every_collection_dependency_within_its_range(context):
    pinned = {c["name"]: c["version"] for c in yaml.safe_load((context / "_build/requirements.yml").read_text())["collections"]}
    for name, spec in GALAXY["dependencies"].items():
        assert name in pinned, f"{name} (galaxy.yml dependencies) is not in the image's requirements.yml"
        assert Version(pinned[name]) in SpecifierSet(spec), f"{name} {pinned[name]} is outside {spec}"


def test_python_requirements_are_the_collections_and_exclude_ansible(context):
    reqs = requirements((context / "_build/requirements.txt").read_text())
    assert {"boto3", "botocore", "jinja2", "packaging"} <= set(reqs)
    assert not {"ansible", "ansible-core"} & set(reqs)  # ansible-core comes pinned through ansible_core
    assert all(pin(r) for r in reqs.values())
    # the controller venv installs the same file (requirements.txt includes it), so the image runs what the suite runs
    assert "-r requirements-collection.txt" in (ROOT / "requirements.txt").read_text().splitlines()


def test_bindep_names_the_ssh_client_git_and_tar_on_both_families(context):
    from bindep.depends import Depends

    depends = Depends((context / "_build/bindep.txt").read_text())
    rpm = {rule[0] for rule in depends.active_rules(["platform:rpm", "platform:centos", "platform:redhat"])}
    dpkg = {rule[0] for rule in depends.active_rules(["platform:dpkg", "platform:debian", "platform:ubuntu"])}
    assert rpm == {"openssh-clients", "git", "tar"}
    assert dpkg == {"openssh-client", "git", "tar"}


def test_an_environment_that_installs_the_collection_gets_its_dependencies(installed, tmp_path):
    """meta/execution-environment.yml as ansible-builder reads it from an installed copy (its introspect step)."""
    meta = yaml.safe_load((ROOT / "meta/execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": EE["dependencies"]["python"], "system": EE["dependencies"]["system"]}
    proc = run("ansible-builder", "introspect", "--sanitize", str(installed), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(proc.stdout)
    python = [line.split("#")[0].strip() for line in data["python"] if line.endswith("# from collection eagle3.trn2")]
    system = [line.split("#")[0].strip() for line in data["system"] if line.endswith("# from collection eagle3.trn2")]
    assert set(requirements("\n".join(python))) == set(requirements((ROOT / "requirements-collection.txt").read_text()))
    assert "openssh-clients [platform:rpm]" in system and "git [platform:dpkg platform:rpm]" in system
