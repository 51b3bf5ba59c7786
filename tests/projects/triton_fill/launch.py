"""A Triton-only project: one specialization that fills the output with a constant."""
import torch

TRITON = {
    "fill_1024": {
        "source": "fill.py",
        "kernel": "fill_kernel",
        "signature": {"out_ptr": "*bf16", "n_elements": "i32", "value": "fp32", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 1024},
        "num_warps": 4,
    },
}


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [("fill_1024", ((m * n + 1023) // 1024,), None, None, (out, m * n, 0.0))]
