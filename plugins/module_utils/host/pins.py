"""Version pins compared the way pip and apt compare them.

pip: PEP 440 through the `packaging` library (what pip itself vendors). The Neuron repository's wheels
carry local version labels (`vllm_neuron-0.24.0.1.1.0+e8242a9`, `neuronx-cc 2.27.5334.0+f702b353`);
PEP 440 says a public `==0.24.0.1.1.0` matches them, so a string compare is wrong.

apt: the Neuron debs carry a build suffix (`aws-neuronx-runtime-lib 2.34.10.0-ac18d186d`); AWS's
install page pins `aws-neuronx-runtime-lib=2.34.10.0*`. A pin is written `VERSION*` and an installed
version matches it when it is VERSION or VERSION followed by a Debian separator (`-`, `+`, `~`), so
2.34.10.0 does not match 2.34.10.01 (apt's own glob would).
"""
from __future__ import annotations

from typing import Any
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# PyPI's placeholders of the Neuron packages, which hold no code (the real packages are on the Neuron repository,
# https://pip.repos.neuron.amazonaws.com). Their metadata does not say so (vllm-neuron 0.1.0 and neuronx-cc 1.0.post1
# have Summary UNKNOWN, nki 0.0.1 none; read from PyPI, ../shared/reference/verified-upstream.md), so they are known by
# name and version.
PYPI_PLACEHOLDERS = {"vllm-neuron": {"0.1.0"}, "neuronx-cc": {"1.0.post1"}, "nki": {"0.0.1"}}

SEPARATORS = "-+~"


def _split_pin(pin: str) -> tuple[str, SpecifierSet]:
    name, sep, version = pin.partition("==")
    if not sep or not name or not version:
        raise ValueError(f"pip_unmet: {pin!r} is not an exact pin name==version")
    try:
        return name, SpecifierSet("==" + version)
    except InvalidSpecifier as exc:
        raise ValueError(f"pip_unmet: {pin!r} has no PEP 440 version") from exc


def pip_unmet(pins: list[str], installed: dict[str, Any], required: bool = True) -> list[str]:
    """Pins whose package is absent (when required) or whose installed version is outside the pin (PEP 440)."""
    found = {canonicalize_name(name): version for name, version in (installed or {}).items()}
    unmet = []
    for pin in pins:
        name, spec = _split_pin(pin)
        version = found.get(canonicalize_name(name))
        if version is None and not required:
            continue
        try:
            ok = version is not None and spec.contains(Version(str(version)), prereleases=True)
        except InvalidVersion:
            ok = False
        if not ok:
            unmet.append(pin)
    return unmet


def pip_unmet_explained(pins: list[str], installed: dict[str, Any], required: bool = True) -> list[str]:
    """pip_unmet's pins as "name installed VERSION, pinned PIN_VERSION" (or "name absent, pinned ...")."""
    found = {canonicalize_name(name): version for name, version in (installed or {}).items()}
    out = []
    for pin in pip_unmet(pins, installed, required):
        name, _, version = pin.partition("==")
        have = found.get(canonicalize_name(name))
        out.append(f"{name} {'absent' if have is None else 'installed ' + str(have)}, pinned {version}")
    return out


def apt_pins(packages: dict[str, Any]) -> list[str]:
    """{package: version} -> ["package=version*", ...] (AWS's install page's form)."""
    return [f"{name}={str(version).rstrip('*')}*" for name, version in packages.items()]


def apt_version_matches(installed: str | None, pinned: str) -> bool:
    """True when the installed Debian version is the pinned one, with or without a build suffix."""
    pinned = str(pinned).rstrip("*")
    if installed is None:
        return False
    installed = str(installed)
    return installed == pinned or (installed.startswith(pinned) and installed[len(pinned)] in SEPARATORS)


def apt_unmet(packages: dict[str, Any], installed: dict[str, Any]) -> list[str]:
    """Packages of the row whose installed version does not match its pin."""
    return [name for name, version in packages.items() if not apt_version_matches((installed or {}).get(name), version)]


def pypi_placeholders(pins: list[str]) -> list[str]:
    """The exact pins (name==version, any name spelling, PEP 440 versions) that name a PyPI placeholder."""
    found = []
    for pin in pins:
        name, sep, version = str(pin).partition("==")
        if not sep:
            continue
        try:
            wanted = Version(version)
        except InvalidVersion:
            continue
        if any(Version(v) == wanted for v in PYPI_PLACEHOLDERS.get(canonicalize_name(name), ())):
            found.append(pin)
    return found
