"""Each rendered /etc/eagle3/<profile>.yaml, read by the installed vLLM exactly as `vllm serve --config` reads it.

The host's own vLLM runs its CLI entry point, vllm.entrypoints.cli.main.main(), with
argv `vllm serve --config /etc/eagle3/<profile>.yaml`: the root `vllm` parser, every subcommand, the
config-file loader (FlexibleArgumentParser.load_config_file, called on the root parser, which is where
0.29 drops `false` values) and the serve subcommand's validate(). Only the dispatch is replaced:
instead of starting a server it records the parsed arguments and the engine arguments built from
them (AsyncEngineArgs.from_cli_args, as the server does). Nothing is started on the host.
"""
from __future__ import annotations

import json

import pytest
from rehearsal_host import HOST, PORT

VENV = "/opt/eagle3/venv"
TARGET, DRAFT = "/var/lib/eagle3/models/target", "/var/lib/eagle3/models/draft"
PROFILES = ("baseline", "eagle3")

LOADER = r"""
import json, sys
import vllm.entrypoints.cli.serve as serve
from vllm.engine.arg_utils import AsyncEngineArgs

seen = []

def record(args):
    engine = AsyncEngineArgs.from_cli_args(args)
    seen.append({
        "args": {key: getattr(args, key, "(absent)") for key in
                 ("model", "model_tag", "served_model_name", "host", "port", "max_num_seqs", "max_model_len",
                  "enable_prefix_caching", "enforce_eager", "tensor_parallel_size", "speculative_config")},
        "engine": {key: getattr(engine, key) for key in
                   ("model", "max_num_seqs", "max_model_len", "enable_prefix_caching", "enforce_eager",
                    "tensor_parallel_size", "speculative_config")},
    })

serve.ServeSubcommand.cmd = staticmethod(record)  # the dispatch: record instead of serving
from vllm.entrypoints.cli.main import main
for path in sys.argv[1:]:
    sys.argv = ["vllm", "serve", "--config", path]
    main()
print("LOADED " + json.dumps(seen, default=repr))
"""


@pytest.fixture(scope="module")
def loaded() -> dict:
    paths = [f"/etc/eagle3/{profile}.yaml" for profile in PROFILES]
    HOST.run(f"cat > /tmp/eagle3-loader.py <<'EOF'\n{LOADER}\nEOF")
    result = HOST.run(f"env VLLM_LOGGING_LEVEL=ERROR VLLM_NO_USAGE_STATS=1 HF_HUB_OFFLINE=1 "
                      f"{VENV}/bin/python /tmp/eagle3-loader.py {' '.join(paths)}; rm -f /tmp/eagle3-loader.py")
    lines = [line for line in result.stdout.splitlines() if line.startswith("LOADED ")]
    assert result.rc == 0 and lines, result.stdout[-2000:] + result.stderr[-3000:]
    return dict(zip(PROFILES, json.loads(lines[-1][7:]), strict=True))


@pytest.mark.parametrize("profile", PROFILES)
def test_vllm_reads_the_tutorial_flags_from_the_rendered_config(loaded, profile):
    args, engine = loaded[profile]["args"], loaded[profile]["engine"]
    assert args["model"] == TARGET and engine["model"] == TARGET
    assert args["served_model_name"] == [TARGET]
    assert (args["host"], args["port"]) == ("127.0.0.1", PORT)
    assert args["max_num_seqs"] == 2 and engine["max_num_seqs"] == 2
    assert args["max_model_len"] == 2048 and engine["max_model_len"] == 2048
    # The point of item 1: `enable-prefix-caching: false` would leave None (= on); the rendered no- form reaches it.
    assert args["enable_prefix_caching"] is False and engine["enable_prefix_caching"] is False
    assert engine["enforce_eager"] is True
    assert engine["tensor_parallel_size"] == 1  # not passed on CPU: vLLM's default


def test_vllm_parses_the_speculative_config_of_the_eagle3_profile(loaded):
    expected = {"method": "eagle3", "model": DRAFT, "num_speculative_tokens": 3}
    assert loaded["eagle3"]["args"]["speculative_config"] == expected
    assert loaded["eagle3"]["engine"]["speculative_config"] == expected
    assert loaded["baseline"]["engine"]["speculative_config"] is None
