"""The security-group CIDR rules (plugins/module_utils/cloud/infra.py): what counts as a CIDR, and what opens a port to too much of
the internet, however it is written (the exact-string check it replaced let 0.0.0.0/1 + 128.0.0.0/1 and ::0/0 by)."""
from __future__ import annotations

import pytest
from ansible_collections.eagle3.trn2.plugins.module_utils.cloud.infra import eagle3_cidrs_too_wide, eagle3_is_cidr


@pytest.mark.parametrize("value", ["203.0.113.7/32", "10.0.0.0/8", "2001:db8::/32", "0.0.0.0/0"])
def test_cidrs(value):
    assert eagle3_is_cidr(value)


@pytest.mark.parametrize("value", ["10.0.0.1/24", "203.0.113.7", "203.0.113.0/33", "", None, 8])
def test_not_cidrs(value):
    assert not eagle3_is_cidr(value)


@pytest.mark.parametrize("cidrs", [["203.0.113.0/24"], ["10.0.0.0/8", "192.0.2.10/32"], ["2001:db8::/32"], "198.51.100.0/24", []])
def test_client_and_monitor_ranges_pass(cidrs):
    assert eagle3_cidrs_too_wide(cidrs) == []


@pytest.mark.parametrize(("cidrs", "wide"), [
    (["0.0.0.0/0"], ["0.0.0.0/0"]),
    (["::/0"], ["::/0"]),
    (["::0/0"], ["::0/0"]),  # the same network, another spelling
    ("0.0.0.0/0", ["0.0.0.0/0"]),
    (["203.0.113.0/24", "0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/1", "128.0.0.0/1"]),  # the internet in two halves
    (["10.0.0.0/7"], ["10.0.0.0/7"]),
    (["2000::/15"], ["2000::/15"]),
])
def test_too_wide_is_named(cidrs, wide):
    assert eagle3_cidrs_too_wide(cidrs) == wide


def test_the_internet_in_256_pieces_is_still_the_internet():
    pieces = [f"{n}.0.0.0/8" for n in range(256)]
    assert eagle3_cidrs_too_wide(pieces) == [f"together {', '.join(pieces)} cover all of 0.0.0.0/0"]


def test_entries_that_are_not_cidrs_are_left_to_the_cidr_rule():
    assert eagle3_cidrs_too_wide(["not-a-cidr", "10.0.0.1/24"]) == []
