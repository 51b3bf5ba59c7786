"""A tiny Triton project for tests/toy_problem.py's amd-toy-add (out = a + b), run by `submitgen test
--interpret` in tests/test_interpret.py."""

import torch

BLOCK = 128
TRITON = {
    "add": {
        "source": "add.py",
        "kernel": "add_kernel",
        "signature": {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                      "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 128},
        "num_warps": 4,
        "num_stages": 1,
    },
}


def plan(data):
    a, b = data
    n = a.shape[0]
    out = torch.empty((n,), dtype=torch.float32, device=a.device)
    return out, [("add", ((n + BLOCK - 1) // BLOCK, 1, 1), None, None, (a, b, out, n))]
