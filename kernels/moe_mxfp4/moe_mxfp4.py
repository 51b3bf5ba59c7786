"""Triton kernels of the default amd-moe-mxfp4 project (launch.py says how they are launched).

Four kernels, one pass each, no host synchronisation between them:

- ``moe_route``: one program per expert lists the slots (token * K + j) routed to it, in slot order,
  and counts them; it also zeroes its share of the float32 accumulator.
- ``moe_gate_up``: per expert, a tile of rows (its slots) times a tile of d_expert columns of both
  gate and up: the bf16 activations are quantized to MXFP4 inside the K loop (round half up, scale
  from (bits(amax) + 0x200000) & 0xFF800000), multiplied on ``tl.dot_scaled`` with the expert's fp4
  weights; ``silu(gate) * up`` is rounded to bf16 and re-quantized by the same rule into a packed
  fp4 + e8m0 workspace, one row per slot.
- ``moe_down``: per expert, those rows times the down weights on ``tl.dot_scaled``, times the slot's
  routing weight, added into the float32 accumulator [M, H] (atomically: a token's slots belong to
  different experts).
- ``moe_to_bf16``: the accumulator cast to the bf16 output.
"""

import triton
import triton.language as tl


@triton.jit
def _quantize_rows(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """float32 [ROWS, COLS] -> (packed e2m1 uint8 [ROWS, COLS // 2], e8m0 uint8 [ROWS, COLS // 32])."""
    blocks = tl.reshape(x, (ROWS, COLS // 32, 32))
    amax = tl.max(tl.abs(blocks), axis=2)
    top = (amax.to(tl.int32, bitcast=True) + 0x200000) & 0x7F800000
    scale_exp = tl.minimum(tl.maximum((top >> 23) - 129, -127), 127)
    # 2^-scale_exp as a float32 bit pattern (clamped where it would not be a normal number)
    inv = ((127 - tl.minimum(scale_exp, 126)) << 23).to(tl.float32, bitcast=True)
    mag = tl.abs(blocks) * tl.expand_dims(inv, 2)
    # From 1 up the e2m1 grid keeps one mantissa bit: round it half up on the bit pattern.
    high = ((mag.to(tl.int32, bitcast=True) + 0x200000) >> 22) - 252
    high = tl.minimum(tl.maximum(high, 2), 7)
    low = (mag >= 0.25).to(tl.int32) + (mag >= 0.75).to(tl.int32)
    code = tl.where(mag >= 1.0, high, low) | ((blocks < 0).to(tl.int32) << 3)
    pairs = tl.reshape(code, (ROWS, COLS // 2, 2))
    even, odd = tl.split(pairs)
    packed = (even | (odd << 4)).to(tl.uint8)
    return packed, (scale_exp + 127).to(tl.uint8)


@triton.jit
def _round_bf16(x):
    """float32 values rounded to bf16 (nearest, ties to even) and kept as float32: the conversion
    spelled out on the bit pattern, so that it is the same on every backend and in the interpreter."""
    bits = x.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def moe_route(
    topk_ids_ptr, sorted_ptr, counts_ptr, acc_ptr, slots, tokens, acc_size, acc_chunk, BLOCK: tl.constexpr
):
    expert = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    count = tl.zeros((), dtype=tl.int32)
    for start in range(0, slots, BLOCK):
        idx = start + offs
        ids = tl.load(topk_ids_ptr + idx, mask=idx < slots, other=-1)
        hit = (ids == expert).to(tl.int32)
        pos = count + tl.cumsum(hit, axis=0) - 1
        tl.store(sorted_ptr + expert * tokens + pos, idx, mask=hit != 0)
        count += tl.sum(hit, axis=0)
    tl.store(counts_ptr + expert, count)
    lo = expert * acc_chunk
    for start in range(lo, lo + acc_chunk, BLOCK):
        idx = start + offs
        tl.store(acc_ptr + idx, tl.zeros((BLOCK,), dtype=tl.float32), mask=idx < acc_size)


@triton.jit
def moe_gate_up(
    hidden_ptr,
    w_ptr,
    w_scale_ptr,
    sorted_ptr,
    counts_ptr,
    a2_ptr,
    a2_scale_ptr,
    tokens,
    hidden,
    d_expert,
    top_k,
    row_splits,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    expert = tl.program_id(0)
    col0 = tl.program_id(1) * BN
    count = tl.load(counts_ptr + expert)
    rows = tl.arange(0, BM)
    cols = col0 + tl.arange(0, BN)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    gate_rows = expert * 2 * d_expert + cols  # rows of the [E * 2 * d_expert, ...] weight views
    up_rows = gate_rows + d_expert
    for tile in range(tl.program_id(2), tl.cdiv(count, BM), row_splits):
        valid = tile * BM + rows < count
        slot = tl.load(sorted_ptr + expert * tokens + tile * BM + rows, mask=valid, other=0)
        token = slot // top_k
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, hidden, BK):
            x = tl.load(
                hidden_ptr + token[:, None] * hidden + k0 + tl.arange(0, BK)[None, :],
                mask=valid[:, None],
                other=0.0,
            ).to(tl.float32)
            a, a_scale = _quantize_rows(x, BM, BK)
            wg = tl.load(w_ptr + gate_rows[:, None] * (hidden // 2) + k0 // 2 + kb[None, :])
            wu = tl.load(w_ptr + up_rows[:, None] * (hidden // 2) + k0 // 2 + kb[None, :])
            sg = tl.load(w_scale_ptr + gate_rows[:, None] * (hidden // 32) + k0 // 32 + ks[None, :])
            su = tl.load(w_scale_ptr + up_rows[:, None] * (hidden // 32) + k0 // 32 + ks[None, :])
            acc_g = tl.dot_scaled(a, a_scale, "e2m1", tl.trans(wg), sg, "e2m1", acc_g)
            acc_u = tl.dot_scaled(a, a_scale, "e2m1", tl.trans(wu), su, "e2m1", acc_u)
        inter = acc_g / (1.0 + tl.exp(-acc_g)) * acc_u
        inter = _round_bf16(inter)
        q, q_scale = _quantize_rows(inter, BM, BN)
        qb = col0 // 2 + tl.arange(0, BN // 2)
        qs = col0 // 32 + tl.arange(0, BN // 32)
        tl.store(a2_ptr + slot[:, None] * (d_expert // 2) + qb[None, :], q, mask=valid[:, None])
        tl.store(a2_scale_ptr + slot[:, None] * (d_expert // 32) + qs[None, :], q_scale, mask=valid[:, None])


@triton.jit
def moe_down(
    a2_ptr,
    a2_scale_ptr,
    w_ptr,
    w_scale_ptr,
    sorted_ptr,
    counts_ptr,
    topk_weights_ptr,
    acc_ptr,
    tokens,
    hidden,
    d_expert,
    top_k,
    row_splits,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    expert = tl.program_id(0)
    col0 = tl.program_id(1) * BN
    count = tl.load(counts_ptr + expert)
    rows = tl.arange(0, BM)
    cols = col0 + tl.arange(0, BN)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    w_rows = expert * hidden + cols
    for tile in range(tl.program_id(2), tl.cdiv(count, BM), row_splits):
        valid = tile * BM + rows < count
        slot = tl.load(sorted_ptr + expert * tokens + tile * BM + rows, mask=valid, other=0)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, d_expert, BK):
            a = tl.load(
                a2_ptr + slot[:, None] * (d_expert // 2) + k0 // 2 + kb[None, :], mask=valid[:, None], other=0
            )
            sa = tl.load(
                a2_scale_ptr + slot[:, None] * (d_expert // 32) + k0 // 32 + ks[None, :],
                mask=valid[:, None],
                other=0,
            )
            w = tl.load(w_ptr + w_rows[:, None] * (d_expert // 2) + k0 // 2 + kb[None, :])
            sw = tl.load(w_scale_ptr + w_rows[:, None] * (d_expert // 32) + k0 // 32 + ks[None, :])
            acc = tl.dot_scaled(a, sa, "e2m1", tl.trans(w), sw, "e2m1", acc)
        weight = tl.load(topk_weights_ptr + slot, mask=valid, other=0.0)
        token = slot // top_k
        tl.atomic_add(
            acc_ptr + token[:, None] * hidden + cols[None, :],
            acc * weight[:, None],
            mask=valid[:, None],
            sem="relaxed",
        )


@triton.jit
def moe_to_bf16(acc_ptr, out_ptr, size, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    value = _round_bf16(
        tl.load(acc_ptr + idx, mask=idx < size)
    )  # exact in bf16 now: the store's cast keeps it
    tl.store(out_ptr + idx, value.to(tl.bfloat16), mask=idx < size)
