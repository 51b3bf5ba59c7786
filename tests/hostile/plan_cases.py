"""Defective launch plans and the exact line `submitgen build` prints for each: every case is one
edit of the test project's plan (tests/projects/mm_basic/launch.py)."""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    name: str
    old: str  # text of the good plan to replace (it must occur once)
    new: str
    error: str  # the line after "Error: ", exactly; CASE stands for the project folder
    encoding: str = "utf-8"  # how the edited plan is written


SHAPE = "m=8 n=2112 k=7168"
TILE = "kernel 'mm_tile'"
RETURN = "    return out, ["
TILE_LAUNCH = "(tiles, 1, splits), (256, 1, 1), 0, (a, b_q, b_scale, partial, m, n, k, 0.5)"
LAUNCH_FORM = "(kernel, grid, block, dynamic_lds, args)"


def _grid(value: str, shown: str) -> Case:
    return Case(f"grid_{shown}", TILE_LAUNCH, TILE_LAUNCH.replace("(tiles, 1, splits)", value, 1),
                f"{TILE} ({SHAPE}): grid must be up to 3 ints, plan gives {shown}")


CASES = (
    Case(
        "launches_int",
        RETURN,
        "    return out, 5\n" + RETURN,
        f"plan({SHAPE}): launches must be a list of {LAUNCH_FORM}, returned int 5",
    ),
    Case(
        "launches_names",
        RETURN,
        '    return out, ["mm_tile", "mm_reduce"]\n' + RETURN,
        f"plan({SHAPE}): a launch must be {LAUNCH_FORM}, plan gives str 'mm_tile'",
    ),
    Case(
        "args_int",
        "(a, b_q, b_scale, partial, m, n, k, 0.5)",
        "5",
        f"{TILE} ({SHAPE}): args must be a tuple of arguments, plan gives int 5",
    ),
    Case(
        "args_none",
        "(a, b_q, b_scale, partial, m, n, k, 0.5)",
        "None",
        f"{TILE} ({SHAPE}): args must be a tuple of arguments, plan gives NoneType None",
    ),
    _grid('(float("nan"), 1, splits)', "tuple (nan, 1, 2)"),
    _grid('(float("inf"), 1, splits)', "tuple (inf, 1, 2)"),
    _grid("(1e300, 1, splits)", "tuple (1e+300, 1, 2)"),
    _grid("(1.5, 1, splits)", "tuple (1.5, 1, 2)"),
    _grid("'123'", "str '123'"),
    _grid("a", "a tensor of shape (8, 7168)"),
    _grid('{"x": 1}', "dict {'x': 1}"),
    Case(
        "block_float",
        TILE_LAUNCH,
        TILE_LAUNCH.replace("(256, 1, 1)", "(256.9, 1, 1)"),
        f"{TILE} ({SHAPE}): block must be up to 3 ints, plan gives tuple (256.9, 1, 1)",
    ),
    Case(
        "kernels_int",
        'KERNELS = ("mm_tile", "mm_reduce")',
        "KERNELS = 5",
        "CASE/launch.py:8: KERNELS must be a tuple of strings, got int 5",
    ),
    Case(
        "kernels_none",
        'KERNELS = ("mm_tile", "mm_reduce")',
        "KERNELS = None",
        "CASE/launch.py:8: KERNELS must be a tuple of strings, got NoneType None",
    ),
    Case(
        "kernels_float",
        'KERNELS = ("mm_tile", "mm_reduce")',
        "KERNELS = 1.5",
        "CASE/launch.py:8: KERNELS must be a tuple of strings, got float 1.5",
    ),
    Case(
        "not_utf8",
        '"""Plan of the test project',
        '"""Plan of the test project (caf\u00e9)',
        "CASE/launch.py:1: not UTF-8 text (byte 0xe9); save the file as UTF-8",
        encoding="latin-1",
    ),
    Case(
        "coding_latin1",
        '"""Plan of the test project',
        '# -*- coding: latin-1 -*-\n"""Plan of the caf\u00e9 project',
        "CASE/launch.py:1: declares coding 'latin-1'; the plan is pasted into a UTF-8 submission: save it "
        "as UTF-8 and drop the coding line",
        encoding="latin-1",
    ),
    Case(
        "nul_byte",
        "import ctypes\n",
        "import ctypes\n# \0\n",
        "CASE/launch.py:4: a NUL byte; the plan must be text",
    ),
    Case(
        "out_dtype",
        "out = torch.empty((m, n), dtype=torch.bfloat16,",
        "out = torch.empty((m, n), dtype=torch.float32,",
        f"plan({SHAPE}) out: expected dtype torch.bfloat16, plan returns torch.float32",
    ),
    Case(
        "out_shape",
        "out = torch.empty((m, n), dtype=torch.bfloat16,",
        "out = torch.empty((n, m), dtype=torch.bfloat16,",
        f"plan({SHAPE}) out: expected shape (8, 2112), plan returns (2112, 8)",
    ),
    Case(
        "out_device",
        "out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)",
        'out = torch.empty((m, n), dtype=torch.bfloat16, device="cpu")',
        f"plan({SHAPE}) out: expected device meta (the inputs'), plan returns cpu",
    ),
    Case(
        "out_is_input",
        RETURN,
        "    return b, [",
        f"plan({SHAPE}) out: shares input 1's storage (it is the input, a view or a set_ of it); return a "
        "tensor of its own",
    ),
    Case(
        "workspace_device",
        "partial = torch.empty((splits, m, n), dtype=torch.float32, device=a.device)",
        'partial = torch.empty((splits, m, n), dtype=torch.float32, device="cpu")',
        f"{TILE} ({SHAPE}): workspace at kernarg offset 24: expected device meta (the output's), plan "
        "allocates it on cpu",
    ),
    Case(
        "int_for_float",
        "m, n, k, 0.5)",
        "m, n, k, 1)",
        f"{TILE} arg 7: mm.hip declares a floating-point parameter, plan passes int 1 ({SHAPE})",
    ),
    Case(
        "float_for_int",
        "m, n, k, 0.5)",
        "m, n, k * 1.0, 0.5)",
        f"{TILE} arg 6: mm.hip declares an integer parameter, plan passes float 7168.0 ({SHAPE})",
    ),
    Case(
        "struct_field_overflow",
        '"splits": splits,',
        '"splits": 1 << 40,',
        f"kernel 'mm_reduce' ({SHAPE}) arg 0: struct ReduceArgs field 'splits' is c_int "
        "(-2147483648..2147483647), plan gives 1099511627776",
    ),
    Case(
        "sources_outside",
        'SOURCES = ("mm.hip",)',
        'SOURCES = ("../mm.hip",)',
        "CASE/launch.py: SOURCES names '../mm.hip', which is outside the project folder CASE",
    ),
    Case(
        "dunder_import",
        "    m, k = a.shape\n",
        '    m, k = a.shape\n    __import__("os")\n',
        "CASE/launch.py:24: the plan uses '__import__'; it is pasted into the submission, so it may "
        "import only ctypes, math, torch, by name",
    ),
    Case(
        "importlib",
        "import ctypes\n",
        "import ctypes\nimport importlib\n",
        "CASE/launch.py:4: the plan imports 'importlib'; it is pasted into the submission, so it may "
        "import only ctypes, math, torch",
    ),
    Case(
        "dunder_attribute",
        "    m, k = a.shape\n",
        "    m, k = a.shape\n    torch.__builtins__\n",
        "CASE/launch.py:24: the plan uses the attribute '__builtins__'; plans are plain code over torch, "
        "ctypes and math",
    ),
    Case(
        "system_exit",
        "    m, k = a.shape\n",
        "    m, k = a.shape\n    raise SystemExit(0)\n",
        f"plan({SHAPE}) raised SystemExit: 0",
    ),
    Case(
        "os_exit",
        "    m, k = a.shape\n",
        "    m, k = a.shape\n    torch.os._exit(0)\n",
        "CASE/launch.py: the plan ended the process (exit status 0) instead of returning (out, launches); "
        "a plan must not exit",
    ),
    Case(
        "exit_at_import",
        "import torch\n",
        "import torch\n\nraise SystemExit(3)\n",
        "CASE/launch.py: importing the plan failed: SystemExit: 3",
    ),
)
