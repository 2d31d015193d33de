"""The key of a profile's compile cache (compile once per fleet): what a compiled artifact depends on,
so that a cache compiled on one host is applied on another only when everything it was built from is the same.

The key covers (docs/performance.md, "Compile once per fleet"):
  - the packages deployed on the host, pip and deb, and the venv's Python (the vllm_bench provenance probe,
    probes/versions.py): vLLM, the Neuron plugin, torch-neuronx, neuronx-cc, the runtime; on the CPU build torch and vLLM;
  - the profile's `vllm serve` config as the unit reads it (model, draft, num_speculative_tokens, TP, max-model-len,
    max-num-seqs, every option): /etc/eagle3/<profile>.yaml; but for where the server listens (host, port: the
    rehearsal's hosts share one loopback, each on its own port, and compile the same);
  - the unit's environment file (/etc/eagle3/vllm.env): compiler flags and platform settings (NEURON_CC_FLAGS,
    NEURON_PLATFORM_TARGET_OVERRIDE, ...), but for where things are stored (VLLM_CACHE_ROOT, HOME, HF_HOME,
    XDG_CACHE_HOME, TORCHINDUCTOR_CACHE_DIR: a host with instance-store NVMe keeps the cache at /mnt/eagle3-cache/vllm, one without at
    /var/lib/eagle3/cache, and the compiled artifacts are the same);
  - the accelerator, the profile's name and the models' own identity (the rehearsal models' manifest, or the hub
    revision the host downloaded), when the caller has it.
The secrets file is not part of it (it is never read here). The OS and kernel are not either: the compiler's output
does not depend on them, and a fleet's hosts launched weeks apart must still share.

Pure (the filters of plugins/filter/compile_cache.py): eagle3_compile_cache_material builds the material from what the tasks read, eagle3_compile_cache_key hashes it,
eagle3_compile_cache_diff names what differs between two materials (the refusal's message), eagle3_compile_cache_failure
words a failed start's reason.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.server.start_failure import with_start_failure_hints

KEY_VERSION = 2
# Where the host stores things, not what it compiles.
LOCATIONS = frozenset({"VLLM_CACHE_ROOT", "HOME", "HF_HOME", "XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR"})
# Where the server listens, not what it compiles (vLLM's own compile hash leaves the API server's address out too).
LISTEN = frozenset({"host", "port"})


def eagle3_env_file(text: str) -> dict[str, str]:
    """NAME=value lines of a systemd EnvironmentFile as written by vllm_service (vllm.env.j2), comments skipped."""
    entries = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        entries[name.strip()] = value.strip()
    return entries


def eagle3_vllm_cache_root(env_text: str) -> str:
    """VLLM_CACHE_ROOT as vLLM resolves it for a unit with this environment file (vllm/envs.py: VLLM_CACHE_ROOT, else
    $XDG_CACHE_HOME/vllm, else $HOME/.cache/vllm); raises when the file names none of them (no guess at a home)."""
    env = eagle3_env_file(env_text)
    if env.get("VLLM_CACHE_ROOT"):
        return env["VLLM_CACHE_ROOT"]
    if env.get("XDG_CACHE_HOME"):
        return env["XDG_CACHE_HOME"].rstrip("/") + "/vllm"
    if env.get("HOME"):
        return env["HOME"].rstrip("/") + "/.cache/vllm"
    raise ValueError("eagle3_vllm_cache_root: the unit's environment file sets none of VLLM_CACHE_ROOT, XDG_CACHE_HOME, HOME")


def eagle3_compile_cache_material(deployed: Any, config: Any, env_text: str, accelerator: str, profile: str,
                                  models: Any = None) -> dict[str, Any]:
    """The key's material; raises on input that could make two different builds share a key."""
    if not isinstance(deployed, dict) or not isinstance(deployed.get("pip"), dict) or not deployed["pip"]:
        raise ValueError("eagle3_compile_cache_material: deployed must be the provenance probe's output with a "
                         "non-empty 'pip' mapping, got %r" % (deployed,))
    if not isinstance(config, dict) or not config:
        raise ValueError("eagle3_compile_cache_material: config must be the profile's serve config (a non-empty "
                         "mapping), got %r" % (config,))
    return {
        "key_version": KEY_VERSION,
        "accelerator": str(accelerator),
        "profile": str(profile),
        "python": str(deployed.get("python") or ""),
        "pip": {str(k): str(v) for k, v in deployed["pip"].items()},
        "deb": {str(k): str(v) for k, v in (deployed.get("deb") or {}).items()},
        "config": {k: v for k, v in config.items() if k not in LISTEN},
        "env": {k: v for k, v in eagle3_env_file(env_text).items() if k not in LOCATIONS},
        "models": models if models not in (None, "", {}) else None,
    }


def eagle3_compile_cache_key(material: dict[str, Any]) -> str:
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for k in value:
            flat.update(_flatten(value[k], "%s.%s" % (prefix, k) if prefix else str(k)))
        return flat or {prefix: {}}
    return {prefix: value}


def eagle3_compile_cache_diff(mine: Any, theirs: Any, limit: int = 8) -> list[str]:
    """'path: mine vs theirs' for each leaf that differs (absent shown as '-'), at most `limit` lines and a count."""
    a, b = _flatten(mine if isinstance(mine, dict) else {}), _flatten(theirs if isinstance(theirs, dict) else {})
    lines = ["%s: %s vs %s" % (path, json.dumps(a[path]) if path in a else "-", json.dumps(b[path]) if path in b else "-")
             for path in sorted(set(a) | set(b)) if a.get(path, None) != b.get(path, None) or (path in a) != (path in b)]
    if len(lines) > limit:
        lines = lines[:limit] + ["and %d more" % (len(lines) - limit)]
    return lines


def eagle3_compile_cache_parts(material: Any) -> list[str]:
    """A material as "part: value" lines, one per leaf, in the material's order (packages by name): what a key was made
    of, for the message of a start that needed what its cache did not hold."""
    if not isinstance(material, dict):
        raise ValueError("eagle3_compile_cache_parts: expected a material (eagle3_compile_cache_material), got %r" % (material,))
    lines = []
    for part, value in material.items():
        if isinstance(value, dict) and value:
            lines.extend("%s.%s: %s" % (part, k, json.dumps(v, sort_keys=True, default=str)) for k, v in sorted(value.items()))
        else:
            lines.append("%s: %s" % (part, json.dumps(value, sort_keys=True, default=str)))
    return lines


def eagle3_compile_cache_failure(reason: Any, cache: Any, journal: Any = None) -> str:
    """The reason of a failed profile start; for a start in cache-hit-only mode (vllm_bench's compile_cache.yml:
    cache {'hit_only': true, 'key', 'state', 'canary', 'parts'}) followed by what that mode makes fatal and what the
    key was made of, so that an operator sees which part the canary's build may have differed in. Then, when the
    start's journal lines show a cause the project knows a way out of, the setting that gets past it
    (server/start_failure.py); without one the reason is as it was."""
    reason = "" if reason is None else str(reason)
    if isinstance(cache, dict) and cache.get("hit_only"):
        source = cache.get("state", "?") + (", from the canary %s" % cache["canary"] if cache.get("canary") else "")
        reason = ("%s; this start ran in cache-hit-only mode (VLLM_NEURON_DISABLE_WARMUP_COMPILE=1, "
                  "NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1): a graph missing from the compile cache of key %s "
                  "(%s) is fatal. The key was made of: %s. Set eagle3_compile_cache_hit_only: false to let this host "
                  "compile what is missing" % (reason, cache.get("key", "?"), source,
                                               "; ".join(cache.get("parts") or ["(not recorded)"])))
    return with_start_failure_hints(reason, journal)
