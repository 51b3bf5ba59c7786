"""Launch plan of the default amd-mxfp4-mm kernels (mxfp4_mm.hip).

One GEMM block computes 64 output columns x BM rows (BM = 16, 32 or 64, picked from m) over a
range of k chunks (64 values each). When the (column, row) blocks alone cannot fill the GPU, k is
split: each split writes fp32 partial sums into a workspace and mxfp4_mm_reduce adds them up.
"""

import torch

SOURCES = ("mxfp4_mm.hip",)
KERNELS = ("mxfp4_mm_m16", "mxfp4_mm_m32", "mxfp4_mm_m64", "mxfp4_mm_reduce")

BN = 64  # output columns per block
KC = 64  # k per chunk
THREADS = 256
TARGET_BLOCKS = 256  # MI355X has 256 CUs
MIN_CHUNKS_PER_SPLIT = 2


def tiles(m, n, k):
    """(kernel name, BM, grid, chunks per split, splits) for one shape."""
    if k % KC or n % 16:
        raise ValueError(f"mxfp4_mm plan: need k % {KC} == 0 and n % 16 == 0, got m={m} n={n} k={k}")
    bm = 16 if m <= 16 else 32 if m <= 32 else 64
    gx = (n + BN - 1) // BN
    gy = (m + bm - 1) // bm
    nchunks = k // KC
    want = max(1, -(-TARGET_BLOCKS // (gx * gy)))
    splits = max(1, min(want, nchunks // MIN_CHUNKS_PER_SPLIT))
    per_split = -(-nchunks // splits)
    splits = -(-nchunks // per_split)  # no empty split
    return f"mxfp4_mm_m{bm}", bm, (gx, gy, splits), per_split, splits


def plan(data):
    A, _B, _B_q, B_shuffle, B_scale_sh = data
    m, k = A.shape
    n = B_shuffle.shape[0]
    name, _bm, grid, per_split, splits = tiles(m, n, k)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=A.device)
    if splits == 1:
        return out, [
            (name, grid, (THREADS, 1, 1), 0, (A, B_shuffle, B_scale_sh, out, out, m, n, k, per_split))
        ]
    # workspace: fp32 partial sums, one [m, n] slice per split (fully overwritten every call)
    ws = torch.empty((splits, m, n), dtype=torch.float32, device=A.device)
    mn = m * n
    return out, [
        (name, grid, (THREADS, 1, 1), 0, (A, B_shuffle, B_scale_sh, out, ws, m, n, k, per_split)),
        ("mxfp4_mm_reduce", ((mn + 255) // 256, 1, 1), (256, 1, 1), 0, (ws, out, mn, splits)),
    ]
