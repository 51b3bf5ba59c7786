"""H200 sweep of tile, warps, stages and split target of kernels/mxfp4_mm's GEMM through Triton's
JIT, timed like bench_triton_kernels.py (L2 flushed, CUDA events, mean), with torch's bf16
A @ B.T of the same shape in the same run.

    PYTHONPATH=. [WARPS=4,8] [STAGES=2,3] [BNS=64,128] [BKS=128] [TARGETS=132,264] [BM64=1 | BMS=64,128]
        [PREQ=0,1] [ABF16=0,1] [MAXNREG=0,96] [ITERS=15] [ONLY=8,16] [PRECOMPILE=12] \\
        python experiments/sweep_mm_tiles.py

Per shape it prints every configuration's mean (us) and check, then the best passing one. m <= 16
runs BM 16, m <= 32 BM 32, larger m BM 64 (and 128 for m >= 128 unless BM64=1) with the A
pre-pass; BMS lists the BM to try instead (those up to max(m, 16)).

The results in 6dcc63c:benchmarks/results/h200-2026-11-30-mm-split/ came from this script, two of them
with kernel paths that were measured and dropped: DEQ (both operands widened to bf16 for tl.dot;
commit 1d5afcd has it) and FP8 (e2m1 codes mapped to e4m3 bytes, one e4m3 tl.dot per 32-block of
k, scaled by both blocks' scales into the fp32 sums; never committed). Those in
6dcc63c:benchmarks/results/h200-2026-11-30-mm-abf16/ compare A as e2m1 codes (ABF16=0) with A as their
bf16 values (ABF16=1, shipped for sm_90), and two more dropped paths, whose code is in commit
56e9468: B widened by hand for tl.dot (sweep2_bdeq_*, ABF16=2 there) and C^T = B A^T (sweep3_swap_*,
ABF16=3 there). The kernel as shipped has only tl.dot_scaled.
"""

from __future__ import annotations

import copy
import itertools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # _common lives in benchmarks/

from _common import load_module as _load  # noqa: E402

from submitgen.problems import get_problem  # noqa: E402

bench = _load(ROOT / "benchmarks/bench_triton_kernels.py")  # its timing and plan runner


def _ints(name: str, default: str) -> tuple[int, ...]:
    return tuple(int(x) for x in os.environ.get(name, default).split(","))


def rs_for(bm: int, bn: int) -> int:
    """Splits the last split sums per load (the kernel's RS): about 4096 partial sums a load."""
    return max(1, min(8, 4096 // (bm * bn)))


def variant(bm: int, bn: int, bk: int, preq: bool, bf16: int, warps: int, stages: int, target: int,
            maxnreg: int = 0):
    """launch.py with one GEMM specialization "g" of these parameters and its split target."""
    tag = f"{bm}_{bn}_{bk}_{preq}_{bf16}_{warps}_{stages}_{target}_{maxnreg}"
    lm = _load(ROOT / "kernels/mxfp4_mm/launch.py", f"lm_{tag}")
    entry = copy.deepcopy(lm.TRITON["mm_m64" if preq else "mm_m16"])
    entry.pop("arch", None)
    entry["plan"] = {"target": target}
    rs = rs_for(bm, bn)
    # bf16: 0 = A to e2m1 codes for dot_scaled, 1 = A as the bf16 values of those codes
    entry["constexprs"].update(BM=bm, BN=bn, BK=bk, A_PREQ=preq, A_BF16=bf16 > 0, RS=rs)
    if maxnreg:
        entry["options"] = {"maxnreg": maxnreg}
    entry["num_warps"], entry["num_stages"] = warps, stages
    quant = copy.deepcopy(lm.TRITON["mm_quant_a"])
    quant.pop("arch", None)
    quant["constexprs"]["OUT_BF16"] = bf16 > 0
    lm.TRITON = {"g": entry, "mm_quant_a": quant}
    lm.config = lambda m, n, k: ("g", bm, bn, lm.split_count(m, n, k, bm, bn, bk, target))
    return lm


def _tile_rows(m: int) -> list[int]:
    if os.environ.get("BMS"):
        return [bm for bm in _ints("BMS", "") if bm <= max(m, 16)]
    if m <= 16:
        return [16]
    if m <= 32:
        return [32]
    return [64, 128] if m >= 128 and not os.environ.get("BM64") else [64]


def _grid(m: int):
    preqs = _ints("PREQ", "1") if m > 32 else (0,)
    return list(itertools.product(_tile_rows(m), _ints("BNS", "64,128"), _ints("BKS", "128"), preqs,
                                  _ints("ABF16", "0"), _ints("WARPS", "4,8"), _ints("STAGES", "2,3"),
                                  _ints("MAXNREG", "0"), _ints("TARGETS", "132,264")))


def _variant(cfg: tuple[int, ...]):
    """variant() of one _grid configuration."""
    bm, bn, bk, preq, bf16, warps, stages, maxnreg, target = cfg
    return variant(bm, bn, bk, bool(preq), bf16, warps, stages, target, maxnreg)


def _specs(problem):
    only = os.environ.get("ONLY")
    specs = list(problem.tests) + list(problem.benchmarks)
    return [s for s in specs if not only or str(s["m"]) in only.split(",")]


def _compile_one(job) -> str:
    """Runs one configuration once on one shape, so that Triton's cache holds its kernels."""
    spec, cfg = job
    problem = get_problem("mxfp4-mm")
    kernels = _load(ROOT / "kernels/mxfp4_mm/mxfp4_mm.py", "km")
    try:
        bench.plan_runner(_variant(cfg), kernels, problem.generate_input(spec, "cuda"))()
        return ""
    except Exception as e:  # reported again, with the configuration, by the timed pass
        return f"{cfg}: {type(e).__name__}"


def _precompile(problem, workers: int) -> None:
    """Compiles every configuration in ``workers`` processes first (Triton's JIT compiles on the
    first call, one kernel at a time); the timed pass then finds them in the cache. The split
    target does not change the kernel, so one target per configuration is compiled."""
    import multiprocessing

    jobs = {}
    for spec in _specs(problem):
        for cfg in _grid(spec["m"]):
            jobs.setdefault((spec["m"] % 16 == 0, cfg[:-1]), (dict(spec), cfg))  # any target
    t0 = time.time()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        failed = [r for r in pool.map(_compile_one, list(jobs.values()), chunksize=1) if r]
    print(f"precompiled {len(jobs)} kernels in {time.time() - t0:.0f}s ({len(failed)} failed)", flush=True)


def main() -> None:
    problem = get_problem("mxfp4-mm")
    kernels = _load(ROOT / "kernels/mxfp4_mm/mxfp4_mm.py", "km")
    iters = int(os.environ.get("ITERS", "20"))
    if int(os.environ.get("PRECOMPILE", "0")) > 1:
        _precompile(problem, int(os.environ["PRECOMPILE"]))
    results = {}
    t0 = time.time()
    for spec in _specs(problem):
        m = spec["m"]
        data = problem.generate_input(spec, "cuda")
        ref = problem.reference(data)
        a, b = data[0], data[1]
        label = problem.shape_label(spec)
        torch_us = bench.timed(lambda a=a, b=b: a @ b.T, iters)
        print(f"{label} torch_bf16 {torch_us:.2f}", flush=True)
        best = None
        for cfg in _grid(m):
            bm, bn, bk, preq, bf16, warps, stages, maxnreg, target = cfg
            name = f"{label} bm{bm} bn{bn} bk{bk} preq{preq} bf16{bf16} w{warps} s{stages} r{maxnreg}"
            name += f" t{target}"
            try:
                lm = _variant(cfg)
                fn = bench.plan_runner(lm, kernels, data)
                chk = problem.check(fn().clone(), ref)
                t = bench.timed(fn, iters)
            except Exception as e:  # a configuration Triton cannot compile is reported, not fatal
                print(f"{name} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            splits = lm.config(m, spec["n"], spec["k"])[3]
            print(f"{name} splits{splits} {t:.2f} pass={chk.passed} mism={chk.mismatches}", flush=True)
            if chk.passed and (best is None or t < best[0]):
                best = (round(t, 2), bm, bn, bk, preq, bf16, warps, stages, maxnreg, target)
        results[label] = (torch_us, best)
        print(f"BEST {label} torch {torch_us:.2f} best {best} elapsed {time.time() - t0:.0f}s", flush=True)
    print("GEOMEAN torch", bench.geomean(r[0] for r in results.values()),
          "best", bench.geomean(r[1][0] for r in results.values() if r[1]))


if __name__ == "__main__":
    main()
