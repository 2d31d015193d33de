"""A failed server start, read from its journal for the causes the project knows a way out of: each one found adds to
the failure's reason the setting that gets past it (vllm_bench's profile_failed.yml words the reason with
eagle3_compile_cache_failure, compile_cache/key.py, which hands it the journal's lines of that start).

One cause today: the Neuron plugin insisting on on-device sampling for speculative decoding. AWS's own pages disagree
(Neuron SDK 2.32, vllm-neuron docs): the reference configuration (docs/guides/reference-configuration.md) gives
`on_device_sampling_config` the default "null (CPU sampling)" and calls it "Required for ... speculative decoding"; the
migration guide (docs/getting-started/migration-nxdi-to-vllm-neuron.md) says "On-device sampling: Enabled by default";
the EAGLE3 tutorial (docs/tutorials/tutorial-eagle3-speculative-decoding-llama-3-1.md), which the project follows, sets
none. If the plugin does insist, the EAGLE3 start fails after a long compile, and the way out is a server option the
project already passes through: `additional-config`, which the unit's `vllm serve --config` file turns into
`--additional-config '{"neuron_config": {"on_device_sampling_config": {}}}'`.

What the match is based on: the plugin's own message could not be read here (no vllm-neuron source, no trn2 journal),
so no wording of it is assumed. A line counts when it is an error line and names on-device sampling in any spelling
the docs and the config use (`on_device_sampling_config`, "on-device sampling", `OnDeviceSamplingConfig`, any case).
An error line is one logged at ERROR or CRITICAL (vLLM's `LEVEL MM-DD hh:mm:ss [file.py:N]` prefix, which the engine
core puts on every line of the traceback it logs), or one with no log level that names an error, an exception, an
assertion, a failure or a traceback (the API server's raw traceback: `ValueError: ...`; pydantic's `Value error, ...`
and `Assertion failed, ...` under a ValidationError). A line logged at DEBUG, INFO or WARNING never counts, whatever it
holds: vLLM logs its non-default args at INFO (with this very setting once it is set), and a warning is not what
stopped the start (a real one carries `OSError: [Errno 24] Too many open files` in its text).
"""
from __future__ import annotations

import re
from typing import Any

# The setting as an operator writes it in an inventory's group_vars, and the argument vllm serve then gets.
ON_DEVICE_SAMPLING_SETTING = ("eagle3_server_options: "
                              "{additional-config: {neuron_config: {on_device_sampling_config: {}}}}")
ON_DEVICE_SAMPLING_ARGUMENT = """--additional-config '{"neuron_config": {"on_device_sampling_config": {}}}'"""

ON_DEVICE_SAMPLING = re.compile(r"on[-_ ]?device[-_ ]?sampling", re.IGNORECASE)
# The first level word of a line is its level (vLLM's logger writes it before the time and the file).
LEVEL = re.compile(r"\b(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL"})
ERROR_WORDS = re.compile(r"error|exception|assert|fail|traceback", re.IGNORECASE)


def error_line(line: str) -> bool:
    """A line that reports an error: logged at ERROR or above, or with no log level and naming an error."""
    level = LEVEL.search(line)
    if level:
        return level.group(1) in ERROR_LEVELS
    return bool(ERROR_WORDS.search(line))


def on_device_sampling_errors(lines: Any) -> list[str]:
    """The error lines of a journal that name on-device sampling (the Neuron plugin asking for it)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    if not isinstance(lines, (list, tuple)):
        return []
    return [line for line in lines if isinstance(line, str) and ON_DEVICE_SAMPLING.search(line) and error_line(line)]


def start_failure_hints(lines: Any) -> list[str]:
    """What to change, one sentence per cause the journal's lines show; [] when none is known."""
    hints = []
    if on_device_sampling_errors(lines):
        hints.append("the server's journal names on-device sampling in an error: the Neuron plugin wants it for "
                     "speculative decoding, which AWS's EAGLE3 tutorial does not set. Add it to the inventory's server "
                     f"options, {ON_DEVICE_SAMPLING_SETTING} (vllm serve then gets {ON_DEVICE_SAMPLING_ARGUMENT}), and "
                     "start a new run: every profile, the baseline too, is served and compiled again with it")
    return hints


def with_start_failure_hints(reason: str, lines: Any) -> str:
    """`reason` followed by the hints of the journal's lines; `reason` itself, unchanged, when there are none."""
    hints = start_failure_hints(lines)
    if not hints:
        return reason
    return "; ".join(([reason] if reason else []) + hints)
