"""H200 sweep of tile, warps, stages and split target of kernels/mxfp4_mm's GEMM through Triton's
JIT, timed like bench_triton_kernels.py (L2 flushed, CUDA events, mean), with torch's bf16
A @ B.T of the same shape in the same run.

    PYTHONPATH=. [WARPS=4,8] [TARGETS=132,264] [BM64=1] [ITERS=15] python benchmarks/sweep_mm_tiles.py

The results in benchmarks/results/h200-2026-11-30-mm-split/ came from this script with two kernel
paths that were measured and dropped: DEQ (both operands widened to bf16 for tl.dot; commit
1d5afcd has it) and FP8 (e2m1 codes mapped to e4m3 bytes, one e4m3 tl.dot per 32-block of k,
scaled by both blocks' scales into the fp32 sums; never committed). The kernel as shipped has
only tl.dot_scaled, so FP8=1 fails now; run with FP8=0."""
import copy, importlib.util, math, sys, time, itertools, os
import torch
sys.path.insert(0, os.getcwd())
from submitgen.problems import get_problem, mxfp4
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); mod = importlib.util.module_from_spec(spec); sys.modules[name]=mod; spec.loader.exec_module(mod); return mod
bench = load("benchmarks/bench_triton_kernels.py", "bench")
problem = get_problem("mxfp4-mm")
km = load("kernels/mxfp4_mm/mxfp4_mm.py", "km")
ITERS = int(os.environ.get("ITERS", "20"))

def variant(bm, bn, preq, warps, stages, target, fp8=os.environ.get("FP8", "0") == "1"):
    lm = load("kernels/mxfp4_mm/launch.py", f"lm_{bm}_{bn}_{preq}_{warps}_{stages}_{target}_{fp8}")
    e = copy.deepcopy(lm.TRITON["mm_64x128_q" if preq else "mm_16x64"])
    e.pop("arch", None)
    e["constexprs"].update(BM=bm, BN=bn, A_PREQ=preq)
    if fp8:
        e["constexprs"]["FP8"] = True
    e["num_warps"], e["num_stages"] = warps, stages
    lm.TRITON = {"g": e, "mm_quant_a": lm.TRITON["mm_quant_a"]}
    lm.TARGETS = {"g": target}
    lm.config = lambda m, n, k, _c=lm.config, _lm=lm: _cfg(_lm, m, n, k, bm, bn)
    return lm

def _cfg(lm, m, n, k, bm, bn):
    steps = k // lm.BK
    tiles = -(-m // bm) * -(-n // bn)
    splits = 1
    for s in range(1, steps + 1):
        if steps % s == 0:
            splits = s
            if tiles * s >= lm.TARGETS["g"]:
                break
    return "g", bm, bn, splits

shapes = list(problem.tests) + list(problem.benchmarks)
only = os.environ.get("ONLY")
results = {}
t0 = time.time()
for spec in shapes:
    m = spec["m"]
    if only and str(m) not in only.split(","): continue
    data = problem.generate_input(spec, "cuda")
    ref = problem.reference(data)
    a, b = data[0], data[1]
    label = problem.shape_label(spec)
    tb = bench.timed(lambda: a @ b.T, ITERS)
    print(f"{label} torch_bf16 {tb:.2f}", flush=True)
    bms = [16] if m <= 16 else [32] if m <= 32 else [64, 128] if m >= 128 else [64]
    if m <= 16: bms = [16]
    best = None
    WARPS = tuple(int(x) for x in os.environ.get("WARPS", "4,8").split(","))
    TARGETS = tuple(int(x) for x in os.environ.get("TARGETS", "132,264").split(","))
    if os.environ.get("BM64"): bms = [16] if m <= 16 else [32] if m <= 32 else [64]
    BNS = tuple(int(x) for x in os.environ.get("BNS", "64,128").split(","))
    for bm, bn, warps, stages, target in itertools.product(bms, BNS, WARPS, (2, 3), TARGETS):
        preq = m > 32
        try:
            lm = variant(bm, bn, preq, warps, stages, target)
            fn = bench.plan_runner(lm, km, data)
            chk = problem.check(fn().clone(), ref)
            t = bench.timed(fn, ITERS)
        except Exception as ex:
            print(f"{label} bm{bm} bn{bn} w{warps} s{stages} t{target} FAILED {type(ex).__name__}: {str(ex)[:200]}", flush=True)
            continue
        cfg = lm.config(spec["m"], spec["n"], spec["k"])
        print(f"{label} bm{bm} bn{bn} w{warps} s{stages} t{target} splits{cfg[3]} {t:.2f} pass={chk.passed} mism={chk.mismatches}", flush=True)
        if chk.passed and (best is None or t < best[0]):
            best = (t, bm, bn, warps, stages, target)
    results[label] = (tb, best)
    print(f"BEST {label} torch {tb:.2f} best {best} elapsed {time.time()-t0:.0f}s", flush=True)
g = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
print("GEOMEAN torch", g([r[0] for r in results.values()]), "best", g([r[1][0] for r in results.values() if r[1]]))
