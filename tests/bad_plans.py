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
    BadPlan("block_too_big", "((m * n + 127) // 128,), (128,), 0,", "((m * n + 127) // 128,), (512,), 0,",
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
    BadPlan("too_few_args", TILE_ARGS, "(a, b_q, b_scale, partial, m, n, k)",
            f"kernel 'mm_tile': metadata has 8 explicit arguments, plan passes 7 {SHAPE}"),
    BadPlan("int_too_wide", TILE_ARGS, "(a, b_q, b_scale, partial, m, n, 1 << 40, 0.5)",
            f"kernel 'mm_tile' arg 6: 1099511627776 does not fit the 4-byte argument {SHAPE}"),
    BadPlan("view_of_input", TILE_ARGS, "(a[1:], b_q, b_scale, partial, m, n, k, 0.5)",
            "kernel 'mm_tile' arg 0: a view of another tensor is passed; pass the input, the output or a "
            f"workspace tensor itself and give offsets as integer arguments {SHAPE}"),
    BadPlan("imports_numpy", "import ctypes\n", "import ctypes\n\nimport numpy\n",
            "imports_numpy/launch.py:4: the plan imports 'numpy'; it is pasted into the submission, "
            "so it may import only ctypes, math, torch"),
    BadPlan("banned_word", '"""Plan of the test project',
            '"""Plan (no CUDA Streams here) of the test project',
            "banned_word/launch.py:1: the plan contains the word 'Stream', which the leaderboard rejects"),
    BadPlan("plan_raises", "    splits = 2 if k >= 1024 else 1",
            '    splits = 2 if k >= 1024 else 1\n'
            '    if m == 64:\n        raise ValueError("no tile for m=64")',
            "plan(m=64 n=3072 k=1536) raised ValueError: no tile for m=64"),
)
