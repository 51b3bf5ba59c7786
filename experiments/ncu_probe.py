"""Run one emitted submission on one benchmark shape, for a profiler to watch (no timing here).

    python experiments/ncu_probe.py moe|mla FILE INDEX [--calls 2]

The first call runs the file's plan; later calls are the ones to profile, e.g. under
``ncu -k regex:gate_up --launch-skip 1 --launch-count 1 --section WarpStateStats ...``. A one-off
probe: it says where a kernel stalls, which timings alone do not.
"""
import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import load_module  # noqa: E402

from submitgen.problems import mixed_mla, moe_mxfp4  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("problem", choices=["moe", "mla"])
ap.add_argument("file")
ap.add_argument("index", type=int)
ap.add_argument("--calls", type=int, default=2)
a = ap.parse_args()
prob = moe_mxfp4 if a.problem == "moe" else mixed_mla
mod = load_module(Path(a.file), "probe_sub")
data = prob.generate_input(prob.BENCHMARKS[a.index], "cuda")
for _ in range(a.calls):
    out = mod.custom_kernel(data)
torch.cuda.synchronize()
print(a.problem, a.index, prob.BENCHMARKS[a.index], tuple(out.shape))
