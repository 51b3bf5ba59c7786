"""Launch plan of the default amd-mxfp4-mm kernels (mxfp4_mm.py, Triton; docs/default-kernels.md
has the design and the measurements behind every choice).

mxfp4_mm_kernel: one BM x BN tile over a range of k on tl.dot_scaled, B read from
B_shuffle/B_scale_sh. Three specializations by m: mm_m16 (m <= 16), mm_m32 (m <= 32) and mm_m64
(larger m, A quantized once by mm_quant_a instead of in every column block's GEMM). k is split
until the blocks reach the entry's plan target; every split writes fp32 partial sums to a
workspace and the last split of each tile to arrive adds them and writes bf16 (no reduce launch).

Each entry is what gfx950 (MI355X, 256 CUs) builds: A as e2m1 codes, so that the product is the
MXFP4 matrix instruction, 4 warps and 2 stages for its registers and LDS. The "sm_90" overrides
are the H200's best configurations: Hopper has no fp4 matrix unit, and there A goes to dot_scaled
as the bf16 values of its e2m1 codes (A_BF16: Triton then widens only B), with more warps or
narrower tiles.
"""

import torch

BK = 128
QUANT_ROWS = 16  # rows per mxfp4_quant_kernel block (its BR)
QUANT_K = 128  # k per mxfp4_quant_kernel block (its BK)
MIN_STEPS_PER_SPLIT = 1

# Specializations: plain data that submitgen reads (BK must equal the module's BK; A_PREQ: A comes
# from mm_quant_a; RS: splits summed per load by the last split; "plan": values only this plan
# reads, the blocks to reach by splitting k). Few entries: each is one more object in the payload.
TRITON = {
    "mm_m16": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {
            "a_ptr": "*bf16:16",
            "as_ptr": "*u8:16",
            "b_ptr": "*u8:16",
            "bs_ptr": "*u8:16",
            "c_ptr": "*bf16:16",
            "ws_ptr": "*fp32:16",
            "cnt_ptr": "*i32:16",
            "M": "i32",
            "N": "i32:16",
            "K": "i32:16",
            "SN": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "A_PREQ": "constexpr",
            "A_BF16": "constexpr",
            "RS": "constexpr",
        },
        "constexprs": {"BM": 16, "BN": 64, "BK": 128, "A_PREQ": False, "A_BF16": False, "RS": 8},
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 264},
        "arch": {"sm_90": {"constexprs": {"A_BF16": True}, "num_stages": 3}},
    },
    "mm_m32": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {
            "a_ptr": "*bf16:16",
            "as_ptr": "*u8:16",
            "b_ptr": "*u8:16",
            "bs_ptr": "*u8:16",
            "c_ptr": "*bf16:16",
            "ws_ptr": "*fp32:16",
            "cnt_ptr": "*i32:16",
            "M": "i32",
            "N": "i32:16",
            "K": "i32:16",
            "SN": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "A_PREQ": "constexpr",
            "A_BF16": "constexpr",
            "RS": "constexpr",
        },
        "constexprs": {"BM": 32, "BN": 64, "BK": 128, "A_PREQ": False, "A_BF16": False, "RS": 4},
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 180},
        "arch": {
            "sm_90": {
                "constexprs": {"BN": 128, "A_BF16": True, "RS": 2},
                "num_warps": 8,
                "num_stages": 3,
                "plan": {"target": 132},
            }
        },
    },
    "mm_m64": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {
            "a_ptr": "*u8:16",
            "as_ptr": "*u8:16",
            "b_ptr": "*u8:16",
            "bs_ptr": "*u8:16",
            "c_ptr": "*bf16:16",
            "ws_ptr": "*fp32:16",
            "cnt_ptr": "*i32:16",
            "M": "i32",
            "N": "i32:16",
            "K": "i32:16",
            "SN": "i32",
            "k_split": "i32:16",
            "BM": "constexpr",
            "BN": "constexpr",
            "BK": "constexpr",
            "A_PREQ": "constexpr",
            "A_BF16": "constexpr",
            "RS": "constexpr",
        },
        "constexprs": {"BM": 64, "BN": 128, "BK": 128, "A_PREQ": True, "A_BF16": False, "RS": 1},
        "num_warps": 4,
        "num_stages": 2,
        "plan": {"target": 132},
        "arch": {"sm_90": {"constexprs": {"BN": 64, "A_BF16": True, "RS": 2}, "num_stages": 3}},
    },
    "mm_quant_a": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_quant_kernel",
        "signature": {
            "a_ptr": "*bf16:16",
            "aq_ptr": "*u8:16",
            "as_ptr": "*u8:16",
            "M": "i32",
            "K": "i32:16",
            "BR": "constexpr",
            "BK": "constexpr",
            "OUT_BF16": "constexpr",
        },
        "constexprs": {"BR": 16, "BK": 128, "OUT_BF16": False},
        "num_warps": 4,
        "num_stages": 1,
        "arch": {"sm_90": {"constexprs": {"OUT_BF16": True}}},
    },
}
KERNELS = ()


def _cdiv(a, b):
    return (a + b - 1) // b


def split_count(m, n, k, bm, bn, bk, target):
    """Splits of k for a bm x bn tiling: the smallest divisor of the k steps that brings the blocks
    to ``target`` (all the steps when none does)."""
    steps = k // bk
    tiles = _cdiv(m, bm) * _cdiv(n, bn)
    splits = 1
    for s in range(1, steps // MIN_STEPS_PER_SPLIT + 1):
        if steps % s == 0:
            splits = s
            if tiles * s >= target:
                break
    return splits


def config(m, n, k):
    """(specialization, BM, BN, splits) for one shape."""
    name = "mm_m16" if m <= 16 else "mm_m32" if m <= 32 else "mm_m64"
    c = TRITON[name]["constexprs"]
    return name, c["BM"], c["BN"], split_count(m, n, k, c["BM"], c["BN"], BK, TRITON[name]["plan"]["target"])


def plan(data):
    A, _B, _B_q, B_shuffle, B_scale_sh = data
    m, k = A.shape
    n = B_shuffle.shape[0]
    if k % 256 or n % 16:
        raise ValueError(f"mxfp4_mm plan: need k % 256 == 0 and n % 16 == 0, got m={m} n={n} k={k}")
    name, bm, bn, splits = config(m, n, k)
    c = TRITON[name]["constexprs"]
    dev = A.device
    out = torch.empty((m, n), dtype=torch.bfloat16, device=dev)
    launches = []
    a_arg, as_arg = A, None
    if c["A_PREQ"]:
        # A quantized once (fully overwritten every call): packed e2m1 [m, k/2] and e8m0 [m, k/32],
        # or with A_BF16 the bf16 values they decode to, [m, k] (as bytes: the GEMM takes *u8)
        if c["A_BF16"] != TRITON["mm_quant_a"]["constexprs"]["OUT_BF16"]:
            raise ValueError(f"mxfp4_mm plan: {name} A_BF16 and mm_quant_a OUT_BF16 differ")
        if c["A_BF16"]:
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
    launches.append(
        (
            name,
            grid,
            None,
            None,
            (a_arg, as_arg, B_shuffle, B_scale_sh, out, ws, cnt, m, n, k, B_scale_sh.shape[1], k // splits),
        )
    )
    return out, launches
