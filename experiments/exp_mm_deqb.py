"""Experiment, not shipped: on a GPU without an fp4 matrix unit (the H200), widen B to bf16 once
per call into a workspace (which stays in L2), then run a plain bf16 tl.dot GEMM on it, instead of
widening B inside the GEMM (tl.dot_scaled's Hopper lowering). A comes from kernels/mxfp4_mm's
pre-pass as the bf16 values of its e2m1 codes; the split-K finish is the shipped kernel's.

    PYTHONPATH=. python experiments/exp_mm_deqb.py

Per shape and configuration: the mean (us, L2 flushed, events, like sweep_mm_tiles.py), the check
against the reference, and each kernel's device time from CUPTI (probe_mm_floor._profile).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import load_module as _load  # noqa: E402

from submitgen.problems import get_problem, mxfp4  # noqa: E402

km = _load(ROOT / "kernels/mxfp4_mm/mxfp4_mm.py", "km_deqb")
lm = _load(ROOT / "kernels/mxfp4_mm/launch.py", "lm_deqb")
probe = _load(ROOT / "experiments/probe_mm_floor.py", "probe_deqb")
bench = probe.bench


@triton.jit
def deq_b_kernel(b_ptr, bs_ptr, out_ptr, N, K, SN, BNQ: tl.constexpr, BKQ: tl.constexpr):
    """B_shuffle / B_scale_sh -> B's values in bf16, [N, K] row-major (exact)."""
    offs_n = tl.program_id(0) * BNQ + tl.arange(0, BNQ)
    n_ok = offs_n < N
    KB = K // 2
    j = tl.program_id(1) * (BKQ // 2) + tl.arange(0, BKQ // 2)
    b_row = (offs_n // 16) * (16 * KB) + (offs_n % 16) * 16
    b = tl.load(b_ptr + b_row[:, None] + ((j // 16) * 256 + j % 16)[None, :], mask=n_ok[:, None], other=0)
    rows = tl.minimum(offs_n, N - 1)  # as the GEMM does: in bounds, the stores are masked
    s_row = (rows // 32) * (32 * SN) + (rows % 16) * 4 + (rows // 16) % 2
    s = km._load_b_scales(bs_ptr, s_row, tl.program_id(1) * BKQ, K, tl.arange(0, BKQ // 32))
    e = tl.reshape(s.to(tl.int32), (BNQ, BKQ // 32, 1)) - 113  # 2^e = 2^14 * 2^(s - 127)
    f1 = ((tl.minimum(e, 127) + 127) << 23).to(tl.float32, bitcast=True)
    f2 = ((tl.maximum(e - 127, 0) + 127) << 23).to(tl.float32, bitcast=True)
    x = tl.reshape(b.to(tl.uint16), (BNQ, BKQ // 32, 16))
    lo = (((x & 8) << 12) | ((x & 7) << 9)).to(tl.float16, bitcast=True).to(tl.float32) * f1 * f2
    hi = (((x & 0x80) << 8) | ((x & 0x70) << 5)).to(tl.float16, bitcast=True).to(tl.float32) * f1 * f2
    v = tl.reshape(tl.join(tl.reshape(lo, (BNQ, BKQ // 2)), tl.reshape(hi, (BNQ, BKQ // 2))), (BNQ, BKQ))
    k = tl.program_id(1) * BKQ + tl.arange(0, BKQ)
    tl.store(out_ptr + offs_n[:, None] * K + k[None, :], v.to(tl.bfloat16), mask=n_ok[:, None])


@triton.jit
def mm_bf16_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, cnt_ptr, M, N, K, k_split,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, RS: tl.constexpr,
                   F32: tl.constexpr = False):
    """C = A B^T on bf16 A [M, K] and B [N, K], split-K finished by the shipped _finish_tile."""
    offs_m = tl.program_id(1) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    m_ok = offs_m < M
    n_ok = offs_n < N
    ak = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k0 = tl.program_id(2) * k_split
    for kk in range(k0, k0 + k_split, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (kk + ak)[None, :], mask=m_ok[:, None], other=0.0)
        b = tl.load(b_ptr + offs_n[None, :] * K + (kk + ak)[:, None], mask=n_ok[None, :], other=0.0)
        if F32:  # Triton's CPU interpreter gets bf16 dots wrong; the check there runs them in fp32
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
        else:
            acc = tl.dot(a, b, acc)
    km._finish_tile(acc, c_ptr, ws_ptr, cnt_ptr, M, N, offs_m, offs_n, RS)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def runner(data, bm: int, bn: int, bk: int, warps: int, stages: int, target: int):
    a, _b, _bq, b_sh, b_sc = data
    m, k = a.shape
    n = b_sh.shape[0]
    b_sh, b_sc = mxfp4.as_bytes(b_sh), mxfp4.as_bytes(b_sc)
    dev = a.device
    a_deq = torch.empty((m, k), dtype=torch.bfloat16, device=dev)
    b_deq = torch.empty((n, k), dtype=torch.bfloat16, device=dev)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=dev)
    splits = lm.split_count(m, n, k, bm, bn, bk, target)
    ws = torch.empty((splits, m, n), dtype=torch.float32, device=dev)
    cnt = torch.zeros((_cdiv(n, bn) * _cdiv(m, bm),), dtype=torch.int32, device=dev)
    rs = probe.sweep.rs_for(bm, bn)
    empty = torch.empty(0, dtype=torch.uint8, device=dev)

    def run():
        km.mxfp4_quant_kernel[(_cdiv(m, 16), k // 128)](a, a_deq, empty, m, k, BR=16, BK=128, OUT_BF16=True)
        deq_b_kernel[(_cdiv(n, 64), k // 256)](b_sh, b_sc, b_deq, n, k, b_sc.shape[1], BNQ=64, BKQ=256)
        mm_bf16_kernel[(_cdiv(n, bn), _cdiv(m, bm), splits)](a_deq, b_deq, out, ws, cnt, m, n, k, k // splits,
                                                           BM=bm, BN=bn, BK=bk, RS=rs, num_warps=warps,
                                                           num_stages=stages, F32=not a.is_cuda)
        return out
    return run, splits


CONFIGS = [(64, 64, 64, 4, 3, 132), (64, 128, 64, 4, 3, 132), (64, 64, 128, 4, 3, 132),
           (128, 128, 64, 8, 3, 132), (64, 128, 64, 4, 4, 264), (16, 64, 128, 4, 3, 264),
           (32, 64, 128, 4, 3, 264)]


def main() -> None:
    problem = get_problem("mxfp4-mm")
    best = {}
    for spec in list(problem.tests) + list(problem.benchmarks):
        m = spec["m"]
        data = problem.generate_input(spec, "cuda")
        ref = problem.reference(data)
        label = problem.shape_label(spec)
        for cfg in CONFIGS:
            if cfg[0] > max(16, 2 * m) or cfg[0] * 4 < m:
                continue
            try:
                fn, splits = runner(data, *cfg)
                chk = problem.check(fn().clone(), ref)
                t = bench.timed(fn, 12)
                kern = {k[:14]: round(v, 2) for k, v in probe._profile(fn, 5).items()}
            except Exception as e:  # reported, not fatal
                print(f"{label} {cfg} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            print(f"{label} {cfg} splits{splits} {t:.2f} pass={chk.passed} max_abs={chk.max_abs_err:.3g}",
                  kern, flush=True)
            if chk.passed and t < best.get(label, (1e9,))[0]:
                best[label] = (round(t, 2), cfg)
    for label, b in best.items():
        print("BEST", label, b)
    print("GEOMEAN best", bench.geomean(b[0] for b in best.values()))


if __name__ == "__main__":
    main()
