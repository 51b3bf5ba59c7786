"""Correctness and timing of the Triton kernels in kernels/mxfp4_mm and kernels/mixed_mla, run
through Triton's own JIT launcher on a CUDA GPU (the H200 here), with several tile / split
configurations per shape, and torch's bf16 ``A @ B.T`` on the same mxfp4-mm shapes.

Timed the leaderboard's way: before every call a large fill evicts the L2, then CUDA events
around the call alone; the mean over the iterations is reported (the leaderboard ranks by mean).

    PYTHONPATH=. python benchmarks/bench_triton_kernels.py [--mm] [--mla] [--iters 30] [--sweep]

Without --sweep only the configuration each launch.py plan picks is run.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # also when loaded as a module (the tests do)

from _common import load_module as _load  # noqa: E402

from submitgen.problems import get_problem, mxfp4  # noqa: E402

_FLUSH: torch.Tensor | None = None


def timed(fn, iters: int) -> float:
    """Mean µs of ``fn()`` with the L2 flushed before each call."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        _FLUSH.fill_(1.0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sum(times) / len(times)


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


_BYTE_DTYPES = {mxfp4.FP4X2, mxfp4.E8M0} - {torch.uint8}


def plan_runner(launch_mod, kernel_mod, data):
    """``fn()`` running the launches ``launch_mod.plan(data)`` makes, each through Triton's JIT
    with its TRITON specialization (constexprs, num_warps, num_stages); returns the output."""
    out, launches = launch_mod.plan(data)
    calls = []
    for name, grid, _block, _lds, args in launches:
        spec = launch_mod.TRITON[name]
        fn = getattr(kernel_mod, spec["kernel"])
        # fp4x2 / e8m0 tensors go to Triton as their bytes (the kernels take *u8)
        args = tuple(mxfp4.as_bytes(x) if isinstance(x, torch.Tensor) and x.dtype in _BYTE_DTYPES else x
                     for x in args)
        # a plan's None pointer is a null pointer in the built file; Triton's JIT would make it a
        # constexpr None and fail to compile code that reads it on a branch not taken
        args = tuple(torch.empty(0, device=data[0].device) if x is None else x for x in args)
        calls.append((fn[tuple(grid)], args, dict(spec["constexprs"], num_warps=spec["num_warps"],
                                                  num_stages=spec["num_stages"], **spec.get("options", {}))))

    def run():
        for kern, args, kw in calls:
            kern(*args, **kw)
        return out
    return run


def measure(problem, spec, data, ref, variants, args, lines, tag):
    """Check and time each variant's plan on one shape; {variant name: (µs, CheckResult)}."""
    label = problem.shape_label(spec)
    res = {}
    for vname, (launch_mod, kernel_mod) in variants.items():
        try:
            fn = plan_runner(launch_mod, kernel_mod, data)
            chk = problem.check(fn().clone(), ref)
            t = timed(fn, args.iters)
        except Exception as e:  # a variant Triton cannot compile is reported, not fatal
            lines.append(f"{tag} {label} {vname} FAILED {type(e).__name__}: {str(e)[:300]}")
            continue
        res[vname] = (t, chk)
        lines.append(f"{tag} {label} {vname} {t:9.2f} us pass={chk.passed} max_abs={chk.max_abs_err:.3g} "
                     f"rel_l2={chk.rel_l2_err:.4f} mismatches={chk.mismatches}/{chk.total}")
    return res


def _variants(proj, overrides):
    """{name: (launch module, kernel module)}: the project's plan as shipped ("plan") and with
    each override dict applied (module constants, then the TRITON entries rebuilt or patched)."""
    kernel_mod = _load(ROOT / f"kernels/{proj}/{proj}.py", f"sgk_{proj}")
    out = {"plan": (_load(ROOT / f"kernels/{proj}/launch.py", f"sgl_{proj}"), kernel_mod)}
    for name, patch in overrides.items():
        mod = _load(ROOT / f"kernels/{proj}/launch.py", f"sgl_{proj}_{name}")
        for key, value in patch.items():
            if key.startswith("add:"):
                mod.TRITON[key[4:]] = value
            elif key.startswith("triton:"):
                _, spec_name, field = key.split(":")
                entry = mod.TRITON[spec_name]
                if field in ("num_warps", "num_stages"):
                    entry[field] = value
                else:
                    entry["constexprs"][field] = value
            elif key == "config_factory":
                mod.config = functools.partial(value, _base=mod.config)
            else:
                setattr(mod, key, value)
        out[name] = (mod, kernel_mod)
    return out


# --- mxfp4-mm ------------------------------------------------------------------------------------

def _direct(bm, bn, bk):
    """An unsplit GEMM specialization writing bf16 directly (no workspace, no reduce launch)."""
    sig = {"a_ptr": "*bf16", "as_ptr": "*u8", "b_ptr": "*u8", "bs_ptr": "*u8", "c_ptr": "*bf16", "M": "i32",
           "N": "i32", "K": "i32", "SN": "i32", "k_split": "i32", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr", "PARTIAL": "constexpr", "A_PREQ": "constexpr"}
    return {"source": "mxfp4_mm.py", "kernel": "mxfp4_mm_kernel", "signature": sig, "num_warps": 4,
            "num_stages": 2, "constexprs": {"BM": bm, "BN": bn, "BK": bk, "PARTIAL": False, "A_PREQ": False}}


def _direct_config(bn, max_k):
    """config() that runs m <= 32, k <= max_k shapes unsplit with BK 512 and BN ``bn``."""
    def config(m, n, k, _base=None):
        if m <= 32 and k <= max_k:
            bm = 16 if m <= 16 else 32
            return f"mm_d_{bm}x{bn}", bm, bn, 1
        return _base(m, n, k)
    return config


def _direct_variant(bn, max_k):
    out = {f"add:mm_d_{bm}x{bn}": _direct(bm, bn, 512) for bm in (16, 32)}
    out["config_factory"] = _direct_config(bn, max_k)
    return out


MM_SWEEP = {
    "direct_bn32_k512": _direct_variant(32, 512),
    "direct_bn64_k512": _direct_variant(64, 512),
    "direct_bn32_k1536": _direct_variant(32, 1536),
}


def run_mm(args, lines):
    global _quant_e2m1
    problem = get_problem("mxfp4-mm")
    variants = _variants("mxfp4_mm", MM_SWEEP if args.sweep else {})
    _quant_e2m1 = variants["plan"][1]._quant_e2m1
    res, base_t = {}, {}
    for spec in problem.tests + problem.benchmarks:
        data = problem.generate_input(spec, "cuda")
        a, b = data[0], data[1]
        label = problem.shape_label(spec)
        qbad = quant_check(a)
        ref = problem.reference(data)
        res[label] = measure(problem, spec, data, ref, variants, args, lines, "mm")
        base_t[label] = timed(lambda a=a, b=b: a @ b.T, args.iters)
        t, chk = res[label].get("plan", (float("nan"), None))
        lines.append(f"mm SUMMARY {label}: A quantization bytes differing from the reference: {qbad}; "
                     f"plan {t:.2f} us pass={chk and chk.passed} max_abs={chk and chk.max_abs_err:.3g}; "
                     f"torch bf16 A @ B.T {base_t[label]:.2f} us")
        print("\n".join(lines[-len(variants) - 1:]), flush=True)
    bench_labels = [problem.shape_label(s) for s in problem.benchmarks]
    for title, sel in (("10 shapes", list(base_t)), ("6 benchmarks", bench_labels)):
        for vname in variants:
            if all(vname in res[x] for x in sel):
                lines.append(f"mm GEOMEAN {title} {vname}: {geomean(res[x][vname][0] for x in sel):.2f} us")
        lines.append(f"mm GEOMEAN {title} torch bf16: {geomean(base_t[x] for x in sel):.2f} us")


_quant_e2m1 = None  # the kernel module's function, set before the probe compiles


@triton.jit
def _quant_probe(a_ptr, q_ptr, s_ptr, K, BK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1)
    x = tl.load(a_ptr + r * K + c * BK + tl.arange(0, BK)[None, :]).to(tl.float32)
    q, s = _quant_e2m1(x, 1, BK)
    tl.store(q_ptr + r * (K // 2) + c * (BK // 2) + tl.arange(0, BK // 2)[None, :], q)
    tl.store(s_ptr + r * (K // 32) + c * (BK // 32) + tl.arange(0, BK // 32)[None, :], s)


def quant_check(a):
    """Bytes where the kernels' A quantization differs from submitgen.problems.mxfp4.quantize."""
    m, k = a.shape
    q = torch.empty((m, k // 2), dtype=torch.uint8, device=a.device)
    s = torch.empty((m, k // 32), dtype=torch.uint8, device=a.device)
    _quant_probe[(m, k // 256)](a, q, s, k, BK=256)
    rq, rs = mxfp4.quantize(a, "even")
    return int((q != rq).sum()) + int((s != rs).sum())


# --- mixed-mla -----------------------------------------------------------------------------------

def _mla(bn, warps, stages, target):
    return {"BN": bn, "TARGET_PROGRAMS": target, "triton:mla_decode:BN": bn,
            "triton:mla_decode:num_warps": warps, "triton:mla_decode:num_stages": stages}


# the plan ships BN 32, 4 warps, 1 stage (the gfx950-safe config); these are the H200's best
MLA_SWEEP = {
    "bn64w4s3": _mla(64, 4, 3, 264),
    "bn64w4s2": _mla(64, 4, 2, 264),
    "bn32w4s2": _mla(32, 4, 2, 528),
}


def run_mla(args, lines):
    problem = get_problem("mixed-mla")
    variants = _variants("mixed_mla", MLA_SWEEP if args.sweep else {})
    res = {}
    for spec in problem.benchmarks:
        data = problem.generate_input(spec, "cuda")
        ref = problem.reference(data)
        label = problem.shape_label(spec)
        res[label] = measure(problem, spec, data, ref, variants, args, lines, "mla")
        print("\n".join(lines[-len(variants):]), flush=True)
        del data, ref
        torch.cuda.empty_cache()
    for vname in variants:
        if all(vname in r for r in res.values()):
            lines.append(
                f"mla GEOMEAN 8 benchmarks {vname}: {geomean(r[vname][0] for r in res.values()):.2f} us"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mm", action="store_true")
    ap.add_argument("--mla", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()
    both = not (args.mm or args.mla)
    lines = [f"# {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}"]
    print(lines[0], flush=True)
    t0 = time.time()
    if args.mm or both:
        run_mm(args, lines)
    if args.mla or both:
        run_mla(args, lines)
    lines.append(f"# total {time.time() - t0:.1f} s")
    text = "\n".join(lines) + "\n"
    print("\n".join(x for x in lines if "SUMMARY" in x or "GEOMEAN" in x or x.startswith("#")))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)


if __name__ == "__main__":
    main()
