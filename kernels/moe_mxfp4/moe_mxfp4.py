"""Triton kernels of the default amd-moe-mxfp4 project (launch.py says how they are launched).

Four kernels, one pass each, no host synchronisation between them:

- ``moe_route``: one program per expert lists the slots (token * K + j) routed to it, in slot order,
  and counts them; every program (the grid may hold more than E) also zeroes its share of the
  float32 accumulator and quantizes its share of the activations once, for every expert and
  column tile that reads them (round half up, scale
  from (bits(amax) + 0x200000) & 0xFF800000): packed e2m1 + e8m0 bytes, or with A_BF16 (Hopper,
  which has no fp4 matrix unit) the bf16 values those codes decode to (exact).
- ``moe_gate_up``: one program per (row tile, column tile, k split). The row tiles are the
  (expert, BM slots) pairs that hold slots, numbered from the expert counts in every program (a
  prefix sum over at most E_POW2 counts), so programs past the last tile return at once and no
  program walks an empty expert. The activation rows times a tile of d_expert columns of both gate
  and up on ``tl.dot_scaled`` with the expert's fp4 weights; ``silu(gate) * up`` is rounded to bf16
  and re-quantized by the same rule into the stage-2 workspace, one row per slot or (A2_TILES) in
  work-list order (tile r's rows at r * BM, so that moe_down's loads of them wait on no other
  load). With k splits,
  every split writes its fp32 sums to a workspace and the last one to arrive at the tile's counter
  adds them in a fixed order and finishes the tile.
- ``moe_down``: the same tiles (moe_gate_up writes each tile's expert, first row and count for it),
  or with PAIRS two of them at a time (moe_gate_up numbers each expert's tiles EVEN), those rows
  times the down weights on ``tl.dot_scaled``, times the
  slot's routing weight, added into the float32 accumulator [M, H] (atomically: a token's slots
  belong to different experts).
- ``moe_to_bf16``: the accumulator cast to the bf16 output.
"""

import triton
import triton.language as tl


@triton.jit
def _act_scaled(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """float32 [ROWS, COLS] -> (|x| divided by its 32-block's scale [ROWS, COLS // 32, 32], the
    blocks themselves, the scale exponents int32 [ROWS, COLS // 32])."""
    blocks = tl.reshape(x, (ROWS, COLS // 32, 32))
    amax = tl.max(tl.abs(blocks), axis=2)
    top = (amax.to(tl.int32, bitcast=True) + 0x200000) & 0x7F800000
    scale_exp = tl.minimum(tl.maximum((top >> 23) - 129, -127), 127)
    # 2^-scale_exp as a float32 bit pattern (clamped where it would not be a normal number)
    inv = ((127 - tl.minimum(scale_exp, 126)) << 23).to(tl.float32, bitcast=True)
    mag = tl.abs(blocks) * tl.expand_dims(inv, 2)
    return mag, blocks, scale_exp


@triton.jit
def _quantize_rows(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """float32 [ROWS, COLS] -> (packed e2m1 uint8 [ROWS, COLS // 2], e8m0 uint8 [ROWS, COLS // 32])."""
    mag, blocks, scale_exp = _act_scaled(x, ROWS, COLS)
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
def _quantize_values(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """float32 [ROWS, COLS] -> bf16 [ROWS, COLS]: the values _quantize_rows encodes, decoded (the
    e2m1 value times 2^scale_exp, exact in bf16, whose exponent range is float32's)."""
    mag, blocks, scale_exp = _act_scaled(x, ROWS, COLS)
    # the same rounding as _quantize_rows, on values: half up to one mantissa bit from 1 up
    high = ((mag.to(tl.int32, bitcast=True) + 0x200000) & -0x400000).to(tl.float32, bitcast=True)
    high = tl.minimum(high, 6.0)
    low = ((mag >= 0.25).to(tl.float32) + (mag >= 0.75).to(tl.float32)) * 0.5
    value = tl.where(mag >= 1.0, high, low)
    # 2^e: a normal float for e >= -126, the subnormal 2^-127 (bits 0x00400000) below
    two_e = tl.where(scale_exp >= -126, (scale_exp + 127) << 23, 0x00400000).to(tl.float32, bitcast=True)
    value = tl.where(blocks < 0, -value, value) * tl.expand_dims(two_e, 2)
    return tl.reshape(value, (ROWS, COLS)).to(tl.bfloat16)


@triton.jit
def _round_bf16(x):
    """float32 values rounded to bf16 (nearest, ties to even) and kept as float32: the conversion
    spelled out on the bit pattern, so that it is the same on every backend and in the interpreter."""
    bits = x.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return bits.to(tl.float32, bitcast=True)


# e2m1 -> bf16 on NVIDIA (LUT): per 4 packed bytes (8 codes, k order: low nibble first), byte-permute
# lookups of the bf16 high and low bytes of the 8 magnitudes, the sign bits moved to bit 15, and
# each pair times its bf16x2 scale: about 2.4 instructions a value, with no shared-memory byte loads.
_E2M1_BF16_PTX = tl.constexpr("""{
.reg .b32 m, n, h0, l0, h1, l1, e, o, t, ha, hb, la, lb, z;
mov.b32 ha, 0x3F3F3F00; mov.b32 hb, 0x40404040; mov.b32 la, 0xC0800000; mov.b32 lb, 0xC0804000;
mov.b32 z, 0x80008000;
and.b32 m, $4, 0x77777777; shr.b32 n, m, 16;
prmt.b32 h0, ha, hb, m; prmt.b32 l0, la, lb, m; prmt.b32 h1, ha, hb, n; prmt.b32 l1, la, lb, n;
shl.b32 e, $4, 4; and.b32 e, e, 0x80808080; and.b32 o, $4, 0x80808080;
prmt.b32 t, e, o, 0x5140; or.b32 h0, h0, t; prmt.b32 t, e, o, 0x7362; or.b32 h1, h1, t;
prmt.b32 t, l0, h0, 0x5140; fma.rn.bf16x2 $0, t, $5, z;
prmt.b32 t, l0, h0, 0x7362; fma.rn.bf16x2 $1, t, $6, z;
prmt.b32 t, l1, h1, 0x5140; fma.rn.bf16x2 $2, t, $7, z;
prmt.b32 t, l1, h1, 0x7362; fma.rn.bf16x2 $3, t, $8, z;
}""")


@triton.jit
def _e2m1_bf16(w, s, R: tl.constexpr, BK: tl.constexpr):
    """packed e2m1 uint8 [R, BK // 2] and e8m0 uint8 [R, BK // 32] -> bf16 [R, BK], value times scale
    (the scale as bf16 2^(byte - 127); byte 0, an all-zero block, gives 0)."""
    sv = (s.to(tl.uint32) << 7) * 0x10001
    sv = tl.reshape(tl.broadcast_to(sv[:, :, None], (R, BK // 32, 16)), (R, BK // 2))
    pairs = tl.inline_asm_elementwise(_E2M1_BF16_PTX, "=r,=r,=r,=r,r,r,r,r,r", [w, sv], dtype=tl.uint32,
                                      is_pure=True, pack=4)
    lo = (pairs & 0xFFFF).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    hi = (pairs >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return tl.reshape(tl.join(lo, hi), (R, BK))


@triton.jit
def _scales(w_scale_ptr, off, q, ks):
    """The e8m0 scale bytes [R, BK // 32] of the weight rows at byte offsets off, from scale column q."""
    return tl.load(w_scale_ptr + off[:, None] + q + ks[None, :])


@triton.jit
def _ahead(k0, k_lo, k_split, BK: tl.constexpr):
    """The scale column of the k step after k0 in this split (PF), or of k0's own where k0 is the
    split's last step (an in-bounds address, no mask)."""
    return tl.multiple_of(tl.minimum(k0 + BK, k_lo + k_split - BK) // 32, BK // 32)


@triton.jit
def _a2_rows(r, slot, BM: tl.constexpr, A2_TILES: tl.constexpr):
    """Row tile r's rows of the stage-2 workspace, which moe_gate_up writes and moe_down reads: in
    work-list order (r * BM + i) with A2_TILES, so that moe_down's loads of them wait on no other
    load; else the tile's slots, one row a slot."""
    if A2_TILES:
        rows = r * BM + tl.arange(0, BM)
    else:
        rows = slot
    return rows


@triton.jit
def _row_tile(counts_ptr, experts, r, BM: tl.constexpr, E_POW2: tl.constexpr, EVEN: tl.constexpr):
    """Row tile r of the work list -> (tiles in all, its expert, its first row in the expert, the
    expert's slot count). Tiles are numbered expert by expert, cdiv(count, BM) each, or with EVEN
    that rounded up to even (a tile past the count then ends the expert's list), so that moe_down
    can take them two at a time (PAIRS)."""
    idx = tl.arange(0, E_POW2)
    cnt = tl.load(counts_ptr + idx, mask=idx < experts, other=0)
    tiles = (cnt + BM - 1) // BM
    if EVEN:
        tiles = (tiles + 1) // 2 * 2
    cum = tl.cumsum(tiles, axis=0)
    expert = tl.sum((cum <= r).to(tl.int32), axis=0)
    sel = idx == expert
    first = tl.sum(tl.where(sel, cum - tiles, 0), axis=0)
    count = tl.sum(tl.where(sel, cnt, 0), axis=0)
    return tl.sum(tiles, axis=0), expert, (r - first) * BM, count


@triton.jit
def moe_route(
    topk_ids_ptr,
    hidden_ptr,
    sorted_ptr,
    counts_ptr,
    acc_ptr,
    aq_ptr,
    aq_scale_ptr,
    slots,
    tokens,
    hidden,
    experts,
    acc_size,
    acc_chunk,
    BLOCK: tl.constexpr,
    QK: tl.constexpr,
    A_BF16: tl.constexpr,
):
    expert = tl.program_id(0)
    programs = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    if expert < experts:
        count = tl.zeros((), dtype=tl.int32)
        # the ids one step ahead: each step's scan and stores wait on no load (a scan of all slots
        # is the longest chain in this kernel at bs 512: 9 steps of 512)
        ids_next = tl.load(topk_ids_ptr + offs, mask=offs < slots, other=-1)
        for start in range(0, slots, BLOCK):
            idx = start + offs
            ids = ids_next
            ids_next = tl.load(topk_ids_ptr + idx + BLOCK, mask=idx + BLOCK < slots, other=-1)
            hit = (ids == expert).to(tl.int32)
            pos = count + tl.cumsum(hit, axis=0) - 1
            tl.store(sorted_ptr + expert * tokens + pos, idx, mask=hit != 0)
            count += tl.sum(hit, axis=0)
        tl.store(counts_ptr + expert, count)
    lo = expert * acc_chunk
    for start in range(lo, lo + acc_chunk, BLOCK):
        idx = start + offs
        tl.store(acc_ptr + idx, tl.zeros((BLOCK,), dtype=tl.float32), mask=idx < acc_size)
    # the activations, QK columns of one row per step, chunks dealt round-robin over the programs
    per_row = hidden // QK
    cols = tl.arange(0, QK)
    for chunk in range(expert, tokens * per_row, programs):
        row = chunk // per_row
        k0 = (chunk % per_row) * QK
        x = tl.reshape(tl.load(hidden_ptr + row * hidden + k0 + cols).to(tl.float32), (1, QK))
        if A_BF16:
            v = _quantize_values(x, 1, QK)
            dst = aq_ptr.to(tl.pointer_type(tl.bfloat16)) + row * hidden + k0
            tl.store(dst + tl.arange(0, QK)[None, :], v)
        else:
            q, q_scale = _quantize_rows(x, 1, QK)
            tl.store(aq_ptr + row * (hidden // 2) + k0 // 2 + tl.arange(0, QK // 2)[None, :], q)
            dst = aq_scale_ptr + row * (hidden // 32) + k0 // 32
            tl.store(dst + tl.arange(0, QK // 32)[None, :], q_scale)


@triton.jit
def _gate_up_finish(acc_g, acc_u, a2_ptr, a2_scale_ptr, a2_row, valid, col0, d_expert,
                    BM: tl.constexpr, BN: tl.constexpr, A_BF16: tl.constexpr):
    inter = _round_bf16(acc_g / (1.0 + tl.exp(-acc_g)) * acc_u)
    if A_BF16:
        v = _quantize_values(inter, BM, BN)
        cols = col0 + tl.arange(0, BN)
        tl.store(a2_ptr.to(tl.pointer_type(tl.bfloat16)) + a2_row[:, None] * d_expert + cols[None, :], v,
                 mask=valid[:, None])
    else:
        q, q_scale = _quantize_rows(inter, BM, BN)
        qb = col0 // 2 + tl.arange(0, BN // 2)
        qs = col0 // 32 + tl.arange(0, BN // 32)
        tl.store(a2_ptr + a2_row[:, None] * (d_expert // 2) + qb[None, :], q, mask=valid[:, None])
        dst = a2_scale_ptr + a2_row[:, None] * (d_expert // 32)
        tl.store(dst + qs[None, :], q_scale, mask=valid[:, None])


@triton.jit
def moe_gate_up(
    aq_ptr,
    aq_scale_ptr,
    w_ptr,
    w_scale_ptr,
    sorted_ptr,
    counts_ptr,
    a2_ptr,
    a2_scale_ptr,
    part_ptr,
    cnt_ptr,
    map_ptr,
    tokens,
    hidden,
    d_expert,
    top_k,
    experts,
    k_split,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    E_POW2: tl.constexpr,
    A_BF16: tl.constexpr,
    SPLIT: tl.constexpr,
    LUT: tl.constexpr,
    A2_TILES: tl.constexpr,
    EVEN: tl.constexpr,
    PF: tl.constexpr,
    GU: tl.constexpr,
):
    r = tl.program_id(0)
    total, expert, row0, count = _row_tile(counts_ptr, experts, r, BM, E_POW2, EVEN)
    if (tl.program_id(1) == 0) & (tl.program_id(2) == 0):
        # the row tile for moe_down (its tile r, or with PAIRS its tile r // 2), read instead of the counts
        tl.store(map_ptr + 3 * r, tl.where(r < total, expert, -1))
        tl.store(map_ptr + 3 * r + 1, row0)
        tl.store(map_ptr + 3 * r + 2, count)
    if row0 >= count:  # past the last tile (r >= total: count 0), or EVEN's tile past the count
        return
    col0 = tl.program_id(1) * BN
    rows = row0 + tl.arange(0, BM)
    valid = rows < count
    # rows past the expert's count read slot 0 (a real row) instead of being masked; their sums
    # are dropped by the masked stores
    slot = tl.load(sorted_ptr + expert * tokens + rows, mask=valid, other=0)
    token = slot // top_k
    cols = col0 + tl.arange(0, BN)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    gate_rows = expert * 2 * d_expert + cols  # rows of the [E * 2 * d_expert, ...] weight views
    up_rows = gate_rows + d_expert
    # byte offsets as multiples the compiler can vectorize on (the row strides are H / 2 and H / 32
    # bytes, H a multiple of 256; k0 a multiple of BK)
    g_off = tl.multiple_of(gate_rows * (hidden // 2), 16)
    u_off = tl.multiple_of(up_rows * (hidden // 2), 16)
    gs_off = tl.multiple_of(gate_rows * (hidden // 32), 8)
    us_off = tl.multiple_of(up_rows * (hidden // 32), 8)
    k_lo = tl.program_id(2) * k_split
    if GU:
        # gate and up as one product of 2 * BN columns (sm_90's LUT path): one widening, one barrier
        # and one matrix-unit wait a k step instead of two; its halves are split after the loop
        tl.static_assert(A_BF16 and LUT, "GU needs A_BF16 and LUT")
        j = tl.arange(0, 2 * BN)
        gu_rows = expert * 2 * d_expert + col0 + j + tl.where(j < BN, 0, d_expert - BN)
        w2_off = tl.multiple_of(gu_rows * (hidden // 2), 16)
        s2_off = tl.multiple_of(gu_rows * (hidden // 32), 8)
        acc2 = tl.zeros((BM, 2 * BN), dtype=tl.float32)
        if PF:
            s2_next = _scales(w_scale_ptr, s2_off, k_lo // 32, ks)
        for k0 in range(k_lo, k_lo + k_split, BK):
            kh = tl.multiple_of(k0 // 2, BK // 2)
            w2 = tl.load(w_ptr + w2_off[:, None] + kh + kb[None, :])
            if PF:
                s2 = s2_next
                kn = _ahead(k0, k_lo, k_split, BK)
                s2_next = _scales(w_scale_ptr, s2_off, kn, ks)
            else:
                s2 = _scales(w_scale_ptr, s2_off, tl.multiple_of(k0 // 32, BK // 32), ks)
            a = tl.load(aq_ptr.to(tl.pointer_type(tl.bfloat16)) + token[:, None] * hidden + k0
                        + tl.arange(0, BK)[None, :])
            acc2 = tl.dot(a, tl.trans(_e2m1_bf16(w2, s2, 2 * BN, BK)), acc2)
        acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc2, (BM, 2, BN)), (0, 2, 1)))
    else:
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        if PF:
            # the scales one k step ahead, in registers: a load under 4 bytes a thread is not staged
            # through shared memory by Triton's pipeline, so loaded in the step that uses it, every
            # step would wait on it
            sg_next = _scales(w_scale_ptr, gs_off, k_lo // 32, ks)
            su_next = _scales(w_scale_ptr, us_off, k_lo // 32, ks)
        for k0 in range(k_lo, k_lo + k_split, BK):
            kh = tl.multiple_of(k0 // 2, BK // 2)
            kq = tl.multiple_of(k0 // 32, BK // 32)
            wg = tl.load(w_ptr + g_off[:, None] + kh + kb[None, :])
            wu = tl.load(w_ptr + u_off[:, None] + kh + kb[None, :])
            if PF:
                sg = sg_next
                su = su_next
                # the last step loads its own scales again (an in-bounds address, no mask)
                kn = _ahead(k0, k_lo, k_split, BK)
                sg_next = _scales(w_scale_ptr, gs_off, kn, ks)
                su_next = _scales(w_scale_ptr, us_off, kn, ks)
            else:
                sg = _scales(w_scale_ptr, gs_off, kq, ks)
                su = _scales(w_scale_ptr, us_off, kq, ks)
            if A_BF16:
                a = tl.load(aq_ptr.to(tl.pointer_type(tl.bfloat16)) + token[:, None] * hidden + k0
                            + tl.arange(0, BK)[None, :])
                if LUT:
                    acc_g = tl.dot(a, tl.trans(_e2m1_bf16(wg, sg, BN, BK)), acc_g)
                    acc_u = tl.dot(a, tl.trans(_e2m1_bf16(wu, su, BN, BK)), acc_u)
                else:
                    acc_g = tl.dot_scaled(a, None, "bf16", tl.trans(wg), sg, "e2m1", acc_g, fast_math=True)
                    acc_u = tl.dot_scaled(a, None, "bf16", tl.trans(wu), su, "e2m1", acc_u, fast_math=True)
            else:
                a = tl.load(aq_ptr + token[:, None] * (hidden // 2) + k0 // 2 + kb[None, :])
                sa = tl.load(aq_scale_ptr + token[:, None] * (hidden // 32) + k0 // 32 + ks[None, :])
                acc_g = tl.dot_scaled(a, sa, "e2m1", tl.trans(wg), sg, "e2m1", acc_g, fast_math=True)
                acc_u = tl.dot_scaled(a, sa, "e2m1", tl.trans(wu), su, "e2m1", acc_u, fast_math=True)
    keep = valid
    splits = tl.num_programs(2)
    if SPLIT and splits > 1:
        # this split's sums to part[split, slot, gate | up]; the last split to arrive adds them all
        # in split order and finishes the tile (the others compute nothing more and store nothing)
        slots = tokens * top_k
        off = slot[:, None] * (2 * d_expert) + cols[None, :]
        mine = part_ptr + tl.program_id(2) * slots * (2 * d_expert) + off
        tl.store(mine, acc_g, mask=valid[:, None])
        tl.store(mine + d_expert, acc_u, mask=valid[:, None])
        tl.debug_barrier()  # every thread's partial sums are written before the arrival counts
        item = r * tl.num_programs(1) + tl.program_id(1)
        arrived = tl.atomic_add(cnt_ptr + item, 1, sem="acq_rel", scope="gpu")
        last = arrived == splits - 1
        keep = valid & ((rows * 0 + arrived) == splits - 1)  # [BM], as the masks need
        acc_g = tl.zeros((BM, BN), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN), dtype=tl.float32)
        for s in range(0, splits):
            # .cg: from L2, past this core's cache, which may hold an earlier call's lines
            src = part_ptr + s * slots * (2 * d_expert) + off
            acc_g += tl.load(src, mask=keep[:, None], other=0.0, cache_modifier=".cg")
            acc_u += tl.load(src + d_expert, mask=keep[:, None], other=0.0, cache_modifier=".cg")
        # re-armed to 0 for the next call: every split has counted itself by the time the last one
        # arrives, so only the last one takes the count back (the others add 0)
        tl.atomic_add(cnt_ptr + item, tl.where(last, -splits, 0), sem="relaxed", scope="gpu")
    a2_row = _a2_rows(r, slot, BM, A2_TILES)
    _gate_up_finish(acc_g, acc_u, a2_ptr, a2_scale_ptr, a2_row, keep, col0, d_expert, BM, BN, A_BF16)


@triton.jit
def moe_down(
    a2_ptr,
    a2_scale_ptr,
    w_ptr,
    w_scale_ptr,
    sorted_ptr,
    map_ptr,
    topk_weights_ptr,
    acc_ptr,
    tokens,
    hidden,
    d_expert,
    top_k,
    k_split,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    A_BF16: tl.constexpr,
    LUT: tl.constexpr,
    A2_TILES: tl.constexpr,
    PAIRS: tl.constexpr,
    PF: tl.constexpr,
):
    r = tl.program_id(0)
    # moe_gate_up's row tile r, or with PAIRS its tiles 2r and 2r + 1 (one expert's: moe_gate_up
    # numbers them EVEN) as one tile of BM = twice its rows
    m = 2 * r if PAIRS else r
    expert = tl.load(map_ptr + 3 * m)
    if expert < 0:
        return
    row0 = tl.load(map_ptr + 3 * m + 1)
    count = tl.load(map_ptr + 3 * m + 2)
    col0 = tl.program_id(1) * BN
    rows = row0 + tl.arange(0, BM)
    valid = rows < count
    slot = tl.load(sorted_ptr + expert * tokens + rows, mask=valid, other=0)
    # moe_gate_up's rows of this tile. Rows past the count are loaded unmasked and touch only their
    # own rows of the product, which are never stored: with A2_TILES they lie inside the workspace
    # (r * BM + BM <= its rows) and hold whatever an earlier call left; by slot, past the count
    # they read slot 0's row.
    a2_row = _a2_rows(r, slot, BM, A2_TILES)
    cols = col0 + tl.arange(0, BN)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    w_rows = expert * hidden + cols
    w_off = tl.multiple_of(w_rows * (d_expert // 2), 16)  # as in moe_gate_up: vectorizable offsets
    ws_off = tl.multiple_of(w_rows * (d_expert // 32), 8)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k_lo = tl.program_id(2) * k_split
    if PF:  # the scales one k step ahead, as in moe_gate_up
        sw_next = _scales(w_scale_ptr, ws_off, k_lo // 32, ks)
    for k0 in range(k_lo, k_lo + k_split, BK):
        kh = tl.multiple_of(k0 // 2, BK // 2)
        kq = tl.multiple_of(k0 // 32, BK // 32)
        w = tl.load(w_ptr + w_off[:, None] + kh + kb[None, :])
        if PF:
            sw = sw_next
            kn = _ahead(k0, k_lo, k_split, BK)
            sw_next = _scales(w_scale_ptr, ws_off, kn, ks)
        else:
            sw = _scales(w_scale_ptr, ws_off, kq, ks)
        if A_BF16:
            a = tl.load(a2_ptr.to(tl.pointer_type(tl.bfloat16)) + a2_row[:, None] * d_expert + k0
                        + tl.arange(0, BK)[None, :])
            if LUT:
                acc = tl.dot(a, tl.trans(_e2m1_bf16(w, sw, BN, BK)), acc)
            else:
                acc = tl.dot_scaled(a, None, "bf16", tl.trans(w), sw, "e2m1", acc, fast_math=True)
        else:
            a = tl.load(a2_ptr + a2_row[:, None] * (d_expert // 2) + k0 // 2 + kb[None, :])
            sa = tl.load(a2_scale_ptr + a2_row[:, None] * (d_expert // 32) + k0 // 32 + ks[None, :])
            acc = tl.dot_scaled(a, sa, "e2m1", tl.trans(w), sw, "e2m1", acc, fast_math=True)
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
