"""Launch plan of the default amd-mxfp4-mm kernels (mxfp4_mm.py, Triton; docs/default-kernels.md
has the design and the measurements behind every choice).

mxfp4_mm_kernel: one BM x BN tile over a range of k on tl.dot_scaled (e2m1; the MXFP4 MFMA on
gfx950), B read from B_shuffle/B_scale_sh. A is quantized in the GEMM for m <= 32, else once by
mm_quant_a. k is split until the blocks reach the tile's target (TARGETS; MI355X has 256 CUs,
the targets are the H200's best over 132/180/264, benchmarks/sweep_mm_tiles.py); every split
writes fp32 partial sums to a workspace and the last split of each tile to arrive adds them in
order and writes bf16 (no reduce launch). BM: the smallest of 16/32/64 covering m; BK 128;
4 warps, 2 stages; on sm_90 the in-GEMM-quantizing tiles take 8 warps and 3 stages (measured
7-28 % faster there; gfx950 keeps 4 warps and 2 stages for its registers and LDS).
"""

import torch

TARGETS = {"mm_16x64": 264, "mm_32x64": 180, "mm_64x128_q": 132}  # blocks to reach by splitting k
MIN_STEPS_PER_SPLIT = 1
BK = 128
QUANT_ROWS = 16  # rows per mxfp4_quant_kernel block (its BR)
QUANT_K = 128  # k per mxfp4_quant_kernel block (its BK)

# Specializations: plain data that submitgen reads (BK must equal the module's BK; A_PREQ: A comes
# from mm_quant_a). Few tiles, since each is one more object in the payload.
TRITON = {
    "mm_16x64": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {"a_ptr": "*bf16:16", "as_ptr": "*u8:16", "b_ptr": "*u8:16", "bs_ptr": "*u8:16",
                      "c_ptr": "*bf16:16", "ws_ptr": "*fp32:16",
                      "cnt_ptr": "*i32:16", "M": "i32", "N": "i32:16", "K": "i32:16", "SN": "i32",
                      "k_split": "i32:16", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                      "A_PREQ": "constexpr", "A_BF16": "constexpr", "RS": "constexpr"},
        "constexprs": {"BM": 16, "BN": 64, "BK": 128, "A_PREQ": False, "A_BF16": False, "RS": 8},
        "num_warps": 4,
        "num_stages": 2,
        "arch": {"sm_90": {"num_warps": 8, "num_stages": 3}},
    },
    "mm_32x64": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {"a_ptr": "*bf16:16", "as_ptr": "*u8:16", "b_ptr": "*u8:16", "bs_ptr": "*u8:16",
                      "c_ptr": "*bf16:16", "ws_ptr": "*fp32:16",
                      "cnt_ptr": "*i32:16", "M": "i32", "N": "i32:16", "K": "i32:16", "SN": "i32",
                      "k_split": "i32:16", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                      "A_PREQ": "constexpr", "A_BF16": "constexpr", "RS": "constexpr"},
        "constexprs": {"BM": 32, "BN": 64, "BK": 128, "A_PREQ": False, "A_BF16": False, "RS": 4},
        "num_warps": 4,
        "num_stages": 2,
        "arch": {"sm_90": {"num_warps": 8, "num_stages": 3}},
    },
    "mm_64x128_q": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {"a_ptr": "*u8:16", "as_ptr": "*u8:16", "b_ptr": "*u8:16", "bs_ptr": "*u8:16",
                      "c_ptr": "*bf16:16", "ws_ptr": "*fp32:16",
                      "cnt_ptr": "*i32:16", "M": "i32", "N": "i32:16", "K": "i32:16", "SN": "i32",
                      "k_split": "i32:16", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                      "A_PREQ": "constexpr", "A_BF16": "constexpr", "RS": "constexpr"},
        "constexprs": {"BM": 64, "BN": 128, "BK": 128, "A_PREQ": True, "A_BF16": False, "RS": 1},
        "num_warps": 4,
        "num_stages": 2,
    },
    "mm_quant_a": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_quant_kernel",
        "signature": {"a_ptr": "*bf16:16", "aq_ptr": "*u8:16", "as_ptr": "*u8:16", "M": "i32",
                      "K": "i32:16", "BR": "constexpr", "BK": "constexpr", "OUT_BF16": "constexpr"},
        "constexprs": {"BR": 16, "BK": 128, "OUT_BF16": False},
        "num_warps": 4,
        "num_stages": 1,
    },
}
KERNELS = ()


def _cdiv(a, b):
    return (a + b - 1) // b


def config(m, n, k):
    """(specialization, BM, BN, splits) for one shape."""
    if m <= 16:
        name = "mm_16x64"
    elif m <= 32:
        name = "mm_32x64"
    else:
        name = "mm_64x128_q"
    c = TRITON[name]["constexprs"]
    bm, bn = c["BM"], c["BN"]
    steps = k // BK
    tiles = _cdiv(m, bm) * _cdiv(n, bn)
    splits = 1
    for s in range(1, steps // MIN_STEPS_PER_SPLIT + 1):
        if steps % s == 0:
            splits = s
            if tiles * s >= TARGETS[name]:
                break
    return name, bm, bn, splits


def plan(data):
    A, _B, _B_q, B_shuffle, B_scale_sh = data
    m, k = A.shape
    n = B_shuffle.shape[0]
    if k % 256 or n % 16:
        raise ValueError(f"mxfp4_mm plan: need k % 256 == 0 and n % 16 == 0, got m={m} n={n} k={k}")
    name, bm, bn, splits = config(m, n, k)
    dev = A.device
    out = torch.empty((m, n), dtype=torch.bfloat16, device=dev)
    launches = []
    a_arg, as_arg = A, None
    if TRITON[name]["constexprs"]["A_PREQ"]:
        # A quantized once (fully overwritten every call): packed e2m1 [m, k/2] and e8m0 [m, k/32],
        # or with A_BF16 the bf16 values they decode to, [m, k] (as bytes: the GEMM takes *u8)
        if TRITON[name]["constexprs"]["A_BF16"]:
            a_arg = torch.empty((m, 2 * k), dtype=torch.uint8, device=dev)
        else:
            a_arg = torch.empty((m, k // 2), dtype=torch.uint8, device=dev)
            as_arg = torch.empty((m, k // 32), dtype=torch.uint8, device=dev)
        qgrid = (_cdiv(m, QUANT_ROWS), k // QUANT_K, 1)
        launches.append(("mm_quant_a", qgrid, None, None, (A, a_arg, as_arg, m, k)))
    grid = (_cdiv(n, bn), _cdiv(m, bm), splits)
    ws = cnt = None
    if splits > 1:
        # fp32 partial sums, one [m, n] slice per split (fully overwritten every call), and one
        # arrival counter per tile: zero here, re-armed to zero by the kernel at every call's end
        ws = torch.empty((splits, m, n), dtype=torch.float32, device=dev)
        cnt = torch.zeros((grid[0] * grid[1],), dtype=torch.int32, device=dev)
    launches.append((name, grid, None, None, (a_arg, as_arg, B_shuffle, B_scale_sh, out, ws, cnt, m, n, k,
                                              B_scale_sh.shape[1], k // splits)))
    return out, launches
