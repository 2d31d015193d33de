#!/usr/bin/env python3
"""Write a Neuron SDK release row from AWS's release manifest (so adding a release is one command).

    scripts/neuron_release.py MANIFEST --release 2.34.0 [--vllm-neuron V] [--libtorch-neuronx-lite V]
                              [--constraint NAME==V ...] [--source-of NAME=TEXT ...] [--write]
    scripts/neuron_release.py --notes RELEASE_NOTES --release 2.33.1 [--write]      (a patch release)

MANIFEST is aws-neuron/aws-neuron-sdk `src/helperscripts/n2-manifest.json` of the release (a path, or an https URL,
e.g. https://raw.githubusercontent.com/aws-neuron/aws-neuron-sdk/v2.34.0/src/helperscripts/n2-manifest.json).

From the manifest's entry for the release, for trn2 (`supported_instances`), the row takes:
  - deb: aws-neuronx-dkms, aws-neuronx-runtime-lib, aws-neuronx-collectives, aws-neuronx-tools (pinned VERSION*);
  - pip: vllm-neuron, neuronx-cc, nki (exact pins);
  - constraints: libtorch-neuronx-lite when the manifest lists one version for trn2 (2.32.0 lists two: the choice is
    an override, AWS's container for the release names it);
  - python: the Python versions the manifest gives for vllm-neuron;
  - dlami: the single-framework vLLM DLAMI's SSM prefix and venv, named after the vllm-neuron version as AWS names
    them (aws-neuron-sdk deploy/environments/dlami.rst, 2.32: /aws/service/neuron/dlami/pytorch-inference-vllm-
    0.24.0.1.1.0/ubuntu-24.04, /opt/aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0).
Values from elsewhere are overrides, each kept in the row with its source (`overrides:`): a constraint no manifest
names (--constraint: islpy, as islpy 2026.2.1 breaks neuronx-cc 2.27; transformers, as the release's DLAMI venv runs
it), the libtorch-neuronx-lite choice, a vllm-neuron version other than the manifest's.

A patch release (2.33.1) is written from AWS's release notes of it (aws-neuron-sdk `release-notes/X.Y.Z.rst`, a path
or an https URL, e.g. https://raw.githubusercontent.com/aws-neuron/aws-neuron-sdk/master/release-notes/2.33.1.rst):
they list the packages the patch updates and say "All other packages are the same as in Neuron X.Y.W", whose row
the patch row copies with the updated versions (a package listed in several versions, libtorch_neuronx_lite for each
torch, replaces the pin on the same torch line). The row's `patch:` keeps what it patches, its date and what it fixes
(the notes' "Changes in" bullets); the preflight refuses the superseded row, naming them, unless
eagle3_neuron_allow_superseded is true. Every generated row says `verified: false`: nobody has run it on a trn2 yet (docs/aws.md, "A new Neuron
release"). Without --write the row is printed; with --write it replaces (or adds) the release's row in
roles/settings/defaults/main/neuron_releases.yml, the other rows and the file's comments unchanged. The neuron scenario's fixture
repositories are built from the rows (molecule/neuron/files/build_fixtures.py), so nothing else is edited by hand.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "roles/settings/defaults/main/neuron_releases.yml"
DEBS = ("aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuronx-collectives", "aws-neuronx-tools")
PIPS = ("vllm-neuron", "neuronx-cc", "nki")
INSTANCE = "trn2"
VERSION = re.compile(r"\d+(\.\d+)+")
RELEASE = re.compile(r"\d+\.\d+\.\d+")  # a Neuron SDK release: three numbers, as the manifest spells them


class RowError(ValueError):
    pass


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_source(where: str, what: str) -> tuple[bytes, str]:
    """The bytes of a path or an https URL, and where they came from (with their sha256)."""
    if re.match(r"^https://", where):
        with urllib.request.urlopen(where, timeout=60) as answer:  # noqa: S310 (https only)
            data = answer.read()
    elif re.match(r"^[a-z]+://", where):
        raise RowError(f"{what} {where}: only a path or an https URL")
    else:
        data = Path(where).read_bytes()
    return data, f"{where} (sha256 {hashlib.sha256(data).hexdigest()[:16]})"


def read_manifest(where: str) -> tuple[dict[str, Any], str]:
    """The manifest and where it came from (path or URL, with its sha256)."""
    data, source = read_source(where, "manifest")
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise RowError(f"manifest {where}: not JSON ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("neuron_releases"), list):
        raise RowError(f"manifest {where}: no neuron_releases list (is it n2-manifest.json?)")
    return manifest, source


def trn2_versions(entry: dict[str, Any]) -> dict[str, list[str]]:
    """Package (canonical name) -> its versions for trn2 in one release entry, in the manifest's order."""
    found: dict[str, list[str]] = {}
    for package in entry.get("packages") or []:
        if INSTANCE in (package.get("supported_instances") or []):
            found.setdefault(canonical(str(package.get("name", ""))), []).append(str(package.get("version", "")))
    return found


def python_versions(entry: dict[str, Any], name: str) -> list[str]:
    for package in entry.get("packages") or []:
        if canonical(str(package.get("name", ""))) == name and INSTANCE in (package.get("supported_instances") or []):
            return [str(v) for v in package.get("supported_python_versions") or []]
    return []


def one(found: dict[str, list[str]], name: str, release: str, override: str | None = None) -> str:
    versions = found.get(name, [])
    if override:
        return override
    if len(versions) != 1:
        raise RowError(f"release {release}: the manifest lists {len(versions) or 'no'} {name} version(s) for {INSTANCE}"
                       f"{' (' + ', '.join(versions) + ')' if versions else ''}; name the one to pin with --{name}")
    if not VERSION.fullmatch(versions[0]):
        raise RowError(f"release {release}: {name} {versions[0]!r} is not a version")
    return versions[0]


def build_row(manifest: dict[str, Any], source: str, release: str, vllm_neuron: str | None = None,
              libtorch: str | None = None, constraints: list[str] | None = None,
              sources: dict[str, str] | None = None) -> dict[str, Any]:
    entry = next((e for e in manifest["neuron_releases"] if e.get("neuron_version") == release), None)
    if entry is None:
        have = ", ".join(str(e.get("neuron_version")) for e in manifest["neuron_releases"][:6])
        raise RowError(f"release {release}: not in the manifest (its releases: {have}, ...)")
    sources = dict(sources or {})
    found = trn2_versions(entry)
    overrides: dict[str, dict[str, str]] = {}

    def override(name: str, value: str | None) -> str | None:
        if value is None:
            return None
        if not VERSION.fullmatch(value):
            raise RowError(f"--{name} {value!r}: expected a version such as 2.11.0.1.0.1284")
        if name not in sources:
            raise RowError(f"--{name} {value}: say where it comes from with --source-of {name}=TEXT")
        overrides[name] = {"version": value, "source": sources[name]}
        return value

    deb = {name: one(found, name, release) for name in DEBS}
    neuron_vllm = one(found, "vllm-neuron", release, override("vllm-neuron", vllm_neuron))
    pip = [f"vllm-neuron=={neuron_vllm}", f"neuronx-cc=={one(found, 'neuronx-cc', release)}", f"nki=={one(found, 'nki', release)}"]
    pinned = [f"libtorch-neuronx-lite=={one(found, 'libtorch-neuronx-lite', release, override('libtorch-neuronx-lite', libtorch))}"]
    for pin in constraints or []:
        name, sep, version = pin.partition("==")
        if not sep or canonical(name) != name or any(p.startswith(name + "==") for p in pinned):
            raise RowError(f"--constraint {pin!r}: expected NAME==VERSION, a lowercase name with dashes, once "
                           "(libtorch-neuronx-lite has its own option)")
        pinned.append(f"{name}=={override(name, version)}")
    return {
        "manifest": {"release": release, "manifest_version": str(manifest.get("manifest_version", "")),
                     "manifest_date": str(manifest.get("manifest_date", "")), "source": source},
        "verified": False,
        "deb": deb,
        "pip": pip,
        "constraints": pinned,
        "python": python_versions(entry, "vllm-neuron"),
        "dlami": dlami(neuron_vllm),
        "overrides": overrides,
    }


def dlami(neuron_vllm: str) -> dict[str, str]:
    return {"ssm_prefix": f"/aws/service/neuron/dlami/pytorch-inference-vllm-{neuron_vllm}/ubuntu-24.04",
            "venv": f"/opt/aws_neuronx_venv_pytorch_inference_vllm_{neuron_vllm.replace('.', '_')}"}


# AWS's release notes of a patch (aws-neuron-sdk release-notes/2.33.1.rst): a title "AWS Neuron SDK Release Notes -
# vX.Y.Z", "**Release Date**: Month D, YYYY", sections underlined with "-" ("Changes in X.Y.Z", "Package updates")
# and subsections with "^" (the component), bullets "* ..." (continued on lines indented by two spaces), package
# bullets "* ``name``: version[, version, and version]".
NOTES_TITLE = re.compile(r"^AWS Neuron SDK Release Notes - v(\d+\.\d+\.\d+)\s*$", re.M)
NOTES_DATE = re.compile(r"\*\*Release Date\*\*:\s*([A-Z][a-z]+ \d{1,2}, \d{4})")
NOTES_BASE = re.compile(r"All other packages are the same as in Neuron (\d+\.\d+\.\d+)")
NOTES_PACKAGE = re.compile(r"^``([^`]+)``:\s*(.+)$")


def _plain(text: str) -> str:
    """rst inline markup as plain text: ``literal`` and :role:`text <target>`."""
    text = re.sub(r":\w+:`([^`<]*?)\s*(?:<[^>]*>)?`", r"\1", text)
    return re.sub(r"``([^`]*)``", r"\1", text).strip()


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0]


def notes_sections(text: str) -> dict[str, dict[str, list[str]]]:
    """Section title ("-" underline) -> subsection title ("^" underline, "" before any) -> its bullets, plain text."""
    lines = text.splitlines()
    sections: dict[str, dict[str, list[str]]] = {}
    section = subsection = None
    for i, line in enumerate(lines):
        under = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and under.strip() and len(set(under.strip())) == 1 and under.strip()[0] in "-^" \
                and len(under.strip()) >= len(line.strip()):
            if under.strip()[0] == "-":
                section, subsection = line.strip(), ""
                sections[section] = {"": []}
            elif section is not None:
                subsection = line.strip()
                sections[section][subsection] = []
        elif section is not None and line.startswith("* "):
            sections[section][subsection].append(line[2:].strip())
        elif section is not None and line.startswith("  ") and line.strip() and sections[section][subsection]:
            sections[section][subsection][-1] += " " + line.strip()
    return sections


def parse_notes(text: str, where: str) -> dict[str, Any]:
    """The release, its date (ISO), the release whose other packages it keeps, the packages it updates (canonical name
    -> versions) and what it fixes ("Component: first sentence" per bullet, rebuilds without functional change left out)."""
    title, date, base = NOTES_TITLE.search(text), NOTES_DATE.search(text), NOTES_BASE.search(text)
    if not (title and date and base):
        missing = [what for what, found in (("the title 'AWS Neuron SDK Release Notes - vX.Y.Z'", title),
                                            ("'**Release Date**: Month D, YYYY'", date),
                                            ("'All other packages are the same as in Neuron X.Y.Z'", base)) if not found]
        raise RowError(f"release notes {where}: no {', no '.join(missing)} (are they a patch release's notes?)")
    sections = notes_sections(text)
    updates: dict[str, list[str]] = {}
    for bullet in (sections.get("Package updates") or {}).get("", []):
        found = NOTES_PACKAGE.match(bullet)
        if found:
            updates[canonical(found.group(1))] = re.findall(r"\d+(?:\.\d+)+", found.group(2))
    if not updates:
        raise RowError(f"release notes {where}: the 'Package updates' section lists no package")
    fixes = [f"{component}: {_first_sentence(_plain(bullet))}"
             for component, bullets in (sections.get(f"Changes in {title.group(1)}") or {}).items()
             for bullet in bullets if "no functional change" not in bullet]
    released = datetime.datetime.strptime(date.group(1), "%B %d, %Y").date().isoformat()
    return {"release": title.group(1), "released": released, "of": base.group(1), "updates": updates, "fixes": fixes}


def build_patch_row(notes: dict[str, Any], source: str, release: str, rows: dict[str, Any]) -> dict[str, Any]:
    """The row of a patch release: the row it patches with the versions the notes update."""
    if notes["release"] != release:
        raise RowError(f"release {release}: the notes are those of {notes['release']}")
    base = notes["of"]
    if base not in rows:
        raise RowError(f"release {release}: its notes keep the other packages of {base}, which has no row; write {base}'s first")
    if not notes["fixes"]:
        raise RowError(f"release {release}: the notes' 'Changes in {release}' section names no fix")
    row = copy.deepcopy(rows[base])
    updates = notes["updates"]

    def updated(name: str, version: str) -> str:
        versions = updates.get(canonical(name))
        if not versions:
            return version
        if len(versions) == 1:
            return versions[0]
        # Several builds (libtorch_neuronx_lite per torch): the one on the pin's torch line (its first three numbers).
        line = [v for v in versions if v.split(".")[:3] == version.split(".")[:3]]
        if len(line) != 1:
            raise RowError(f"release {release}: the notes list {name} {', '.join(versions)}; none is on the line of "
                           f"the {base} row's {version}")
        return line[0]

    row["deb"] = {name: updated(name, version) for name, version in row["deb"].items()}
    row["pip"] = [f"{name}=={updated(name, version)}" for name, _, version in (p.partition("==") for p in row["pip"])]
    row["constraints"] = [f"{name}=={updated(name, version)}"
                          for name, _, version in (p.partition("==") for p in row.get("constraints") or [])]
    for name, value in (row.get("overrides") or {}).items():
        value["version"] = updated(name, value["version"])
    pinned = {canonical(p.split("==", 1)[0]) for p in row["pip"] + row["constraints"]} | set(row["deb"])
    neuron_vllm = next(p.split("==", 1)[1] for p in row["pip"] if p.startswith("vllm-neuron=="))
    row["manifest"] = {"release": release, "source": source}
    row["patch"] = {"of": base, "released": notes["released"], "fixes": notes["fixes"],
                    "not_pinned": [f"{name} {' '.join(versions)}" for name, versions in updates.items() if name not in pinned]}
    row["verified"] = False
    row["dlami"] = dlami(neuron_vllm)
    return row


WIDTH = 158  # the rows file's lines stay within yamllint's 160 (.yamllint)


def q(value: Any, at: int = 0) -> str:
    """A YAML double-quoted scalar; one starting at column `at` that would pass WIDTH is folded at single spaces onto
    lines indented by two more (YAML folds each line break of a double-quoted scalar into one space)."""
    # YAML's own emitter, not json.dumps: JSON writes a character beyond U+FFFF as two \u surrogates, which YAML reads
    # as two characters, and leaves U+2028 raw, which YAML reads as a line break.
    text = yaml.dump(value, default_style='"', allow_unicode=True, width=float("inf")).rstrip("\n")
    if not at or at + len(text) <= WIDTH:
        return text
    lines, pad = [""], " " * (at + 2)
    for word in re.split(r"(?<=\S) (?=\S)", text):
        if lines[-1] and len(pad) + len(lines[-1]) + 1 + len(word) > WIDTH:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return ("\n" + pad).join(lines)


def row_yaml(release: str, row: dict[str, Any]) -> str:
    """The row as the file writes rows: two-space indent under eagle3_neuron_releases, strings quoted, block style."""
    made = (f"from AWS's release notes of the patch (of {row['patch']['of']})" if "patch" in row else "")
    out = [f"  {q(release)}:",
           f"    # Generated by scripts/neuron_release.py{' ' + made if made else ''}; unverified until a trn2 run records its evidence.",
           "    manifest:"]
    out += [f"      {k}: {q(v, 8 + len(k))}" for k, v in row["manifest"].items()]
    if "patch" in row:
        out += ["    patch:"] + [f"      {k}: {q(v, 8 + len(k))}" for k, v in row["patch"].items() if not isinstance(v, list)]
        for key in ("fixes", "not_pinned"):
            out += [f"      {key}:"] + [f"        - {q(v, 8)}" for v in row["patch"][key]] if row["patch"][key] else [f"      {key}: []"]
    out += [f"    verified: {str(row['verified']).lower()}", "    deb:"]
    out += [f"      {name}: {q(version)}" for name, version in row["deb"].items()]
    out += ["    pip:"] + [f"      - {q(pin)}" for pin in row["pip"]]
    out += ["    constraints:"] + [f"      - {q(pin)}" for pin in row["constraints"]] if row["constraints"] else ["    constraints: []"]
    if row.get("environment"):  # the server's environment the release needs, and why (vllm_service's unit)
        out += ["    environment:"] + [f"      {k}: {q(v)}" for k, v in row["environment"].items()]
        out.append(f"    environment_source: {q(row['environment_source'], 24)}")
    out += ["    python: [" + ", ".join(q(v) for v in row["python"]) + "]", "    dlami:"]
    out += [f"      {k}: {q(v)}" for k, v in row["dlami"].items()]
    if row["overrides"]:
        out.append("    overrides:")
        for name, value in row["overrides"].items():
            out += [f"      {name}:", f"        version: {q(value['version'])}", f"        source: {q(value['source'], 16)}"]
    else:
        out.append("    overrides: {}")
    return "\n".join(out) + "\n"


def write_row(text: str, release: str, block: str) -> str:
    """The rows file with the release's block replaced (from its key line to the next row's key or the end of the
    mapping), or added at the end of eagle3_neuron_releases."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("eagle3_neuron_releases:")), None)
    if start is None:
        raise RowError("the rows file has no eagle3_neuron_releases mapping")
    key = re.compile(r'^  "?(\d+(?:\.\d+)+)"?:\s*$')
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() and not lines[i].startswith((" ", "#"))), len(lines))
    rows = [(i, key.match(lines[i]).group(1)) for i in range(start + 1, end) if key.match(lines[i])]
    mine = next((n for n, (_, r) in enumerate(rows) if r == release), None)
    if mine is None:
        at = end
        while at > start + 1 and not lines[at - 1].strip():
            at -= 1
        return "".join(lines[:at]) + block + "".join(lines[at:])
    first = rows[mine][0]
    # The block ends where the next row starts, keeping the lines that introduce that row (a comment at the rows'
    # indent, or blank) and, for the last row, what follows the mapping.
    last = rows[mine + 1][0] if mine + 1 < len(rows) else end
    while last > first + 1 and (not lines[last - 1].strip() or re.match(r"^  #", lines[last - 1])):
        last -= 1
    return "".join(lines[:first]) + block + "".join(lines[last:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", nargs="?", help="n2-manifest.json of the release: a path or an https URL")
    parser.add_argument("--notes", help="a patch release's release notes (release-notes/X.Y.Z.rst): a path or an https URL")
    parser.add_argument("--release", required=True, help="the Neuron SDK release, e.g. 2.34.0")
    parser.add_argument("--vllm-neuron", help="the release's vllm-neuron version, when not the manifest's")
    parser.add_argument("--libtorch-neuronx-lite", dest="libtorch", help="the libtorch-neuronx-lite to pin, when the manifest lists several")
    parser.add_argument("--constraint", action="append", default=[], metavar="NAME==VERSION",
                        help="a further pin no manifest names (islpy==2026.1: neuronx-cc leaves it open)")
    parser.add_argument("--source-of", action="append", default=[], metavar="NAME=TEXT",
                        help="where an override comes from (required for each); notes=TEXT: where a local copy of the notes was copied from")
    parser.add_argument("--write", action="store_true", help="write the row into the rows file")
    parser.add_argument("--rows", type=Path, default=ROWS, help=f"the rows file (default {ROWS.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if (args.manifest is None) == (args.notes is None):
        parser.error("give a release manifest (MANIFEST) or a patch release's notes (--notes), one of them")
    if args.notes and (args.vllm_neuron or args.libtorch or args.constraint):
        parser.error("--notes writes a patch of an existing row: its pins come from that row and the notes")
    if not RELEASE.fullmatch(args.release):
        parser.error(f"--release {args.release!r}: expected a release such as 2.34.0")
    sources = {}
    for item in args.source_of:
        name, sep, text = item.partition("=")
        if not sep or not text.strip():
            parser.error(f"--source-of {item!r}: expected NAME=TEXT")
        sources[name.strip()] = text.strip()
    try:
        if args.notes:
            data, source = read_source(args.notes, "release notes")
            if "notes" in sources:  # a local copy: where it was copied from, with the copy's sha256
                source = f"{sources['notes']} ({source.rsplit(' (', 1)[1]}"
            rows = yaml.safe_load(args.rows.read_text())["eagle3_neuron_releases"]
            row = build_patch_row(parse_notes(data.decode(), args.notes), source, args.release, rows)
        else:
            manifest, source = read_manifest(args.manifest)
            row = build_row(manifest, source, args.release, args.vllm_neuron, args.libtorch, args.constraint, sources)
        block = row_yaml(args.release, row)
        if args.write:
            args.rows.write_text(write_row(args.rows.read_text(), args.release, block))
            print(f"wrote the {args.release} row into {args.rows} (verified: false)")
        else:
            sys.stdout.write(block)
    except RowError as exc:
        print(f"neuron_release.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
