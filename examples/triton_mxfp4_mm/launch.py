"""Launch plan of examples/triton_mxfp4_mm: one program per 16 x 64 output tile, the whole k loop
in it (no split-K), block = 4 warps and the kernel's own shared memory (block and dynamic LDS
None: submitgen takes them from the compiled kernel)."""

import torch

BM, BN, BK = 16, 64, 128  # the constexprs below

TRITON = {
    "mxfp4_mm": {
        "source": "mxfp4_mm.py",
        "kernel": "mxfp4_mm_kernel",
        "signature": {"a_ptr": "*bf16:16", "b_ptr": "*u8:16", "bs_ptr": "*u8:16", "c_ptr": "*bf16:16",
                      "M": "i32", "N": "i32:16", "K": "i32:16", "SN": "i32", "BM": "constexpr",
                      "BN": "constexpr", "BK": "constexpr"},
        "constexprs": {"BM": 16, "BN": 64, "BK": 128},
        "num_warps": 4,
        "num_stages": 2,
    },
}
KERNELS = ()


def plan(data):
    A, _B, B_q, _B_shuffle, B_scale_sh = data
    m, k = A.shape
    n = B_q.shape[0]
    if k % BK:
        raise ValueError(f"triton_mxfp4_mm plan: need k % {BK} == 0, got k={k}")
    out = torch.empty((m, n), dtype=torch.bfloat16, device=A.device)
    grid = ((n + BN - 1) // BN, (m + BM - 1) // BM, 1)
    return out, [("mxfp4_mm", grid, None, None, (A, B_q, B_scale_sh, out, m, n, k, B_scale_sh.shape[1]))]
