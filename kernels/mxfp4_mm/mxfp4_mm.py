"""amd-mxfp4-mm in Triton: C = A @ B^T with A quantized to MXFP4 (in the GEMM or by a pre-pass)
and B read in aiter's pre-shuffled layout, on ``tl.dot_scaled``.

On gfx950 A and B are both e2m1 and Triton's AMD backend turns the ``dot_scaled`` into the MXFP4
matrix instruction (``v_mfma_scale_f32_*_f8f6f4``). On Hopper there is no fp4 matrix unit: the
sm_90 build passes A as the bf16 values of its e2m1 codes (A_BF16), Triton widens B to bf16 in
registers and uses the bf16 tensor cores, so the same source runs (and is checked) on an H200.

The layouts and the quantization rule are in docs/mxfp4.md.
"""

import triton
import triton.language as tl


@triton.jit
def _e2m1_code(q):
    """Values already divided by their block's scale -> e2m1 codes (int32; bit 3 the sign).
    code = number of grid midpoints below |q|; a tie counts when the code above it is even
    (0.75 -> 1.0, 1.75 -> 2.0, 3.5 -> 4.0), so ties go to the even code; > 5 saturates to 6.0."""
    a = tl.abs(q)
    code = ((a > 0.25).to(tl.int32) + (a >= 0.75).to(tl.int32) + (a > 1.25).to(tl.int32)
            + (a >= 1.75).to(tl.int32) + (a > 2.5).to(tl.int32) + (a >= 3.5).to(tl.int32)
            + (a > 5.0).to(tl.int32))
    return code | ((q.to(tl.uint32, bitcast=True) >> 28) & 8).to(tl.int32)


@triton.jit
def _scale_exponent(amax):
    """The leaderboard's block scale exponent from the block's amax (fp32): amax rounded up by
    adding 0x200000 to its bits and dropping the mantissa, its exponent - 2, clamped."""
    bits = (amax.to(tl.uint32, bitcast=True) + 0x200000) & 0xFF800000
    e = ((bits >> 23) & 0xFF).to(tl.int32) - 129
    return tl.minimum(tl.maximum(e, -127), 127)


@triton.jit
def _block_scaled(x, BM: tl.constexpr, BK: tl.constexpr):
    """fp32 [BM, BK] -> (its values divided by their 32-block's scale, [BM, BK // 32, 32]; the
    scale exponents, int32 [BM, BK // 32])."""
    xb = tl.reshape(x, (BM, BK // 32, 32))
    e = _scale_exponent(tl.max(tl.abs(xb), axis=2))
    # 2^-e as float bits; e <= 126 for any finite bf16 input, so the exponent field stays >= 1
    inv = ((127 - e) << 23).to(tl.float32, bitcast=True)
    return xb * inv[:, :, None], e


@triton.jit
def _quant_e2m1(x, BM: tl.constexpr, BK: tl.constexpr):
    """fp32 [BM, BK] -> (packed e2m1 uint8 [BM, BK // 2], e8m0 uint8 [BM, BK // 32]).

    The leaderboard's rule: amax of each 32-block rounded up by adding 0x200000 to its bits and
    dropping the mantissa; scale exponent = its exponent - 2, clamped to [-127, 127]; values
    divided by 2^exp, rounded to the e2m1 grid with ties to even, saturated at 6."""
    q, e = _block_scaled(x, BM, BK)
    code = _e2m1_code(q)
    lo, hi = tl.split(tl.reshape(code, (BM, BK // 2, 2)))
    packed = (lo | (hi << 4)).to(tl.uint8)
    return packed, (e + 127).to(tl.uint8)


@triton.jit
def _quant_bf16(x, BM: tl.constexpr, BK: tl.constexpr):
    """fp32 [BM, BK] -> bf16 [BM, BK]: the values _quant_e2m1 encodes, decoded (the e2m1 value
    times 2^exp; exact in bf16, whose exponent range is fp32's). For Triton's Hopper lowering,
    where a "bf16" operand of dot_scaled goes to the tensor cores as it is and an "e2m1" one is
    packed here only to be unpacked again by Triton."""
    q, e = _block_scaled(x, BM, BK)
    a = tl.abs(q)
    # a to the e2m1 grid (steps of 0.5 below 2, 1 below 4, 2 above), ties to even, at most 6:
    # a + s * 2^23 - s * 2^23 for the step s leaves the rounding of a's bits below the step to
    # fp32's (to nearest, ties to even). s * 2^23 has a's exponent (at least 1.0's) plus 22.
    # Five instructions per value where the midpoint comparisons of _e2m1_code take fourteen.
    c = (tl.maximum(a.to(tl.int32, bitcast=True) & 0x7F800000, 0x3F800000) + (22 << 23)).to(tl.float32,
                                                                                             bitcast=True)
    mag = tl.minimum((a + c) - c, 6.0)
    # 2^e: a normal float for e >= -126, the subnormal 2^-127 (bits 0x00400000) below
    two_e = tl.where(e >= -126, (e + 127) << 23, 0x00400000).to(tl.float32, bitcast=True)
    v = tl.where(q < 0, -mag, mag) * two_e[:, :, None]
    return tl.reshape(v, (BM, BK)).to(tl.bfloat16)


@triton.jit
def _finish_tile(acc, c_ptr, ws_ptr, cnt_ptr, M, N, offs_m, offs_n, RS: tl.constexpr):
    """Write one output tile. Unsplit: bf16 to c. Split: this split's fp32 partial sums go to
    ws[pid_k]; the program that arrives last at the tile's counter adds every split's sums, writes
    bf16 to c and re-arms the counter to 0 for the next call. It reads RS splits' sums per load
    (one memory round trip for RS splits, not RS of them) and adds them in a fixed order, so the
    result does not depend on the order in which the splits arrived.

    The ordering is the one HIP's ``__syncthreads(); __threadfence(); atomicAdd`` gives: the
    barrier orders every thread's stores before the one atomic, whose release (gfx950:
    ``buffer_wbl2 sc1``, after a wait for the stores) publishes them at GPU scope, and whose
    acquire (``buffer_inv sc1``) makes the other splits' sums visible to the last one
    (tests/test_triton_kernels.py checks that sequence in the gfx950 code)."""
    c_off = offs_m[:, None] * N + offs_n[None, :]
    c_mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    splits = tl.num_programs(2)
    if splits == 1:
        tl.store(c_ptr + c_off, acc.to(tl.bfloat16), mask=c_mask)
    else:
        tl.store(ws_ptr + tl.program_id(2) * M * N + c_off, acc, mask=c_mask)
        tl.debug_barrier()  # every thread's partial sums are written before the arrival counts
        tile = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
        arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == splits - 1:
            total = tl.zeros(acc.shape, dtype=tl.float32)
            offs_s = tl.arange(0, RS)
            for s0 in range(0, splits, RS):
                s = s0 + offs_s
                # .cg: from L2, past this core's cache, which may hold an earlier call's lines
                part = tl.load(ws_ptr + (s * M * N)[:, None, None] + c_off[None, :, :],
                               mask=(s < splits)[:, None, None] & c_mask[None, :, :], other=0.0,
                               cache_modifier=".cg")
                total += tl.sum(part, axis=0)
            tl.store(c_ptr + c_off, total.to(tl.bfloat16), mask=c_mask)
            tl.atomic_xchg(cnt_ptr + tile, 0, sem="relaxed", scope="gpu")


@triton.jit
def _load_b_scales(bs_ptr, s_row, kk, k_end, offs_sc):
    """B_scale_sh bytes [BN, BK / 32] of the k step at kk (zeros past k_end).
    Scale (n, c) lives at (n//32)*32*SN + (c//8)*256 + (c%4)*64 + (n%16)*4 + ((c//4)%2)*2 + (n//16)%2;
    s_row holds the n terms."""
    c = kk // 32 + offs_sc
    return tl.load(bs_ptr + s_row[:, None] + ((c // 8) * 256 + (c % 4) * 64 + ((c // 4) % 2) * 2)[None, :],
                   mask=(c < k_end // 32)[None, :], other=0)


@triton.jit
def mxfp4_mm_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, ws_ptr, cnt_ptr, M, N, K, SN, k_split,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, A_PREQ: tl.constexpr,
                    A_BF16: tl.constexpr, RS: tl.constexpr):
    """One (BM x BN) output tile over k in [pid_k * k_split, (pid_k + 1) * k_split); the grid is
    (n tiles, m tiles, splits).

    a_ptr: A bf16 [M, K] row-major, quantized here (to e2m1 codes, or with A_BF16 to the bf16
    values of those codes). With A_PREQ, A comes from mxfp4_quant_kernel: packed bytes [M, K/2]
    and as_ptr its e8m0 bytes [M, K/32]; with A_PREQ and A_BF16, the decoded bf16 values [M, K]
    (as_ptr not read). A_BF16 is for Hopper, which has no fp4 matrix unit.
    b_ptr: B_shuffle bytes [N, K/2]. bs_ptr: B_scale_sh bytes [pad256(N), SN].
    c_ptr: the bf16 output [M, N]. With splits > 1, ws_ptr is an fp32 [splits, M, N] workspace
    and cnt_ptr one int32 counter per tile, zero before the first call (see _finish_tile; RS
    splits are summed per load there).
    Needs K % BK == 0, k_split % BK == 0, N % 16 == 0 (the plan checks)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_k = tl.program_id(2)
    KB = K // 2
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    # rows past M or N read row M - 1 or N - 1 instead of being masked: the loads need no
    # predicates, and _finish_tile's masked stores drop those rows' sums
    rows_m = tl.minimum(offs_m, M - 1)
    rows_n = tl.minimum(offs_n, N - 1)
    # B_shuffle: byte (n, j) lives at (n//16)*16*KB + (j//16)*256 + (n%16)*16 + j%16
    b_row = (rows_n // 16) * (16 * KB) + (rows_n % 16) * 16
    s_row = (rows_n // 32) * (32 * SN) + (rows_n % 16) * 4 + (rows_n // 16) % 2
    offs_ak = tl.arange(0, BK)
    offs_bj = tl.arange(0, BK // 2)
    offs_sc = tl.arange(0, BK // 32)
    if A_PREQ and A_BF16:
        a_rows = a_ptr.to(tl.pointer_type(tl.bfloat16)) + rows_m[:, None] * K
    elif A_PREQ:
        a_rows = a_ptr + rows_m[:, None] * KB
        offs_ak = tl.arange(0, BK // 2)
        as_rows = as_ptr + rows_m[:, None] * (K // 32)
    else:
        a_rows = a_ptr + rows_m[:, None] * K
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k0 = pid_k * k_split
    k_end = k0 + k_split
    # The scale bytes are too scattered for Triton's asynchronous copies (which need 4 contiguous
    # bytes), so they are loaded one k step ahead by hand: their latency overlaps a step's work.
    b_s_next = _load_b_scales(bs_ptr, s_row, k0, k_end, offs_sc)
    if A_PREQ and not A_BF16:
        a_s_next = tl.load(as_rows + (k0 // 32 + offs_sc)[None, :])
    for kk in range(k0, k_end, BK):
        b_s = b_s_next
        b_s_next = _load_b_scales(bs_ptr, s_row, kk + BK, k_end, offs_sc)
        j = kk // 2 + offs_bj
        j = (j // 16) * 256 + j % 16
        b = tl.load(b_ptr + b_row[None, :] + j[:, None])
        if A_PREQ and not A_BF16:
            a_q = tl.load(a_rows + (kk // 2 + offs_ak)[None, :])
            a_s = a_s_next
            c_next = (kk + BK) // 32 + offs_sc
            a_s_next = tl.load(as_rows + c_next[None, :], mask=(c_next < k_end // 32)[None, :], other=0)
            # fast_math: no NaN check of the scales (0xFF never occurs: A's are <= 254 by construction)
            acc = tl.dot_scaled(a_q, a_s, "e2m1", b, b_s, "e2m1", acc, fast_math=True)
        else:
            a = tl.load(a_rows + (kk + offs_ak)[None, :])
            if A_BF16:
                if not A_PREQ:
                    a = _quant_bf16(a.to(tl.float32), BM, BK)
                acc = tl.dot_scaled(a, None, "bf16", b, b_s, "e2m1", acc, fast_math=True)
            else:
                a_q, a_s = _quant_e2m1(a.to(tl.float32), BM, BK)
                acc = tl.dot_scaled(a_q, a_s, "e2m1", b, b_s, "e2m1", acc, fast_math=True)
    _finish_tile(acc, c_ptr, ws_ptr, cnt_ptr, M, N, offs_m, offs_n, RS)


@triton.jit
def mxfp4_quant_kernel(a_ptr, aq_ptr, as_ptr, M, K, BR: tl.constexpr, BK: tl.constexpr,
                       OUT_BF16: tl.constexpr):
    """A bf16 [M, K] -> packed e2m1 bytes [M, K/2] and e8m0 bytes [M, K/32], row-major; with
    OUT_BF16 the bf16 values they decode to, [M, K] at aq_ptr (as_ptr not written).
    grid (cdiv(M, BR), K / BK)."""
    offs_r = tl.program_id(0) * BR + tl.arange(0, BR)
    offs_k = tl.program_id(1) * BK + tl.arange(0, BK)
    ok = (offs_r < M)[:, None]
    x = tl.load(a_ptr + offs_r[:, None] * K + offs_k[None, :], mask=ok, other=0.0)
    if OUT_BF16:
        tl.store(aq_ptr.to(tl.pointer_type(tl.bfloat16)) + offs_r[:, None] * K + offs_k[None, :],
                 _quant_bf16(x.to(tl.float32), BR, BK), mask=ok)
    else:
        q, s = _quant_e2m1(x.to(tl.float32), BR, BK)
        tl.store(aq_ptr + offs_r[:, None] * (K // 2)
                 + (tl.program_id(1) * (BK // 2) + tl.arange(0, BK // 2))[None, :], q, mask=ok)
        tl.store(as_ptr + offs_r[:, None] * (K // 32)
                 + (tl.program_id(1) * (BK // 32) + tl.arange(0, BK // 32))[None, :], s, mask=ok)
