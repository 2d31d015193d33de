"""What the vLLM engine really runs: server options rendered so they reach it, and its effective
configuration read back from the startup log and compared with what the profile asked.

Why rendering matters (read in vllm-project/vllm, `vllm/utils/argparse_utils.py`,
`FlexibleArgumentParser.load_config_file`, which `vllm serve --config` uses):
  * v0.24.0: `if isinstance(value, bool): if value: processed_args.append("--" + key)`:
    a `false` value produces no argument at all.
  * v0.29.0: `elif (no_key := f"--no-{key}") in self._option_string_actions: append(no_key)`,
    but `self` is the root `vllm` parser (vllm/entrypoints/cli/main.py) and `--no-enable-prefix-caching`
    is registered on the `serve` subparser only, so it is still dropped (vllm-project/vllm#51401, PR #58102).
So `enable-prefix-caching: false` silently leaves prefix caching ON. `no-enable-prefix-caching: true` is
a true value: both loaders emit `--no-enable-prefix-caching`, which the serve parser (argparse
BooleanOptionalAction) turns into False. `vllm_serve_options` renders every false boolean that way.

Where the effective configuration is read (same repository):
  * `logger.info("non-default args: %s", non_default_args)` (log_non_default_args,
    vllm/entrypoints/utils.py; vllm/entrypoints/serve/utils/api_utils.py in later releases): a Python
    dict repr of every argument that differs from the parser's defaults, printed by the API server.
  * `logger.info("Initializing a V1 LLM engine (v%s) with config: %s", VLLM_VERSION, vllm_config)`
    (vllm/v1/engine/core.py) with VllmConfig.__str__ (vllm/config/vllm.py):
    `model=..., speculative_config=SpeculativeConfig(method='eagle3', model='...', num_spec_tokens=3),
    ..., max_seq_len=2048, ..., tensor_parallel_size=8, ..., enable_prefix_caching=False, ...`.
    vllm-neuron is a platform plugin on the same V1 engine core, so 0.24 prints the same line.

Where the scheduling mode (async or sync) shows, or not: VllmConfig.__str__ does not print async_scheduling, so
`vllm_scheduling` reads it from what does (vLLM 0.29.0, read in the installed source):
  * vllm/config/vllm.py, VllmConfig.__post_init__: with async_scheduling unset (None) it is turned on silently unless
    an option rules it out, which is logged: "Async scheduling not supported with %s-based speculative decoding and will
    be disabled.", "Async scheduling will be disabled because it is not supported with the `%s` distributed executor
    backend.", "Async scheduling is not compatible with disable_padded_drafter_batch=True and will be disabled.".
  * `--async-scheduling` / `--no-async-scheduling` given: the non-default args carry 'async_scheduling': True / False.
  * vllm/platforms/cpu.py, CpuPlatform.check_and_update_config ("async scheduling is not required on CPU"): sets
    scheduler_config.async_scheduling = False on every start, without a log line, and it runs after the resolution
    above (current_platform.check_and_update_config is called later in __post_init__): on the CPU build, sync.
  * vllm-neuron, docs/guides/features-guide.md ("Async scheduling"): "Async scheduling is **on by default**", and
    ("Speculative decoding"): "Setting `--speculative-config` disables async scheduling automatically with a startup
    warning". The plugin's own message is not readable here: a line is taken for it by that sentence's words.
"""
from __future__ import annotations

import ast
import re
from typing import Any

NON_DEFAULT = "non-default args: "
ENGINE = re.compile(r"Initializing a V1 LLM engine \(v(?P<version>[^)]*)\) with config: (?P<config>.*)$")
SPEC = re.compile(r"speculative_config=(?:None|SpeculativeConfig\(method=(?P<method>None|'[^']*'), "
                  r"model=(?P<model>None|'[^']*'), num_spec_tokens=(?P<k>None|\d+)\))")
DEVICE = re.compile(r"(?:^|, )device_config=(?P<device>[^,]*)")
# vllm/platforms/__init__.py (resolve_current_platform_cls_qualname): an out-of-tree platform is logged at INFO,
# "Platform plugin %s is activated"; the built-in ones (cpu among them) only at DEBUG. Some vllm-neuron releases declare
# device_type "cpu" (and the newer ones with VLLM_NEURON_CPU_MODE), so device_config=cpu alone does not mean the CPU
# build: without a plugin line it does.
PLUGIN = re.compile(r"Platform plugin (?P<plugin>\S+) is activated")
# vLLM's own messages that async scheduling is off for this start (VllmConfig.__post_init__, quoted above); "Disabling
# NCCL ... when using async scheduling" and "Disabling cascade attention (not yet compatible with async speculative
# decoding)" are logged when it is ON, and neither has "async scheduling" followed by one of these.
ASYNC_OFF = re.compile(r"async scheduling (?:is |will be )?(?:disabled|not (?:yet )?supported|not compatible)",
                       re.IGNORECASE)
# The vllm-neuron plugin's startup warning, known only from its features guide ("Setting `--speculative-config`
# disables async scheduling automatically with a startup warning"): any line naming async scheduling, a disabling and
# speculation, in any case and order.
NEURON_OFF = (re.compile(r"async.scheduling", re.IGNORECASE), re.compile(r"disabl", re.IGNORECASE),
              re.compile(r"speculat", re.IGNORECASE))
CPU_RULE = ("device_config=cpu: vllm/platforms/cpu.py (CpuPlatform.check_and_update_config: \"async scheduling is not "
            "required on CPU\") sets scheduler_config.async_scheduling = False on every start, after the options, "
            "without a log line")
NEURON_DEFAULT = ("vllm-neuron and no line of this start says otherwise: its features guide, "
                  "\"Async scheduling is on by default\"")
NEURON_SPEC = ("vllm-neuron with a speculative_config: its features guide, \"Setting "
               "`--speculative-config` disables async scheduling automatically\" (its warning line not found)")
ENGINE_FIELDS = {  # VllmConfig.__str__ field -> parser
    "max_seq_len": int,
    "tensor_parallel_size": int,
    "enable_prefix_caching": lambda v: {"True": True, "False": False}.get(v),
}


def _option_name(key: str) -> str:
    return key[3:] if key.startswith("no-") else key


def vllm_serve_options(options: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Server options with every false boolean written as its `no-` form set to true.

    `{enable-prefix-caching: false}` -> `{no-enable-prefix-caching: true}`;
    `{no-enable-prefix-caching: false}` -> `{enable-prefix-caching: true}`. Other values are kept.
    `overrides` (a profile's own server_options) replace the option of the same name in either form:
    `{async-scheduling: true}` with overrides `{no-async-scheduling: true}` -> `{no-async-scheduling: true}`.
    """
    for given in (options, overrides or {}):
        if not isinstance(given, dict):
            raise ValueError(f"vllm_serve_options: expected a mapping of option names, got {type(given).__name__}")
    if overrides:
        replaced = {_option_name(key) for key in overrides}
        options = {**{k: v for k, v in options.items() if _option_name(k) not in replaced}, **overrides}
    rendered: dict[str, Any] = {}
    for key, value in options.items():
        if value is False:
            key, value = (key[3:], True) if key.startswith("no-") else ("no-" + key, True)
        if key in rendered or (key.startswith("no-") and key[3:] in rendered) or ("no-" + key) in rendered:
            raise ValueError(f"vllm_serve_options: option {key!r} is given twice (directly and as its no- form)")
        rendered[key] = value
    return rendered


SCALAR_ARG = re.compile(r"'(\w+)': ('[^']*'|-?\d+|True|False|None)(?=[,}])")


def _non_default_args(text: str) -> dict[str, Any] | None:
    """The dict repr of the non-default args; when a value is not a literal (an object's repr),
    the scalar entries are still read one by one."""
    parsed = _literal(text)
    if isinstance(parsed, dict):
        return parsed
    if not text.startswith("{"):
        return None
    return {key: _literal(value) for key, value in SCALAR_ARG.findall(text)}


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def vllm_effective_config(log: str | list[str]) -> dict[str, Any]:
    """The effective configuration of the LAST server start found in a startup log.

    Returns {"found": bool, "vllm_version", "non_default_args": {...} or None, "engine": {...} or None,
    "scheduling": {"mode", "why"}} where engine holds max_seq_len, tensor_parallel_size, enable_prefix_caching and
    speculative (None, or {method, model, num_speculative_tokens}), and scheduling is vllm_scheduling's.
    """
    lines = log.splitlines() if isinstance(log, str) else list(log)
    non_default: dict[str, Any] | None = None
    engine: dict[str, Any] | None = None
    version = device = off = plugin = None
    preamble = None  # a plugin line since the last engine line: the next start's, logged before its non-default args
    for line in lines:
        if NON_DEFAULT in line:
            parsed = _non_default_args(line.split(NON_DEFAULT, 1)[1].strip())
            if parsed is not None:
                # a new start: forget the older engine line and what the older start said about its scheduling
                non_default, engine, version, device, off, plugin = parsed, None, None, None, None, preamble
            continue
        match = ENGINE.search(line)
        if match is None:
            found_plugin = PLUGIN.search(line)
            if found_plugin:
                plugin = preamble = found_plugin.group("plugin")
            elif _says_async_off(line):
                off = line.strip()
            continue
        preamble = None
        config = match.group("config")
        version = match.group("version")
        found_device = DEVICE.search(config)
        device = found_device.group("device").strip() if found_device else None
        engine = {}
        for field, parse in ENGINE_FIELDS.items():
            found = re.search(rf"(?:^|, ){field}=([^,]*)", config)
            engine[field] = parse(found.group(1)) if found else None
        spec = SPEC.search(config)
        if spec is None or spec.group("method") is None:
            engine["speculative"] = None
        else:
            engine["speculative"] = {"method": _literal(spec.group("method")), "model": _literal(spec.group("model")),
                                     "num_speculative_tokens": _literal(spec.group("k"))}
    scheduling = vllm_scheduling(off, non_default, device, (engine or {}).get("speculative"), plugin)
    return {"found": engine is not None, "vllm_version": version, "non_default_args": non_default, "engine": engine,
            "scheduling": scheduling}


def _says_async_off(line: str) -> bool:
    return bool(ASYNC_OFF.search(line)) or all(word.search(line) for word in NEURON_OFF)


def vllm_scheduling(off_line: str | None, non_default: dict[str, Any] | None, device: str | None,
                    speculative: Any = None, plugin: str | None = None) -> dict[str, str]:
    """{"mode": "async" | "sync" | "unknown", "why": the evidence} of one start, first match wins:

    1. a line of the start saying async scheduling is off (vLLM's own, or the vllm-neuron warning's words): sync;
    2. the CPU build (device_config=cpu, no platform plugin): sync, whatever was asked, as cpu.py forces it after the
       options;
    3. the non-default args' async_scheduling (--async-scheduling / --no-async-scheduling given);
    4. vllm-neuron (its plugin line, or device_config=neuron without another plugin), per its features guide: sync
       with a speculative_config, else async;
    5. otherwise unknown (on other platforms the engine enables it silently unless the platform turns it off silently,
       as cpu.py does: nothing in the log tells the two apart).
    """
    if off_line:
        return {"mode": "sync", "why": off_line}
    if device == "cpu" and plugin is None:
        return {"mode": "sync", "why": CPU_RULE}
    asked = (non_default or {}).get("async_scheduling")
    if isinstance(asked, bool):
        return {"mode": "async" if asked else "sync", "why": f"non-default args: 'async_scheduling': {asked!r}"}
    if plugin == "neuron" or (plugin is None and device == "neuron"):
        return {"mode": "sync", "why": NEURON_SPEC} if speculative else {"mode": "async", "why": NEURON_DEFAULT}
    where = f"device_config={device or 'not found'}" + (f", platform plugin {plugin}" if plugin else "")
    return {"mode": "unknown", "why": f"no line of this start says ({where})"}


def _asked_bool(config: dict[str, Any], key: str) -> bool | None:
    if ("no-" + key) in config:
        return not bool(config["no-" + key])
    if key in config:
        return bool(config[key])
    return None


def vllm_config_mismatches(effective: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Where the engine's effective configuration differs from the rendered `vllm serve --config`.

    Checked: tensor-parallel-size, max-model-len, max-num-seqs, prefix caching, async scheduling (where the mode is
    known), and the speculative method, draft model and number of speculative tokens. An empty list means they agree.
    """
    if not effective.get("found"):
        return ["the startup log has no 'Initializing a V1 LLM engine ... with config:' line: the effective configuration is unknown"]
    engine = effective["engine"]
    args = effective.get("non_default_args") or {}
    wrong: list[str] = []

    def differ(name: str, asked: Any, got: Any) -> None:
        if asked != got:
            wrong.append(f"{name}: asked {asked!r}, engine has {got!r}")

    differ("tensor_parallel_size", int(config.get("tensor-parallel-size", 1)), engine["tensor_parallel_size"])
    if "max-model-len" in config:
        differ("max_model_len", int(config["max-model-len"]), engine["max_seq_len"])
    if "max-num-seqs" in config:  # not in the engine line: the API server's non-default args carry it
        differ("max_num_seqs", int(config["max-num-seqs"]), args.get("max_num_seqs", "(default: not in non-default args)"))
    prefix = _asked_bool(config, "enable-prefix-caching")
    if prefix is not None:
        differ("enable_prefix_caching", prefix, engine["enable_prefix_caching"])
    asked_async = _asked_bool(config, "async-scheduling")
    mode = (effective.get("scheduling") or {}).get("mode", "unknown")
    if asked_async is not None and mode != "unknown" and asked_async != (mode == "async"):
        wrong.append(f"async_scheduling: asked {asked_async!r}, engine schedules {mode} "
                     f"({effective['scheduling']['why']})")
    asked_spec = config.get("speculative-config")
    got_spec = engine["speculative"]
    if not asked_spec:
        if got_spec is not None:
            wrong.append(f"speculative_config: asked none, engine has {got_spec!r}")
    elif got_spec is None:
        wrong.append(f"speculative_config: asked {asked_spec!r}, engine has none")
    else:
        differ("speculative method", asked_spec.get("method"), got_spec["method"])
        differ("speculative draft model", asked_spec.get("model"), got_spec["model"])
        differ("num_speculative_tokens", asked_spec.get("num_speculative_tokens"), got_spec["num_speculative_tokens"])
    return wrong
