#!/usr/bin/env python3
"""Write a Neuron SDK release row from AWS's release manifest (so adding a release is one command).

    scripts/neuron_release.py MANIFEST --release 2.34.0 [--vllm-neuron V] [--libtorch-neuronx-lite V]
                              [--islpy V] [--source-of NAME=TEXT ...] [--write]

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
Values from elsewhere are overrides, each kept in the row with its source (`overrides:`): islpy (no manifest names it;
islpy 2026.2.1 breaks neuronx-cc 2.27), the libtorch-neuronx-lite choice, a vllm-neuron version other than the
manifest's. Every generated row says `verified: false`: nobody has run it on a trn2 yet (docs/aws.md, "A new Neuron
release"). Without --write the row is printed; with --write it replaces (or adds) the release's row in
roles/settings/defaults/main/neuron_releases.yml, the other rows and the file's comments unchanged. The neuron scenario's fixture
repositories are built from the rows (molecule/neuron/files/build_fixtures.py), so nothing else is edited by hand.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

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


def read_manifest(where: str) -> tuple[dict[str, Any], str]:
    """The manifest and where it came from (path or URL, with its sha256)."""
    if re.match(r"^https://", where):
        with urllib.request.urlopen(where, timeout=60) as answer:  # noqa: S310 (https only)
            data = answer.read()
    elif re.match(r"^[a-z]+://", where):
        raise RowError(f"manifest {where}: only a path or an https URL")
    else:
        data = Path(where).read_bytes()
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise RowError(f"manifest {where}: not JSON ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("neuron_releases"), list):
        raise RowError(f"manifest {where}: no neuron_releases list (is it n2-manifest.json?)")
    return manifest, f"{where} (sha256 {hashlib.sha256(data).hexdigest()[:16]})"


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
              libtorch: str | None = None, islpy: str | None = None, sources: dict[str, str] | None = None) -> dict[str, Any]:
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
    constraints = [f"libtorch-neuronx-lite=={one(found, 'libtorch-neuronx-lite', release, override('libtorch-neuronx-lite', libtorch))}"]
    if override("islpy", islpy):
        constraints.append(f"islpy=={islpy}")
    under = neuron_vllm.replace(".", "_")
    return {
        "manifest": {"release": release, "manifest_version": str(manifest.get("manifest_version", "")),
                     "manifest_date": str(manifest.get("manifest_date", "")), "source": source},
        "verified": False,
        "deb": deb,
        "pip": pip,
        "constraints": constraints,
        "python": python_versions(entry, "vllm-neuron"),
        "dlami": {"ssm_prefix": f"/aws/service/neuron/dlami/pytorch-inference-vllm-{neuron_vllm}/ubuntu-24.04",
                  "venv": f"/opt/aws_neuronx_venv_pytorch_inference_vllm_{under}"},
        "overrides": overrides,
    }


def q(value: Any) -> str:
    return json.dumps(value)


def row_yaml(release: str, row: dict[str, Any]) -> str:
    """The row as the file writes rows: two-space indent under eagle3_neuron_releases, strings quoted, block style."""
    out = [f"  {q(release)}:",
           "    # Generated by scripts/neuron_release.py; unverified until a trn2 run records its evidence.",
           "    manifest:"]
    out += [f"      {k}: {q(v)}" for k, v in row["manifest"].items()]
    out += [f"    verified: {str(row['verified']).lower()}", "    deb:"]
    out += [f"      {name}: {q(version)}" for name, version in row["deb"].items()]
    out += ["    pip:"] + [f"      - {q(pin)}" for pin in row["pip"]]
    out += ["    constraints:"] + [f"      - {q(pin)}" for pin in row["constraints"]]
    out += ["    python: [" + ", ".join(q(v) for v in row["python"]) + "]", "    dlami:"]
    out += [f"      {k}: {q(v)}" for k, v in row["dlami"].items()]
    if row["overrides"]:
        out.append("    overrides:")
        for name, value in row["overrides"].items():
            out += [f"      {name}:", f"        version: {q(value['version'])}", f"        source: {q(value['source'])}"]
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
    parser.add_argument("manifest", help="n2-manifest.json of the release: a path or an https URL")
    parser.add_argument("--release", required=True, help="the Neuron SDK release, e.g. 2.34.0")
    parser.add_argument("--vllm-neuron", help="the release's vllm-neuron version, when not the manifest's")
    parser.add_argument("--libtorch-neuronx-lite", dest="libtorch", help="the libtorch-neuronx-lite to pin, when the manifest lists several")
    parser.add_argument("--islpy", help="the islpy to pin (neuronx-cc leaves it open)")
    parser.add_argument("--source-of", action="append", default=[], metavar="NAME=TEXT",
                        help="where an override comes from (required for each)")
    parser.add_argument("--write", action="store_true", help="write the row into the rows file")
    parser.add_argument("--rows", type=Path, default=ROWS, help=f"the rows file (default {ROWS.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if not RELEASE.fullmatch(args.release):
        parser.error(f"--release {args.release!r}: expected a release such as 2.34.0")
    sources = {}
    for item in args.source_of:
        name, sep, text = item.partition("=")
        if not sep or not text.strip():
            parser.error(f"--source-of {item!r}: expected NAME=TEXT")
        sources[name.strip()] = text.strip()
    try:
        manifest, source = read_manifest(args.manifest)
        row = build_row(manifest, source, args.release, args.vllm_neuron, args.libtorch, args.islpy, sources)
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
