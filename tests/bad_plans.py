"""Bad launch plans and the exact line `submitgen build` must print for each. Every case is one
edit of the test project's plan (tests/projects/mm_basic/launch.py): the test writes the edited
plan beside a copy of mm.hip in a folder named after the case, builds it, and compares output."""

from __future__ import annotations

from typing import NamedTuple


class BadPlan(NamedTuple):
    name: str
    old: str  # text of the good plan to replace
    new: str
    error: str  # what the CLI prints, exactly


TILE_ARGS = "(a, b_q, b_scale, partial, m, n, k, 0.5)"
SHAPE = "(m=8 n=2112 k=7168)"

CASES = (
    BadPlan("tensor_for_int", TILE_ARGS, "(a, b_q, b_scale, partial, m, n, a, 0.5)",
            f"kernel 'mm_tile' arg 6: metadata says by_value size 4, plan passes a tensor {SHAPE}"),
    BadPlan("block_too_big", "            (128,),\n", "            (512,),\n",
            f"kernel 'mm_reduce' {SHAPE}: block (512, 1, 1) has 512 threads, "
            "the kernel's .max_flat_workgroup_size is 128"),
    BadPlan("lds_too_big", "(256, 1, 1), 0, (a,", "(256, 1, 1), 200 * 1024, (a,",
            f"kernel 'mm_tile' {SHAPE}: LDS 204800 bytes (static 0 + dynamic 204800) exceeds the target's "
            "163840 bytes (160 KiB)"),
    BadPlan("struct_8_bytes_short", '        ("count", ctypes.c_longlong),\n', "",
            "kernel 'mm_reduce' arg 0: metadata says by_value size 32, plan's struct ReduceArgs is 24 bytes "
            f"{SHAPE}"),
    BadPlan("unknown_kernel", 'KERNELS = ("mm_tile", "mm_reduce")',
            'KERNELS = ("mm_tile", "mm_reduce", "mm_nope")',
            "KERNELS names 'mm_nope', which the code object does not have (it has: mm_reduce, mm_tile)"),
    BadPlan("unknown_name_block_none", '("mm_tile", (tiles, 1, splits), (256, 1, 1), 0,',
            '("mm_simpel", (tiles, 1, splits), None, 0,',
            f"plan launches kernel 'mm_simpel', which the code object does not have (it has: mm_reduce, "
            f"mm_tile) {SHAPE}"),
    BadPlan("too_few_args", TILE_ARGS, "(a, b_q, b_scale, partial, m, n, k)",
            f"kernel 'mm_tile': metadata has 8 explicit arguments, plan passes 7 {SHAPE}"),
    BadPlan("int_too_wide", TILE_ARGS, "(a, b_q, b_scale, partial, m, n, 1 << 40, 0.5)",
            f"kernel 'mm_tile' arg 6: 1099511627776 does not fit the 4-byte argument {SHAPE}"),
    BadPlan("view_of_input", TILE_ARGS, "(a[1:], b_q, b_scale, partial, m, n, k, 0.5)",
            "kernel 'mm_tile' arg 0: a view of another tensor is passed; pass the input, the output or a "
            f"workspace tensor itself and give offsets as integer arguments {SHAPE}"),
    BadPlan("imports_numpy", "import ctypes\n", "import ctypes\n\nimport numpy\n",
            "imports_numpy/launch.py:5: the plan imports 'numpy'; it is pasted into the submission, "
            "so it may import only ctypes, math, torch"),
    BadPlan("banned_word", '"""Plan of the test project',
            '"""Plan (no CUDA Streams here) of the test project',
            "banned_word/launch.py:1: the plan contains the word 'Stream', which the leaderboard rejects"),
    BadPlan("plan_raises", "    splits = 2 if k >= 1024 else 1",
            '    splits = 2 if k >= 1024 else 1\n'
            '    if m == 64:\n        raise ValueError("no tile for m=64")',
            "plan(m=64 n=3072 k=1536) raised ValueError: no tile for m=64"),
)

# Outputs and workspaces with no storage of their own behind them (issue 26 item 12): checked by
# storage, not by tensor identity, and on fake GPU inputs for devices.
OUT = "out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)"
PARTIAL = "partial = torch.empty((splits, m, n), dtype=torch.float32, device=a.device)"
OUT_ERR = f"plan{SHAPE} out"
ON_GPU = "(m=8 n=2112 k=7168, plan run on cuda:0 inputs)"
STRIDES = "expected a contiguous row-major tensor (strides (2112, 1)), plan returns strides"
EMPTY_BF16 = "torch.empty({}, dtype=torch.bfloat16, device=a.device)"
CASES += (
    BadPlan("out_stride_0", OUT, "out = " + EMPTY_BF16.format("(m, 1)") + ".expand(m, n)",
            f"{OUT_ERR}: {STRIDES} (1, 0)"),
    BadPlan("out_expand_one", OUT, "out = " + EMPTY_BF16.format("(1,)") + ".expand(m, n)",
            f"{OUT_ERR}: {STRIDES} (0, 0)"),
    BadPlan("out_column_major", OUT, "out = " + EMPTY_BF16.format("(n, m)") + ".t()",
            f"{OUT_ERR}: {STRIDES} (1, 8)"),
    BadPlan("out_meta", OUT, OUT.replace("device=a.device", 'device="meta"'),
            f"plan{ON_GPU} out: expected device cuda:0 (the inputs'), plan returns meta"),
    BadPlan("workspace_meta", PARTIAL, PARTIAL.replace("device=a.device", 'device="meta"'),
            f"kernel 'mm_tile' {ON_GPU}: workspace at kernarg offset 24: expected device cuda:0 "
            "(the output's), plan allocates it on meta"),
    BadPlan("out_set_to_input", OUT, f"{OUT}\n    out.set_(a)",
            f"{OUT_ERR}: shares input 0's storage (it is the input, a view or a set_ of it); return a tensor "
            "of its own"),
    BadPlan("out_view_of_input", OUT, "out = b.view(torch.bfloat16)[:m, :n]",
            f"{OUT_ERR}: shares input 1's storage (it is the input, a view or a set_ of it); return a tensor "
            "of its own"),
    BadPlan("out_not_written", '"out": out,', '"out": partial,',
            f"{OUT_ERR}: no launch receives it (as an argument or a struct field), so it would be returned "
            "unwritten; pass out itself to the kernel that writes it"),
    BadPlan("out_view_of_workspace", OUT, "out = partial.view(torch.bfloat16).view(-1)[:m * n].view(m, n)",
            f"kernel 'mm_tile' {SHAPE}: workspace at kernarg offset 24: shares the output's storage; pass "
            "that tensor itself, or a workspace of its own"),
    BadPlan("workspace_set_to_input", PARTIAL, f"{PARTIAL}\n    partial.set_(b_q.untyped_storage())",
            f"kernel 'mm_tile' {SHAPE}: workspace at kernarg offset 24: shares input 2's storage; pass that "
            "tensor itself, or a workspace of its own"),
)
