"""Where the time of one mxfp4-mm call goes on a CUDA GPU: the event-timed floor of an empty
Triton launch, and per kernel the device-side durations that torch.profiler (CUPTI) records, for
torch's bf16 ``A @ B.T`` and for chosen configurations of kernels/mxfp4_mm (sweep_mm_tiles's
variant()), all with the L2 flushed before every call.

    PYTHONPATH=. python experiments/probe_mm_floor.py
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import load_module as _load  # noqa: E402

from submitgen.problems import get_problem  # noqa: E402

sweep = _load(ROOT / "experiments/sweep_mm_tiles.py", "sweep")
bench = sweep.bench

# shape -> configurations (bm, bn, bk, preq, bf16, warps, stages, target), as sweep_mm_tiles names them
CONFIGS = {
    (4, 2880, 512): [(16, 32, 128, 0, 1, 4, 3, 396), (16, 32, 128, 0, 1, 4, 3, 1),
                     (16, 64, 512, 0, 1, 4, 3, 1)],
    (8, 2112, 7168): [(16, 64, 128, 0, 0, 8, 3, 264), (16, 64, 128, 0, 1, 8, 3, 264)],
    (256, 3072, 1536): [(64, 64, 128, 1, 1, 4, 3, 264)],
}


@triton.jit
def _empty(x_ptr):
    pass


def _profile(fn, iters: int) -> dict[str, float]:
    """Mean device µs per call of each kernel fn launches (flushed L2 before each call)."""
    flush = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(iters):
            flush.fill_(1.0)
            fn()
        torch.cuda.synchronize()
    total: dict[str, float] = defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and "fill" not in ev.name:
            total[ev.name[:60]] += ev.device_time / iters
    return dict(total)


def main() -> None:
    x = torch.empty(16, device="cuda")
    print(f"empty Triton kernel, event-timed: {bench.timed(lambda: _empty[(1,)](x), 30):.2f} us", flush=True)
    print(f"empty Triton kernel, 132 blocks: {bench.timed(lambda: _empty[(132,)](x), 30):.2f} us", flush=True)
    problem = get_problem("mxfp4-mm")
    kernels = _load(ROOT / "kernels/mxfp4_mm/mxfp4_mm.py", "km")
    for (m, n, k), cfgs in CONFIGS.items():
        data = problem.generate_input({"m": m, "n": n, "k": k, "seed": 1}, "cuda")
        a, b = data[0], data[1]
        fn = lambda a=a, b=b: a @ b.T  # noqa: E731
        print(f"m={m} n={n} k={k} torch: event {bench.timed(fn, 20):.2f} us; kernels {_profile(fn, 20)}",
              flush=True)
        for cfg in cfgs:
            lm = sweep.variant(*cfg[:3], bool(cfg[3]), *cfg[4:])
            fn = bench.plan_runner(lm, kernels, data)
            splits = lm.config(m, n, k)[3]
            print(f"m={m} n={n} k={k} {cfg} splits {splits}: event {bench.timed(fn, 20):.2f} us; "
                  f"kernels {_profile(fn, 20)}", flush=True)


if __name__ == "__main__":
    main()
