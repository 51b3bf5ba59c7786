"""H200 sweep of tile, warps, stages and split target of kernels/mxfp4_mm's GEMM through Triton's
JIT, timed like bench_triton_kernels.py (L2 flushed, CUDA events, mean), with torch's bf16
A @ B.T of the same shape in the same run.

    PYTHONPATH=. [WARPS=4,8] [BNS=64,128] [TARGETS=132,264] [BM64=1 | BMS=64,128] [ITERS=15] [ONLY=8,16] \\
        python benchmarks/sweep_mm_tiles.py

Per shape it prints every configuration's mean (us) and check, then the best passing one. m <= 16
runs BM 16, m <= 32 BM 32, larger m BM 64 (and 128 for m >= 128 unless BM64=1) with the A
pre-pass; BMS lists the BM to try instead (those >= min(m, 64)).

The results in benchmarks/results/h200-2026-11-30-mm-split/ came from this script, two of them
with kernel paths that were measured and dropped: DEQ (both operands widened to bf16 for tl.dot;
commit 1d5afcd has it) and FP8 (e2m1 codes mapped to e4m3 bytes, one e4m3 tl.dot per 32-block of
k, scaled by both blocks' scales into the fp32 sums; never committed). The kernel as shipped has
only tl.dot_scaled.
"""

from __future__ import annotations

import copy
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import load_module as _load  # noqa: E402

from submitgen.problems import get_problem  # noqa: E402

bench = _load(ROOT / "benchmarks/bench_triton_kernels.py")  # its timing and plan runner


def _ints(name: str, default: str) -> tuple[int, ...]:
    return tuple(int(x) for x in os.environ.get(name, default).split(","))


def variant(bm: int, bn: int, preq: bool, warps: int, stages: int, target: int):
    """launch.py with one GEMM specialization "g" of these parameters and its split target."""
    lm = _load(ROOT / "kernels/mxfp4_mm/launch.py", f"lm_{bm}_{bn}_{preq}_{warps}_{stages}_{target}")
    entry = copy.deepcopy(lm.TRITON["mm_64x128_q" if preq else "mm_16x64"])
    entry.pop("arch", None)
    entry["constexprs"].update(BM=bm, BN=bn, A_PREQ=preq)
    entry["num_warps"], entry["num_stages"] = warps, stages
    lm.TRITON = {"g": entry, "mm_quant_a": lm.TRITON["mm_quant_a"]}
    lm.TARGETS = {"g": target}
    lm.config = lambda m, n, k: ("g", bm, bn, _splits(lm, m, n, k, bm, bn))
    return lm


def _splits(lm, m: int, n: int, k: int, bm: int, bn: int) -> int:
    steps = k // lm.BK
    tiles = -(-m // bm) * -(-n // bn)
    splits = 1
    for s in range(1, steps + 1):
        if steps % s == 0:
            splits = s
            if tiles * s >= lm.TARGETS["g"]:
                break
    return splits


def _tile_rows(m: int) -> list[int]:
    if os.environ.get("BMS"):
        return [bm for bm in _ints("BMS", "") if bm >= min(m, 64)]
    if m <= 16:
        return [16]
    if m <= 32:
        return [32]
    return [64, 128] if m >= 128 and not os.environ.get("BM64") else [64]


def main() -> None:
    problem = get_problem("mxfp4-mm")
    kernels = _load(ROOT / "kernels/mxfp4_mm/mxfp4_mm.py", "km")
    iters = int(os.environ.get("ITERS", "20"))
    only = os.environ.get("ONLY")
    results = {}
    t0 = time.time()
    for spec in list(problem.tests) + list(problem.benchmarks):
        m = spec["m"]
        if only and str(m) not in only.split(","):
            continue
        data = problem.generate_input(spec, "cuda")
        ref = problem.reference(data)
        a, b = data[0], data[1]
        label = problem.shape_label(spec)
        torch_us = bench.timed(lambda a=a, b=b: a @ b.T, iters)
        print(f"{label} torch_bf16 {torch_us:.2f}", flush=True)
        best = None
        grid = itertools.product(_tile_rows(m), _ints("BNS", "64,128"), _ints("WARPS", "4,8"), (2, 3),
                                 _ints("TARGETS", "132,264"))
        for bm, bn, warps, stages, target in grid:
            name = f"{label} bm{bm} bn{bn} w{warps} s{stages} t{target}"
            try:
                lm = variant(bm, bn, m > 32, warps, stages, target)
                fn = bench.plan_runner(lm, kernels, data)
                chk = problem.check(fn().clone(), ref)
                t = bench.timed(fn, iters)
            except Exception as e:  # a configuration Triton cannot compile is reported, not fatal
                print(f"{name} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            splits = lm.config(m, spec["n"], spec["k"])[3]
            print(f"{name} splits{splits} {t:.2f} pass={chk.passed} mism={chk.mismatches}", flush=True)
            if chk.passed and (best is None or t < best[0]):
                best = (t, bm, bn, warps, stages, target)
        results[label] = (torch_us, best)
        print(f"BEST {label} torch {torch_us:.2f} best {best} elapsed {time.time() - t0:.0f}s", flush=True)
    print("GEOMEAN torch", bench.geomean(r[0] for r in results.values()),
          "best", bench.geomean(r[1][0] for r in results.values() if r[1]))


if __name__ == "__main__":
    main()
