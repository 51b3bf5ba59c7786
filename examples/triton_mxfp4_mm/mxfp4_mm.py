"""The simplest correct amd-mxfp4-mm kernel in Triton: one BM x BN output tile per program, A
quantized to MXFP4 in registers (the leaderboard's rule), B read from B_q (row-major) with its
scales from B_scale_sh, one tl.dot_scaled (e2m1 x e2m1) per k step.

The default project (kernels/mxfp4_mm) is the fast version: B_shuffle, an A pre-pass, split-K.
"""

import triton
import triton.language as tl


@triton.jit
def quant_e2m1(x, BM: tl.constexpr, BK: tl.constexpr):
    """fp32 [BM, BK] -> (packed e2m1 uint8 [BM, BK // 2], e8m0 uint8 [BM, BK // 32])."""
    xb = tl.reshape(x, (BM, BK // 32, 32))
    amax = tl.max(tl.abs(xb), axis=2)
    # scale exponent: amax rounded up at mantissa >= 1.75, floor(log2) - 2, clamped to [-127, 127]
    bits = (amax.to(tl.uint32, bitcast=True) + 0x200000) & 0xFF800000
    e = tl.minimum(tl.maximum(((bits >> 23) & 0xFF).to(tl.int32) - 129, -127), 127)
    q = xb * ((127 - e) << 23).to(tl.float32, bitcast=True)[:, :, None]  # x / 2^e
    a = tl.abs(q)
    # nearest e2m1 value {0, .5, 1, 1.5, 2, 3, 4, 6}, ties to even, saturating at 6
    code = ((a > 0.25).to(tl.int32) + (a >= 0.75).to(tl.int32) + (a > 1.25).to(tl.int32)
            + (a >= 1.75).to(tl.int32) + (a > 2.5).to(tl.int32) + (a >= 3.5).to(tl.int32)
            + (a > 5.0).to(tl.int32))
    code = code | ((q.to(tl.uint32, bitcast=True) >> 28) & 8).to(tl.int32)  # sign
    lo, hi = tl.split(tl.reshape(code, (BM, BK // 2, 2)))
    return (lo | (hi << 4)).to(tl.uint8), (e + 127).to(tl.uint8)


@triton.jit
def mxfp4_mm_kernel(a_ptr, b_ptr, bs_ptr, c_ptr, M, N, K, SN,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """a: A bf16 [M, K]; b: B_q bytes [N, K/2]; bs: B_scale_sh bytes [pad256(N), SN]; c: bf16 [M, N]."""
    offs_m = tl.program_id(1) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    m_ok = offs_m < M
    n_ok = offs_n < N
    # aiter's e8m0 shuffle puts scale (n, c) at this offset (docs/mxfp4.md)
    s_row = (offs_n // 32) * (32 * SN) + (offs_n % 16) * 4 + (offs_n // 16) % 2
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, K, BK):
        a = tl.load(
            a_ptr + offs_m[:, None] * K + kk + tl.arange(0, BK)[None, :], mask=m_ok[:, None], other=0.0
        )
        a_q, a_s = quant_e2m1(a.to(tl.float32), BM, BK)
        b = tl.load(b_ptr + offs_n[None, :] * (K // 2) + kk // 2 + tl.arange(0, BK // 2)[:, None],
                    mask=n_ok[None, :], other=0)
        c = kk // 32 + tl.arange(0, BK // 32)
        b_s = tl.load(bs_ptr + s_row[:, None] + ((c // 8) * 256 + (c % 4) * 64 + ((c // 4) % 2) * 2)[None, :],
                      mask=n_ok[:, None], other=0)
        acc = tl.dot_scaled(a_q, a_s, "e2m1", b, b_s, "e2m1", acc)
    tl.store(
        c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :]
    )
