#!/usr/bin/env python3
"""FIXTURES ONLY: a signed apt repository and a pip simple index that stand in for the Neuron
repositories (apt.repos.neuron.amazonaws.com, pip.repos.neuron.amazonaws.com) in tests.

Packages carry the real names and the 2.31/2.32/2.33 versions but no real content: the
"driver" is an empty package, aws-neuronx-tools ships a neuron-ls that prints 16 trn2 devices in
neuron-ls's JSON shape, the vllm-neuron wheel ships a `vllm` that only prints its version.
A throwaway key signs the repository. Usage: build_fixtures.py OUT_DIR KERNEL_RELEASE
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

# Shapes copied from the real artifacts (a fixture that disagrees with the real format is a defect):
# * debs: Neuron debs carry a build suffix after the version. Real ones, from AWS's container build
#   for vllm-neuron 0.24.0.1.1.0 (aws-neuron/deep-learning-containers vllm/inference/0.24.0.1.1.0/
#   Dockerfile.neuronx): aws-neuronx-runtime-lib 2.34.10.0-ac18d186d, aws-neuronx-collectives
#   2.34.10.0-74eaafac6, aws-neuronx-tools 2.32.28.0-526c2b7f6. The others' suffixes are not published
#   there: they get one of the same shape (9 hex digits, FIXTURE values).
#   Versions: release manifest (aws-neuron-sdk src/helperscripts/n2-manifest.json) for 2.32/2.33.
DEBS = {  # release -> package -> version
    "2.31.0": {"aws-neuronx-dkms": "2.29.41.0-0d7a3f1b2", "aws-neuronx-runtime-lib": "2.33.21.0-5c1e9a7d3",
               "aws-neuronx-collectives": "2.33.21.0-8b2f4e6a1", "aws-neuronx-tools": "2.31.30.0-3e9d1c5b7"},
    "2.32.0": {"aws-neuronx-dkms": "2.30.2.0-9f4c2a8e1", "aws-neuronx-runtime-lib": "2.34.10.0-ac18d186d",
               "aws-neuronx-collectives": "2.34.10.0-74eaafac6", "aws-neuronx-tools": "2.32.28.0-526c2b7f6"},
    "2.33.0": {"aws-neuronx-dkms": "2.31.7.0-4a6b8c0d2", "aws-neuronx-runtime-lib": "2.35.30.0-1f3e5d7c9",
               "aws-neuronx-collectives": "2.35.43.0-6d8e0f2a4", "aws-neuronx-tools": "2.33.38.0-2b4d6f8a0"},
    # The patch release: its notes list the packages it updates; aws-neuronx-tools is 2.33.0's, the same package.
    "2.33.1": {"aws-neuronx-dkms": "2.31.8.0-ea5e1b126", "aws-neuronx-runtime-lib": "2.35.33.0-eaa25a17c",
               "aws-neuronx-collectives": "2.35.49.0-eb1e9680f", "aws-neuronx-tools": "2.33.38.0-2b4d6f8a0"},
}
# * wheels: the Neuron repository's wheels carry PEP 440 local labels. Real ones:
#   vllm_neuron-0.24.0.1.1.0+e8242a9-py3-none-any.whl (aws-neuron-sdk release-notes/releasecontent.rst);
#   neuronx-cc 2.27.5334.0+f702b353, nki 0.6.0+31049202112.g85070674, libtorch-neuronx-lite
#   2.11.0.1.0.1284+f49d8626 (the Dockerfile above). 2.33's labels are FIXTURE values of the same shape.
#   vllm-neuron 0.1.0 is PyPI's placeholder (no label); islpy, transformers and six are PyPI packages (no labels).
WHEELS = {"vllm-neuron": ["0.1.0", "0.24.0.1.1.0+e8242a9", "0.29.0.1.2.0+3c5e7a9"],
          "neuronx-cc": ["2.27.5334.0+f702b353", "2.28.7631.0+a1c3e5f7"],
          "nki": ["0.6.0+31049202112.g85070674", "0.7.0+32010477215.g1b3d5f7a"],
          "libtorch-neuronx-lite": ["2.11.0.1.0.1284+f49d8626", "2.12.0.1.0.1284+f49d8626"],
          "islpy": ["2026.1", "2026.2.1"],
          "transformers": ["5.15.0"],
          "six": ["1.17.0"]}
# Dependencies, with markers the way vLLM 0.24.0's METADATA writes them (`six>=1.16.0; python_version > "3.11"`):
# pip evaluates them against the interpreter that runs it, so a wheelhouse resolved by another Python
# misses or adds packages. neuronx-cc leaves islpy open (islpy 2026.2.1 breaks neuronx-cc 2.27:
# NCC_ISMP902, third-party reports); the release row's constraints pin it.
REQUIRES = {"vllm-neuron": ["libtorch-neuronx-lite", 'six>=1.16.0; python_version > "3.11"'],
            "neuronx-cc": ["islpy"]}
# Every release row (roles/settings/defaults/main/neuron_releases.yml, written by scripts/neuron_release.py) gets its packages in
# the fixture repositories too, so a new row needs no edit here: a deb version the tables above lack gets a FIXTURE
# suffix of the same shape (9 hex digits), a Neuron wheel a FIXTURE local label (8 hex digits); PyPI packages
# (islpy) have none. Derived from the name and version, so the repositories are the same on every build.
ROWS = Path(__file__).resolve().parents[3] / "roles/settings/defaults/main/neuron_releases.yml"
NEURON_WHEELS = ("vllm-neuron", "neuronx-cc", "nki", "libtorch-neuronx-lite")


def _fixture_hex(name: str, version: str, digits: int) -> str:
    return hashlib.sha256(f"FIXTURE {name} {version}".encode()).hexdigest()[:digits]


def add_rows(rows: dict, debs: dict, wheels: dict) -> None:
    """Add every row's debs and pins that debs/wheels lack (in place)."""
    for release, row in rows.items():
        have = debs.setdefault(release, {})
        for name, version in (row.get("deb") or {}).items():
            # A version another release already ships (a patch keeps most of its minor's packages) is that same deb.
            served = [v for r in debs.values() for n, v in r.items() if n == name and v.split("-", 1)[0] == str(version)]
            have.setdefault(name, served[0] if served else f"{version}-{_fixture_hex(name, str(version), 9)}")
        for pin in list(row.get("pip") or []) + list(row.get("constraints") or []):
            name, version = pin.split("==", 1)
            listed = wheels.setdefault(name, [])
            if not any(v.split("+", 1)[0] == version for v in listed):
                listed.append(f"{version}+{_fixture_hex(name, version, 8)}" if name in NEURON_WHEELS else version)


# The committed locks (roles/vllm_install/files/locks) pin setuptools and wheel, which vllm_install installs at the lock's
# version over what `python -m venv` bootstrapped: the fixture index serves them as PyPI would (empty FIXTURE wheels of
# the locked versions; nothing here imports them).
LOCKS = Path(__file__).resolve().parents[3] / "roles/vllm_install/files/locks"
BOOTSTRAP = ("setuptools", "wheel")


def add_bootstrap(wheels: dict, locks: Path = LOCKS) -> None:
    """Add the neuron locks' setuptools and wheel versions to `wheels` (in place)."""
    for lock in sorted(locks.glob("neuron-*.txt")):
        for line in lock.read_text().splitlines():
            name, sep, version = line.partition("==")
            if sep and name in BOOTSTRAP and version not in wheels.setdefault(name, []):
                wheels[name].append(version)


NEURON_LS = r'''#!/usr/bin/env python3
# FIXTURE neuron-ls: 16 Trainium2 devices of a trn2.48xlarge, in neuron-ls --json-output's shape.
# Processes holding cores are read from /etc/eagle3-fixture/neuron-processes.json when present.
import json, os, sys
holders = []
if os.path.exists("/etc/eagle3-fixture/neuron-processes.json"):
    holders = json.load(open("/etc/eagle3-fixture/neuron-processes.json"))
devices = [{"neuron_device": i, "bdf": "%02x:1e.0" % (0x10 + i), "nc_count": 4, "memory_size": 103079215104,
            "neuron_processes": holders if i == 0 else []} for i in range(16)]
print(json.dumps(devices) if "--json-output" in sys.argv else "\n".join("device %d" % i for i in range(16)))
'''


def run(*argv: str, **kw) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


# The 2.33 row's driver fixture fails its "DKMS build" the way a missing-headers build does, so the
# role's explanation of a failed driver install is exercised.
FAILING_DKMS = "aws-neuronx-dkms", "2.31.7.0-4a6b8c0d2"
POSTINST_FAIL = """#!/bin/sh
echo "Error! Bad return status for module build on kernel: $(uname -r) (x86_64)" >&2
echo "Consult /var/lib/dkms/aws-neuronx/2.31.7.0/build/make.log for more information." >&2
exit 10
"""


def build_deb(out: Path, name: str, version: str, files: dict[str, tuple[str, int]]) -> Path:
    root = out / "build" / f"{name}_{version}"
    (root / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: eagle3 fixtures <fixtures@localhost>\n"
        f"Description: FIXTURE stand-in for {name} {version} (tests only, no real content)\n")
    if (name, version) == FAILING_DKMS:
        (root / "DEBIAN" / "postinst").write_text(POSTINST_FAIL)
        (root / "DEBIAN" / "postinst").chmod(0o755)
    for path, (content, mode) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        target.chmod(mode)
    deb = out / "apt" / "pool" / f"{name}_{version}_all.deb"
    deb.parent.mkdir(parents=True, exist_ok=True)
    run("dpkg-deb", "--root-owner-group", "--build", str(root), str(deb))
    return deb


def build_wheel(out: Path, name: str, version: str) -> None:
    dist = name.replace("-", "_")
    whl = out / "pypi" / "files" / f"{dist}-{version}-py3-none-any.whl"
    whl.parent.mkdir(parents=True, exist_ok=True)
    placeholder = name == "vllm-neuron" and version == "0.1.0"
    # PyPI's vllm-neuron 0.1.0 says nothing of being a placeholder in its metadata: Summary UNKNOWN
    # (../shared/reference/verified-upstream.md); the fixture copies that, its FIXTURE mark is in the module it holds.
    summary = "UNKNOWN" if placeholder else f"FIXTURE {name}"
    module = f"{dist}_fixture"
    files = {
        f"{module}/__init__.py": f"VERSION = {version!r}\n\ndef main():\n    print({version!r} + ' (fixture)')\n",
        f"{dist}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
        + "".join(f"Requires-Dist: {req}\n" for req in ([] if placeholder else REQUIRES.get(name, []))),
        f"{dist}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: eagle3-fixtures\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if name == "vllm-neuron" and not placeholder:
        files[f"{dist}-{version}.dist-info/entry_points.txt"] = f"[console_scripts]\nvllm = {module}:main\n"
    record = "".join(f"{p},,\n" for p in files) + f"{dist}-{version}.dist-info/RECORD,,\n"
    files[f"{dist}-{version}.dist-info/RECORD"] = record
    with zipfile.ZipFile(whl, "w") as zf:
        for path, content in files.items():
            zf.writestr(path, content)


def main() -> int:
    out, kernel = Path(sys.argv[1]), sys.argv[2]
    import yaml  # the controller's ansible Python has it
    add_rows(yaml.safe_load(ROWS.read_text())["eagle3_neuron_releases"], DEBS, WHEELS)
    add_bootstrap(WHEELS)
    gnupg = out / "gnupg"
    gnupg.mkdir(parents=True, exist_ok=True, mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(gnupg))
    if not (out / "apt" / "GPG-PUB-KEY-FIXTURE.PUB").exists():
        run("gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
            "eagle3 fixture repository <fixtures@localhost>", "rsa2048", "sign", "1d", env=env)
    debs = [build_deb(out, f"linux-headers-{kernel}", "1.0", {})]
    for name, version in sorted({item for release in DEBS.values() for item in release.items()}):
        files = {"/opt/aws/neuron/bin/neuron-ls": (NEURON_LS, 0o755)} if name == "aws-neuronx-tools" else {}
        debs.append(build_deb(out, name, version, files))
    apt = out / "apt"
    binary = apt / "dists" / "bookworm" / "main" / "binary-all"
    binary.mkdir(parents=True, exist_ok=True)
    packages = run("dpkg-scanpackages", "--multiversion", "pool", cwd=apt)
    (binary / "Packages").write_text(packages)
    (binary / "Packages.gz").write_bytes(gzip.compress(packages.encode()))
    lines = []
    for f in ("main/binary-all/Packages", "main/binary-all/Packages.gz"):
        data = (apt / "dists" / "bookworm" / f).read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {f}")
    release = ("Origin: eagle3-fixture\nLabel: eagle3-fixture\nSuite: bookworm\nCodename: bookworm\n"
               "Architectures: amd64 all\nComponents: main\nSHA256:\n" + "\n".join(lines) + "\n")
    (apt / "dists" / "bookworm" / "Release").write_text(release)
    inrelease = apt / "dists" / "bookworm" / "InRelease"
    inrelease.unlink(missing_ok=True)
    run("gpg", "--batch", "--yes", "--clearsign", "-o", str(inrelease), str(apt / "dists" / "bookworm" / "Release"), env=env)
    (apt / "GPG-PUB-KEY-FIXTURE.PUB").write_text(run("gpg", "--armor", "--export", env=env))
    fpr = [l.split(":")[9] for l in run("gpg", "--with-colons", "--list-keys", env=env).splitlines() if l.startswith("fpr:")][0]
    (out / "fingerprint").write_text(fpr + "\n")
    for name, versions in WHEELS.items():
        for version in versions:
            build_wheel(out, name, version)
    simple = out / "pypi" / "simple"
    for name in WHEELS:
        d = simple / name
        d.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{w.name}">{w.name}</a>\n'
                        for w in sorted((out / "pypi" / "files").glob(f"{name.replace('-', '_')}-*.whl")))
        (d / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    sonnet = out / "pypi" / "sonnet.txt"
    sonnet.write_text("Shall I compare thee to a summer's day? (fixture text)\n" * 40)
    (out / "sonnet.sha256").write_text(hashlib.sha256(sonnet.read_bytes()).hexdigest() + "\n")
    print(json.dumps({"fingerprint": fpr, "debs": len(debs)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
