#!/usr/bin/env python3
"""Time a training step of the rehearsal's target under each OpenMP wait policy, with N other busy processes.

    python scripts/perf/omp_wait.py [--busy N] [--steps 10]    (a Python with torch and transformers, e.g. a
                                                                  rehearsal host's /opt/eagle3/venv)

The generator's own model, corpus, optimizer and step (make_rehearsal_models.py: 2 windows of 640 tokens, 24 layers,
hidden 64, 2 threads); each policy in a fresh interpreter because OpenMP reads OMP_WAIT_POLICY once. Prints the mean
seconds per step after 2 warm-up steps (docs/performance.md, "The trained pair", "Training time").
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[2] / "roles/model_assets/files"
STEP = r'''
import random, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import torch
import make_rehearsal_models as m
from transformers import LlamaConfig, LlamaForCausalLM
torch.set_num_threads(2)
out = Path(tempfile.mkdtemp())
lines = m.chain_lines(1234, 200) * 4
random.Random(1234).shuffle(lines)
(out / "s.txt").write_text("".join(lines))
fast = m.build_tokenizer(out / "s.txt", 1024, out / "tok")
ids = torch.tensor(fast("".join(lines)).input_ids)
model = LlamaForCausalLM(LlamaConfig(**m.llama_config(len(fast), 64, 24, fast, "float32")))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
g = torch.Generator().manual_seed(1)
steps = int(sys.argv[2])
for i in range(steps + 2):
    if i == 2:
        t0 = time.perf_counter()
    starts = torch.randint(0, len(ids) - 641, (2,), generator=g)
    x = torch.stack([ids[s:s + 640] for s in starts])
    loss = model(input_ids=x, labels=x).loss
    opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
print(f"{(time.perf_counter() - t0) / steps:.3f}")
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="busy-loop processes beside the timing")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.busy)]
    try:
        for policy in ("PASSIVE", "ACTIVE", None):
            env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
            if policy:
                env["OMP_WAIT_POLICY"] = policy
            seconds = subprocess.run([sys.executable, "-c", STEP, str(GENERATOR), str(args.steps)], env=env,
                                     check=True, capture_output=True, text=True).stdout.split()[-1]
            print(f"busy={args.busy} OMP_WAIT_POLICY={policy or 'unset'}: {seconds} s a step", flush=True)
    finally:
        for proc in busy:  # only the processes started here, by PID
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
