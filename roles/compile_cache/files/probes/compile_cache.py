"""The compile cache on a host (VLLM_CACHE_ROOT), packed on the canary and applied on the other hosts (they skip the
compile the canary already paid).

Usage: compile_cache.py look HF_HOME ROOT MODEL...
       compile_cache.py pack ROOT ARCHIVE KEY INFO_JSON
       compile_cache.py unpack ROOT ARCHIVE KEY
look prints {"identity": {MODEL: identity}, "marks": [KEY...]}, what a start's cache key and look-up need from the
host in one call. The identity: for a local directory the sha256 of its config.json and of every *.safetensors file's
header (tensor names, shapes and dtypes: what a compiled graph depends on); for a hub id the revision the host's hub
cache resolved (HF_HOME/hub/models--ORG--NAME/refs/main), "" when neither is there. The marks: the keys whose cache
ROOT holds (ROOT/.eagle3-compile-cache/KEY.json, written by pack and unpack), [] when there is none.
pack writes ARCHIVE (tar.gz) of everything under ROOT but the markers, with a first member
eagle3-compile-cache.json: INFO_JSON (the canary, the profile and the key's material) plus "key", "files" and
"bytes". It prints {"files": N, "bytes": N, "archive_bytes": N}; with no file under ROOT it writes nothing and
prints {"files": 0, ...}. It also marks ROOT as holding KEY (ROOT/.eagle3-compile-cache/KEY.json,
"source": "compiled").

unpack reads the archive's eagle3-compile-cache.json first and refuses (extracts nothing) when its key is not KEY,
when it has none, or when a member would land outside ROOT or is not a plain file or directory; otherwise it
extracts every member into ROOT, owned by ROOT's owner (the service user), and marks ROOT as holding KEY
("source": "shipped", with the canary's name). It prints {"used": bool, "reason": ..., "files": N, "bytes": N,
"canary": ...}. Exit status 0 either way (a refusal is a result, the play reports it and compiles); 2 on bad usage.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
import time
import zlib

INFO = "eagle3-compile-cache.json"
MARKS = ".eagle3-compile-cache"


def identity(hf_home: str, model: str) -> str:
    if os.path.isdir(model):
        digest = hashlib.sha256()
        for name in sorted(os.listdir(model)):
            path = os.path.join(model, name)
            if name == "config.json":
                with open(path, "rb") as handle:
                    digest.update(b"config.json\0" + handle.read())
            elif name.endswith(".safetensors"):
                with open(path, "rb") as handle:
                    size = int.from_bytes(handle.read(8), "little")
                    digest.update(name.encode() + b"\0" + handle.read(min(size, 1 << 26)))
        return "sha256:" + digest.hexdigest()
    ref = os.path.join(hf_home, "hub", "models--" + model.replace("/", "--"), "refs", "main")
    try:
        with open(ref) as handle:
            return "revision:" + handle.read().strip()
    except OSError:
        return ""


def marks(root: str) -> list[str]:
    try:
        names = os.listdir(os.path.join(root, MARKS))
    except OSError:
        return []
    return sorted(name[:-len(".json")] for name in names if name.endswith(".json"))


def _files(root: str) -> list[str]:
    found = []
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (top == root and d == MARKS))
        for name in sorted(names):
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(os.path.relpath(path, root))
    return found


def mark(root: str, key: str, record: dict) -> None:
    marks = os.path.join(root, MARKS)
    os.makedirs(marks, exist_ok=True)
    st = os.stat(root)
    with open(os.path.join(marks, key + ".json"), "w") as handle:
        json.dump(dict(record, key=key, at=round(time.time(), 1)), handle, sort_keys=True)
    for path in (marks, os.path.join(marks, key + ".json")):
        os.chown(path, st.st_uid, st.st_gid)


def pack(root: str, archive: str, key: str, info: dict) -> dict:
    files = _files(root) if os.path.isdir(root) else []
    size = sum(os.path.getsize(os.path.join(root, f)) for f in files)
    result = {"files": len(files), "bytes": size, "archive_bytes": 0}
    if not files:
        return result
    header = json.dumps(dict(info, key=key, files=len(files), bytes=size), sort_keys=True).encode()
    part = archive + ".part"
    with tarfile.open(part, "w:gz") as tar:
        entry = tarfile.TarInfo(INFO)
        entry.size, entry.mtime, entry.mode = len(header), int(time.time()), 0o644
        tar.addfile(entry, io.BytesIO(header))
        for rel in files:
            tar.add(os.path.join(root, rel), arcname=rel, recursive=False)
    os.replace(part, archive)
    result["archive_bytes"] = os.path.getsize(archive)
    mark(root, key, {"source": "compiled"})
    return result


def _safe(member: tarfile.TarInfo, root: str) -> bool:
    if not (member.isfile() or member.isdir()):
        return False
    target = os.path.realpath(os.path.join(root, member.name))
    return not os.path.isabs(member.name) and target.startswith(os.path.realpath(root) + os.sep)


def _make_owned(root: str) -> None:
    """Create the cache root and its missing parents owned as the nearest existing parent (the service user's home:
    the unit keeps its cache there). The probe runs as root; a plain makedirs left the root root's, and the server,
    loading the shipped graphs, could not take inductor's lock files in it (PermissionError, the start failed)."""
    missing, path = [], os.path.abspath(root)
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path)
    st = os.stat(path)
    for directory in reversed(missing):
        os.mkdir(directory, 0o750)
        os.chown(directory, st.st_uid, st.st_gid)


def unpack(root: str, archive: str, key: str) -> dict:
    refused = {"used": False, "files": 0, "bytes": 0}
    try:
        tar = tarfile.open(archive, "r:gz")
    except (OSError, tarfile.TarError) as exc:
        return dict(refused, reason="not a readable cache archive: %s" % exc)
    with tar:
        try:
            first = tar.next()
            info = json.loads(tar.extractfile(first).read() or b"{}") if first is not None and first.name == INFO else None
            # Every member header: a truncated archive (one still being written) fails here, before anything is unpacked.
            members = [m for m in tar.getmembers() if m.name != INFO]
        except (EOFError, OSError, ValueError, tarfile.TarError, zlib.error) as exc:
            return dict(refused, reason="not a complete cache archive: %s: %s" % (type(exc).__name__, exc))
        if info is None:
            return dict(refused, reason="the archive has no %s first (not packed by this project)" % INFO)
        if info.get("key") != key:
            return dict(refused, canary=info.get("canary"),
                        reason="the archive's key %s is not this host's key %s" % (info.get("key"), key))
        bad = [m.name for m in members if not _safe(m, root)]
        if bad:
            return dict(refused, canary=info.get("canary"),
                        reason="members outside the cache or not plain files: %s" % ", ".join(bad[:5]))
        _make_owned(root)
        st = os.stat(root)
        size = 0
        for member in members:
            member.uid, member.gid, member.uname, member.gname = st.st_uid, st.st_gid, "", ""
            member.mode &= 0o750 if member.isdir() else 0o640
            tar.extract(member, root, set_attrs=False)
            target = os.path.join(root, member.name)
            os.chmod(target, 0o750 if member.isdir() else 0o640)
            size += member.size if member.isfile() else 0
        for top, dirs, names in os.walk(root):
            for name in dirs + names:
                path = os.path.join(top, name)
                if not os.path.islink(path) and os.stat(path).st_uid != st.st_uid:
                    os.chown(path, st.st_uid, st.st_gid)
        mark(root, key, {"source": "shipped", "canary": info.get("canary")})
        return {"used": True, "reason": "", "files": sum(1 for m in members if m.isfile()), "bytes": size,
                "canary": info.get("canary")}


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[1] == "look":
        print(json.dumps({"identity": {model: identity(argv[2], model) for model in argv[4:]}, "marks": marks(argv[3])}))
        return 0
    if len(argv) == 6 and argv[1] == "pack":
        print(json.dumps(pack(argv[2], argv[3], argv[4], json.loads(argv[5]))))
        return 0
    if len(argv) == 5 and argv[1] == "unpack":
        print(json.dumps(unpack(argv[2], argv[3], argv[4])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
