"""Adding a Neuron release is one command (no value typed by hand): scripts/neuron_release.py reads AWS's release
manifest and writes the row; the neuron scenario's fixture repositories follow the rows. The manifest is the committed
excerpt of aws-neuron-sdk src/helperscripts/n2-manifest.json (tests/fixtures/README.md); a new release is made from it
by changing versions, as a later manifest would."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "molecule/neuron/files"))
import build_fixtures  # noqa: E402
import neuron_release  # noqa: E402

EXCERPT = ROOT / "tests/fixtures/n2-manifest-2.32.0-excerpt.json"
ROWS_FILE = ROOT / "roles/settings/defaults/main/neuron_releases.yml"
ROWS = yaml.safe_load(ROWS_FILE.read_text())["eagle3_neuron_releases"]
SCRIPT = ROOT / "scripts/neuron_release.py"


def overrides_of(row: dict) -> list[str]:
    """The committed row's overrides as the script's arguments."""
    args = []
    for name, value in row.get("overrides", {}).items():
        if name in ("libtorch-neuronx-lite", "vllm-neuron"):
            args += [f"--{name}", value["version"]]
        else:
            args += ["--constraint", f"{name}=={value['version']}"]
        args += ["--source-of", f"{name}={value['source']}"]
    return args


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_the_232_row_regenerated_from_the_manifest_reproduces_every_manifest_derived_field():
    proc = run(str(EXCERPT), "--release", "2.32.0", *overrides_of(ROWS["2.32.0"]))
    assert proc.returncode == 0, proc.stderr
    regenerated = yaml.safe_load("eagle3_neuron_releases:\n" + proc.stdout)["eagle3_neuron_releases"]["2.32.0"]
    committed = ROWS["2.32.0"]
    for field in ("deb", "pip", "constraints", "python", "dlami", "overrides", "verified"):
        assert regenerated[field] == committed[field], field
    for field in ("release", "manifest_version", "manifest_date"):
        assert regenerated["manifest"][field] == committed["manifest"][field], field
    # The values AWS's own builds name for this release (neuron-facts.md, verified-upstream.md).
    assert committed["deb"]["aws-neuronx-runtime-lib"] == "2.34.10.0" and "vllm-neuron==0.24.0.1.1.0" in committed["pip"]
    assert committed["dlami"]["venv"] == "/opt/aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0"


def test_an_ambiguous_or_unsourced_value_is_refused_by_name():
    two = run(str(EXCERPT), "--release", "2.32.0")
    assert two.returncode == 2 and "2 libtorch-neuronx-lite version(s) for trn2 (2.11.0.1.0.1284, 2.12.0.1.0.1284)" in two.stderr
    unsourced = run(str(EXCERPT), "--release", "2.32.0", "--libtorch-neuronx-lite", "2.11.0.1.0.1284")
    assert unsourced.returncode == 2 and "--source-of libtorch-neuronx-lite=TEXT" in unsourced.stderr
    missing = run(str(EXCERPT), "--release", "2.34.0")
    assert missing.returncode == 2 and "release 2.34.0: not in the manifest (its releases: 2.32.0" in missing.stderr
    assert run("http://example.invalid/n2.json", "--release", "2.34.0").stderr.strip().endswith("only a path or an https URL")


def manifest_with(release: str, versions: dict[str, str]) -> dict:
    """The excerpt as a later manifest: the 2.32.0 entry under another release, with other versions."""
    manifest = json.loads(EXCERPT.read_text())
    entry = copy.deepcopy(manifest["neuron_releases"][0])
    entry["neuron_version"] = release
    entry["packages"] = [p for p in entry["packages"]
                         if not (p["name"] == "libtorch_neuronx_lite" and p["version"].startswith("2.12"))]
    for package in entry["packages"]:
        name = neuron_release.canonical(package["name"])
        if name in versions:
            package["version"] = versions[name]
    manifest["neuron_releases"].insert(0, entry)
    manifest["manifest_version"] = release
    return manifest


VERSIONS = st.lists(st.integers(0, 99999), min_size=2, max_size=6).map(lambda parts: ".".join(map(str, parts)))
NAMES = list(neuron_release.DEBS) + list(neuron_release.PIPS) + ["libtorch-neuronx-lite"]


@settings(max_examples=25, deadline=None)
@given(release=st.tuples(st.integers(2, 9), st.integers(0, 99), st.integers(0, 9)).map(lambda t: "%d.%d.%d" % t),
       versions=st.fixed_dictionaries({name: VERSIONS for name in NAMES}))
def test_any_new_release_is_written_as_one_row_the_others_unchanged(tmp_path_factory, release, versions):
    """Whatever versions a later manifest names, --write adds (or replaces) exactly that release's row: the file stays
    valid, its other rows and comments are unchanged, the row pins what the manifest says and says it is unverified,
    writing again changes nothing, and the fixture repositories then hold every package of the row."""
    base = tmp_path_factory.mktemp("release")
    manifest = base / "n2-manifest.json"
    manifest.write_text(json.dumps(manifest_with(release, versions)))
    rows_file = base / "neuron_releases.yml"
    rows_file.write_text(ROWS_FILE.read_text())
    args = [str(manifest), "--release", release, "--constraint", "islpy==2026.1", "--source-of", "islpy=the 2.32.0 row",
            "--write", "--rows", str(rows_file)]
    assert neuron_release.main(args) == 0
    once = rows_file.read_text()
    assert neuron_release.main(args) == 0 and rows_file.read_text() == once
    written = yaml.safe_load(once)
    rows = written["eagle3_neuron_releases"]
    for other, row in ROWS.items():
        if other != release:
            assert rows[other] == row
    assert [line for line in once.splitlines() if line.startswith("#")] == \
        [line for line in ROWS_FILE.read_text().splitlines() if line.startswith("#")]
    row = rows[release]
    assert row["verified"] is False and row["deb"] == {name: versions[name] for name in neuron_release.DEBS}
    assert row["pip"] == [f"{name}=={versions[name]}" for name in neuron_release.PIPS]
    assert row["constraints"] == [f"libtorch-neuronx-lite=={versions['libtorch-neuronx-lite']}", "islpy==2026.1"]
    assert row["dlami"]["venv"] == "/opt/aws_neuronx_venv_pytorch_inference_vllm_" + versions["vllm-neuron"].replace(".", "_")
    debs, wheels = copy.deepcopy(build_fixtures.DEBS), copy.deepcopy(build_fixtures.WHEELS)
    build_fixtures.add_rows(rows, debs, wheels)
    for name, version in row["deb"].items():
        assert debs[release][name].startswith(version + "-") and len(debs[release][name]) == len(version) + 10
    for pin in row["pip"] + row["constraints"]:
        name, version = pin.split("==")
        assert any(v.split("+")[0] == version for v in wheels[name]), pin


def test_the_fixture_repositories_hold_every_committed_row_with_the_real_suffixes_kept():
    debs, wheels = copy.deepcopy(build_fixtures.DEBS), copy.deepcopy(build_fixtures.WHEELS)
    build_fixtures.add_rows(ROWS, debs, wheels)
    # The committed rows are all in the tables already: the scenario's repositories are unchanged by the rows.
    assert debs == build_fixtures.DEBS and wheels == build_fixtures.WHEELS
    assert debs["2.32.0"]["aws-neuronx-runtime-lib"] == "2.34.10.0-ac18d186d"  # AWS's own build names this one


@pytest.mark.parametrize("bad", ["2.34", "v2.34.0", "2.34.0\n"])
def test_a_release_that_is_not_a_version_is_refused(bad):
    proc = run(str(EXCERPT), "--release", bad)
    assert proc.returncode == 2 and "--release" in proc.stderr


NOTES = ROOT / "tests/fixtures/release-notes-2.33.1.rst"


def call(*args: str) -> subprocess.CompletedProcess:
    """The script's main in this process (as `run` gives it: exit status, stdout, stderr), a unit test's cost."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = neuron_release.main(list(args))
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_2331_patch_row_regenerated_from_its_release_notes_is_the_committed_row():
    """AWS's notes of 2.33.1 list the packages it updates; the row is 2.33.0's with those versions, its fixes kept."""
    committed = ROWS["2.33.1"]
    proc = call("--notes", str(NOTES), "--release", "2.33.1", "--source-of",
               "notes=" + committed["manifest"]["source"].rsplit(" (sha256", 1)[0])
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load("eagle3_neuron_releases:\n" + proc.stdout)["eagle3_neuron_releases"]["2.33.1"] == committed
    base = ROWS["2.33.0"]
    assert committed["patch"]["of"] == "2.33.0" and committed["patch"]["released"] == "2026-11-11"
    assert committed["deb"] == {**base["deb"], "aws-neuronx-dkms": "2.31.8.0", "aws-neuronx-runtime-lib": "2.35.33.0",
                                "aws-neuronx-collectives": "2.35.49.0"}
    assert committed["pip"] == base["pip"] and committed["verified"] is False
    assert any("race condition" in fix and "hang the TPB AXI fabric." in fix for fix in committed["patch"]["fixes"])
    assert not any("no functional change" in fix for fix in committed["patch"]["fixes"])  # the rebuilds are no fix


def notes_of(release: str, base: str, packages: dict[str, list[str]]) -> str:
    """The 2.33.1 notes as another patch's would be: its release, base and package list changed."""
    text = NOTES.read_text().replace("2.33.1", release).replace("2.33.0", base)
    head = text.split("Neuron " + release + " updates the following packages.")[0]
    listed = "".join(f"* ``{name}``: {', '.join(versions[:-1]) + ', and ' + versions[-1] if len(versions) > 1 else versions[0]}\n"
                     for name, versions in packages.items())
    return head + f"Neuron {release} updates the following packages. All other packages are the same as in Neuron {base}.\n\n" + listed


@settings(max_examples=20, deadline=None)
@given(patch=st.integers(1, 9), versions=st.fixed_dictionaries({name: VERSIONS for name in list(neuron_release.DEBS)[:3]}),
       torch_build=st.integers(1000, 9999))
def test_any_patch_of_the_232_row_changes_only_what_its_notes_list(tmp_path_factory, patch, versions, torch_build):
    """A patch of 2.32.0 whose notes update debs and list libtorch_neuronx_lite for three torch versions: the row is
    2.32.0's with exactly those debs changed, the lite pin moved to the build on its own torch line (2.11), the other
    pins and the DLAMI unchanged; written beside the others, it leaves them as they were."""
    release = f"2.32.{patch}"
    lite = [f"2.{t}.0.1.0.{torch_build}" for t in (11, 12, 13)]
    base_dir = tmp_path_factory.mktemp("patch")
    notes = base_dir / "notes.rst"
    listed = {name: [version] for name, version in versions.items()}
    notes.write_text(notes_of(release, "2.32.0", {**listed, "libtorch_neuronx_lite": lite, "nrtpy": ["2.34.99"]}))
    rows_file = base_dir / "neuron_releases.yml"
    rows_file.write_text(ROWS_FILE.read_text())
    assert neuron_release.main(["--notes", str(notes), "--release", release, "--write", "--rows", str(rows_file)]) == 0
    rows = yaml.safe_load(rows_file.read_text())["eagle3_neuron_releases"]
    row, base = rows[release], ROWS["2.32.0"]
    assert row["deb"] == {**base["deb"], **versions}
    assert row["constraints"] == [f"libtorch-neuronx-lite==2.11.0.1.0.{torch_build}"] + base["constraints"][1:]
    assert row["overrides"]["libtorch-neuronx-lite"]["version"] == f"2.11.0.1.0.{torch_build}"
    assert row["pip"] == base["pip"] and row["dlami"] == base["dlami"] and row["python"] == base["python"]
    assert row["patch"]["of"] == "2.32.0" and row["patch"]["not_pinned"] == ["nrtpy 2.34.99"]
    assert {k: v for k, v in rows.items() if k != release} == ROWS


@pytest.mark.parametrize(("change", "why"), [
    (lambda t: t.replace("**Release Date**", "Date"), "no '**Release Date**: Month D, YYYY'"),
    (lambda t: t.replace("All other packages are the same as in Neuron 2.33.0.", ""), "are they a patch release's notes?"),
    (lambda t: t.replace("same as in Neuron 2.33.0", "same as in Neuron 2.31.0"), "2.31.0, which has no row"),
    (lambda t: "\n".join(line for line in t.splitlines() if not line.startswith("* ``")), "lists no package"),
    (lambda t: t.replace("libtorch_neuronx_lite``: 2.11.0.1.0.4089, 2.12.0.1.0.4089, and 2.13.0.1.0.4089",
                         "libtorch_neuronx_lite``: 2.11.0.1.0.4089"), None),
])
def test_notes_that_do_not_say_what_a_patch_row_needs_are_refused_by_what_is_missing(tmp_path, change, why):
    notes = tmp_path / "notes.rst"
    notes.write_text(change(NOTES.read_text()))
    proc = call("--notes", str(notes), "--release", "2.33.1")
    if why is None:  # a lite pin the base row does not have: nothing to move, still a row
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 2 and why in proc.stderr, proc.stderr
    assert call("--notes", str(NOTES), "--release", "2.33.2").stderr.strip().endswith("the notes are those of 2.33.1")
    assert "one of them" in call(str(EXCERPT), "--notes", str(NOTES), "--release", "2.33.1").stderr


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=500), at=st.integers(3, 40))
def test_a_long_value_is_folded_within_the_width_and_reads_back_unchanged(text, at):
    """Sources and fixes are long sentences: folded onto lines of at most 158 characters (a word longer than a line
    stays whole), read back by YAML as the same string, whatever its spaces, quotes or escapes."""
    key = "k" * (at - 2)
    value = neuron_release.q(text, at)
    assert yaml.safe_load(f"{key}: {value}\n") == {key: text}
    for i, line in enumerate(value.splitlines()):
        width = (at if i == 0 else 0) + len(line)
        assert width <= neuron_release.WIDTH or len(re.split(r"(?<=\S) (?=\S)", line.strip())) == 1, (i, line)
