"""``submitgen test --interpret PROJECT`` (docs/evaluate.md): the run folder's ``submission.py``
is a driver (:func:`driver_source`) whose ``custom_kernel`` runs the project's ``plan(data)``,
loaded as the build loads it, then every launch through its own Triton sources under the
interpreter (:func:`custom_kernel_for`); the rest is ``submitgen test``'s. The driver sets
``TRITON_INTERPRET=1`` before anything imports triton (Triton decides at import), and
:func:`kernel_modules` refuses kernels that did not come out interpreted."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from submitgen.errors import EvaluateError
from submitgen.evaluate.shapes import select_shapes
from submitgen.problems.registry import get_problem, problems
from submitgen.project.load import load_plan_module, load_project

BACKEND = "triton-interpreter"
"""The driver's ``SUBMITGEN_BACKEND``."""
TIMEOUT_S = 300.0
"""``test --interpret``'s limit per shape unless ``--timeout`` says otherwise."""

_BYTE_DTYPES = ("float4_e2m1fn_x2", "float8_e8m0fnu")


def byte_view(arg: Any) -> Any:
    """fp4x2 / e8m0 tensors as the uint8 bytes the kernels declare (``*u8``); anything else as is."""
    import torch

    if isinstance(arg, torch.Tensor) and str(arg.dtype).removeprefix("torch.") in _BYTE_DTYPES:
        return arg.view(torch.uint8)
    return arg


def kernel_modules(root: Path, sources: Iterable[str]) -> dict[str, ModuleType]:
    """Each Triton source of the project (``TRITON[...]["source"]``) imported as a module of its own,
    keyed by its name in TRITON; EvaluateError if its kernels are not interpreted."""
    modules: dict[str, ModuleType] = {}
    for source in sorted(set(sources)):
        path = Path(root) / source
        name = f"_submitgen_interpret_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise EvaluateError(f"{path}: cannot import it as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # triton's jit reads the source through inspect
        spec.loader.exec_module(module)
        modules[source] = module
    return modules


def _kernel(table: Mapping[str, Any], modules: Mapping[str, ModuleType], name: str) -> Any:
    entry = table.get(name)
    if not isinstance(entry, Mapping):
        raise EvaluateError(f"the plan launches {name!r}, which is not a TRITON entry: only Triton kernels "
                            "run under the interpreter")
    fn = getattr(modules[entry["source"]], entry["kernel"], None)
    if type(fn).__name__ != "InterpretedFunction":
        raise EvaluateError(f"{entry['source']}: {entry['kernel']} is {type(fn).__name__}, not a Triton "
                            "kernel under the interpreter (TRITON_INTERPRET=1 must be set before triton is "
                            "imported)")
    return fn


def launch_all(table: Mapping[str, Any], modules: Mapping[str, ModuleType],
               launches: Sequence[Sequence[Any]], device: Any) -> None:
    """Run the plan's launches in order, each ``(name, grid, block, lds, args)`` through its
    interpreted kernel with its TRITON constexprs. A None pointer becomes an empty tensor (Triton
    would make None a constexpr); fp4/e8m0 tensors go as their bytes."""
    import torch

    for launch in launches:
        name, grid, _block, _lds, args = launch
        fn = _kernel(table, modules, name)
        args = tuple(torch.empty(0, device=device) if a is None else byte_view(a) for a in args)
        fn[tuple(grid)](*args, **dict(table[name]["constexprs"]))


def exact_low_precision_dot() -> bool:
    """Make the interpreter's ``tl.dot`` right for bf16 and fp16 operands, where it is not: Triton's
    interpreter keeps bf16 values as their uint16 bits and multiplies those bits
    (triton-lang/triton#11584: a 16x32x32 bf16 dot off by 4.6e10), so a correct kernel would FAIL.
    Probed with a 1x1 dot of 1.0; where it is wrong, the builder's dot gets both operands as float32
    (exact for bf16 and fp16 values; the products and the float32 sum as a GPU's matrix cores
    take them). True when the workaround was applied."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = type(interpreter.interpreter_builder)
    one = interpreter.TensorHandle(np.array([[0x3F80]], dtype=np.uint16), tl.bfloat16)
    zero = interpreter.TensorHandle(np.zeros((1, 1), dtype=np.float32), tl.float32)
    if interpreter.interpreter_builder.create_dot(one, one, zero, None, None).data[0, 0] == 1.0:
        return False
    wrong = builder.create_dot

    def as_float32(h: Any) -> Any:
        if h.dtype == tl.bfloat16:
            return interpreter.TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)
        if h.dtype == tl.float16:
            return interpreter.TensorHandle(h.data.astype(np.float32), tl.float32)
        return h

    def create_dot(self: Any, a: Any, b: Any, d: Any, precision: Any, imprecise_acc: Any) -> Any:
        return wrong(self, as_float32(a), as_float32(b), d, precision, imprecise_acc)

    builder.create_dot = create_dot
    return True


def custom_kernel_for(root: str, arch: str) -> Callable[[Any], Any]:
    """``custom_kernel(data)`` of the driver: the project's plan, then its launches interpreted
    (with :func:`exact_low_precision_dot`)."""

    project = load_project(Path(root), arch=arch)
    if not project.triton:
        raise EvaluateError(f"kernel project {root} has no TRITON kernels: --interpret runs Triton kernels "
                            "only")
    plan = load_plan_module(project)
    # the launches' kernels and constexprs come from the resolved specs: the plan's own TRITON holds
    # only the keys its code names (project/plan_view.py), as in the emitted file
    root_dir = project.root.resolve()
    table = {s.name: {"source": str(s.source.resolve().relative_to(root_dir))
                      if s.source.resolve().is_relative_to(root_dir) else str(s.source),
                      "kernel": s.kernel, "constexprs": dict(s.constexprs)}
             for s in project.triton}
    modules = kernel_modules(project.root, (entry["source"] for entry in table.values()))
    exact_low_precision_dot()
    for s in project.triton:
        _kernel(table, modules, s.name)

    def custom_kernel(data: Any) -> Any:
        out, launches = plan.plan(data)
        launch_all(table, modules, launches, (out[0] if isinstance(out, tuple) else out).device)
        return out

    return custom_kernel


DRIVER = '''"""Written by `submitgen test --interpret`: runs the kernel project below (its launch.py
plan and Triton kernels, specialized as the build for the arch below does) under Triton's
interpreter on the CPU; not a submission."""

import os

os.environ["TRITON_INTERPRET"] = "1"  # before anything imports triton

from submitgen.evaluate.interpret import custom_kernel_for  # noqa: E402

SUBMITGEN_BACKEND = {backend!r}
custom_kernel = custom_kernel_for({root!r}, {arch!r})
'''


def driver_source(root: Path, arch: str) -> str:
    return DRIVER.format(root=str(root), arch=arch, backend=BACKEND)


SMALL_SHAPES: dict[str, tuple[dict[str, int], ...]] = {  # why these: docs/evaluate.md, "--interpret"
    "amd-mxfp4-mm": ({"m": 16, "n": 256, "k": 512, "seed": 17},),
    "amd-moe-mxfp4": ({"dhidden": 256, "dexpert": 256, "nroutedexperts": 8, "nexpertspertoken": 2,
                       "nsharedexperts": 1, "bs": 8, "seed": 17},),
}
"""Problems whose test shapes are all too large for the interpreter: the shapes run instead."""

EXPECTED = {
    "amd-mixed-mla": "about 10 s",
    "amd-moe-mxfp4": "about 15 s",
}
"""Roughly how long the default project's check takes on its default shape (the shape itself; the
worker's start and the reference add 20 to 30 s), as measured on the 2-core build machine on
2026-12-02 (docs/evaluate.md)."""


def default_shapes(problem: Any, seed: int | None) -> tuple[list[Any], str]:
    """The shapes ``test --interpret`` runs without ``--shapes``/``--shape``, and what they are: the
    problem's small shapes (:data:`SMALL_SHAPES`), else its smallest test shape (fewest input
    elements)."""
    small = SMALL_SHAPES.get(problem.leaderboard)
    if small:
        return (select_shapes(problem, custom=small, seed=seed),
                "a small shape: the test shapes are too large for the interpreter")
    def elements(i: int) -> int:
        return sum(t.numel() for t in problem.leaves(problem.meta_input(problem.tests[i])))

    index = min(range(len(problem.tests)), key=lambda i: (elements(i), i))
    return select_shapes(problem, f"test:{index}", seed=seed), "the smallest test shape"


def project_problem(root: Path, problem: str | None) -> Any:
    """The problem of ``test --interpret ROOT``: ``problem``, else the problem whose default kernel
    project ROOT is."""
    if problem is not None:
        return get_problem(problem)
    mine = [p for p in problems() if p.kernel_project is not None
            and Path(p.kernel_project).resolve() == root.resolve()]
    if len(mine) != 1:
        raise EvaluateError(f"{root}: which problem is this kernel project for? pass --problem NAME "
                            "(a project has no #!POPCORN header to say)")
    return mine[0]
