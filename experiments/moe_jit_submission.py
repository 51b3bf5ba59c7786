"""Write a single-file amd-moe-mxfp4 submission that runs the default Triton project through Triton's
JIT (no embedded code objects): the kernels' source, the launch plan and the pure-torch fallback
pasted in, ``custom_kernel`` running the plan's launches with ``kernel[grid](...)``.

It is a measuring aid for a CUDA machine with Triton (the H200): it times the project through Triton's
JIT, to set beside the emitted file that ``submitgen build`` writes with the same kernels compiled
ahead of time and embedded. The plan runs on every call (JIT launches, Python-side cost included in
the times). It measured 6dcc63c:benchmarks/results/h200-2026-11-30-moe/.

    python experiments/moe_jit_submission.py -o moe_jit.py && submitgen test moe_jit.py --shapes all
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUNNER = """

_SG_BYTE_DTYPES = (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu)


def _sg_arg(a):
    return a.view(torch.uint8) if isinstance(a, torch.Tensor) and a.dtype in _SG_BYTE_DTYPES else a


def custom_kernel(data):
    if not data[0].is_cuda:
        return _sg_fallback(data)
    out, launches = plan(data)
    for name, grid, _block, _lds, args in launches:
        spec = TRITON[name]
        globals()[spec["kernel"]][grid](*[_sg_arg(a) for a in args], num_warps=spec["num_warps"],
                                        num_stages=spec["num_stages"], **spec["constexprs"])
    return out
"""


def _body(path: Path) -> str:
    """The module's source without its docstring and imports (the file's own header brings them)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    keep = [
        n
        for n in tree.body
        if not isinstance(n, (ast.Import, ast.ImportFrom))
        and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    start = min(
        (n.decorator_list[0].lineno if getattr(n, "decorator_list", None) else n.lineno) for n in keep
    )
    return "\n".join(lines[start - 1 :]) + "\n"


def render() -> str:
    sys.path.insert(0, str(ROOT))
    from submitgen.problems import get_problem

    problem = get_problem("moe-mxfp4")
    project = problem.kernel_project
    parts = [
        "\n".join(problem.header_lines()),
        "# Triton JIT harness of the default moe-mxfp4 project (experiments/moe_jit_submission.py)",
        "import torch\nimport triton\nimport triton.language as tl\n",
        _body(project / "moe_mxfp4.py"),
        _body(project / "launch.py"),
        problem.fallback_source,
        RUNNER,
    ]
    return "\n\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="moe_jit.py")
    path = Path(ap.parse_args().output)
    path.write_text(render(), encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
