"""No lookup or query call is handed `omit` (a lookup takes it as a literal value, not as "no value").

`omit` is honoured only in module arguments (and module_defaults). A lookup receives the omit object itself, and
amazon.aws 10.1.2 refuses it ("Config 'endpoint_url' for '...lookup.ssm_parameter' lookup plugin from 'Direct' has an
invalid value: Invalid value provided for 'str': <<Omit>>", checked with ansible-core 2.19.14 on 2026-12-03): the AMI
lookup of roles/provision failed every real AWS run that way, while the tests, which always set an endpoint, never
took that branch. This scans every YAML and Jinja file of the collection for lookup(...), query(...) and q(...)
calls, their arguments read to the balanced closing parenthesis (they span lines), and fails on `omit` in one.
"""
from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

DIRS = ("roles", "playbooks", "group_vars", "inventories", "templates", "molecule", "tests/playbooks")
CALL = re.compile(r"\b(lookup|query|q)\s*\(")


def calls(text: str) -> list[tuple[int, str]]:
    """(line, the call's text up to its balanced closing parenthesis) of every lookup/query call in `text`."""
    found = []
    for match in CALL.finditer(text):
        depth, quote, i = 0, None, match.end() - 1
        while i < len(text):
            ch = text[i]
            if quote:
                if ch == quote and text[i - 1] != "\\":
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        found.append((text.count("\n", 0, match.start()) + 1, text[match.start():i + 1]))
    return found


def omitted(text: str) -> list[tuple[int, str]]:
    return [(line, call) for line, call in calls(text) if re.search(r"\bomit\b", call)]


def files() -> list[Path]:
    out = []
    for top in DIRS:
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in (".yml", ".yaml", ".j2"):
                out.append(path)
    return out


def test_the_scanner_finds_omit_in_a_lookup_across_lines():
    old = """    __provision_ami: >-
      {{ provision_ec2_ami_id if provision_ec2_ami_id | length > 0 else
         lookup('amazon.aws.ssm_parameter', provision_ec2_ami_ssm_parameter, region=provision_ec2_region,
                endpoint_url=(provision_ec2_endpoint_url if provision_ec2_endpoint_url | length > 0 else omit)) }}
"""
    assert [line for line, _ in omitted(old)] == [3]
    # omit in a module argument next to a lookup is fine; a ')' inside a string does not end the call early.
    fine = """    endpoint_url: "{{ x if x | length > 0 else omit }}"
    key: "{{ lookup('ansible.builtin.env', 'A)') }}"
    files: "{{ query('ansible.builtin.fileglob', 'a/*') | default(omit) }}"
"""
    assert omitted(fine) == [] and len(calls(fine)) == 2


def test_no_lookup_or_query_is_given_omit():
    scanned = files()
    assert len(scanned) > 100
    bad = [f"{path.relative_to(ROOT)}:{line}: {call}" for path in scanned for line, call in omitted(path.read_text())]
    assert not bad, "\n".join(bad)
