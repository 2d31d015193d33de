"""Where the running copy of eagle3.trn2 is: the one place the collection's Python finds its own files (roles/,
playbooks/, templates/, plugins/), in a checkout or an installed collection alike.

The location is the one Python imported the collection package from (ansible_collections.eagle3.trn2: Ansible's
collection loader in a play, the collections path on sys.path in a script or a test), not a count of directories up
from a file.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import import_module
from pathlib import Path

PACKAGE = "ansible_collections.eagle3.trn2"


@lru_cache(maxsize=1)
def collection_root() -> Path:
    """The root of the collection (where galaxy.yml or MANIFEST.json is), symlinks resolved: the checkout's committed
    link collections/ansible_collections/eagle3/trn2 gives the checkout itself."""
    return Path(next(iter(import_module(PACKAGE).__path__))).resolve()
