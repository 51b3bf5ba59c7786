"""The problems and leaderboards that the build, lint, payload, test/bench and the CLI read:
:data:`REGISTRY` (built-ins, then the ``submitgen.problems`` entry points, then :func:`register`;
docs/plugins.md), :data:`SHIPPED` (the built-ins' rows, read without importing torch) and
:data:`OTHER_LEADERBOARDS` (lint only)."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from submitgen.errors import ProblemError
from submitgen.problems.folder import folder_problem, is_folder
from submitgen.registry import NAME_RE, Origin, Registry

if TYPE_CHECKING:  # the spec module imports torch: loaded only where a spec is made or checked
    from submitgen.problems.spec import ProblemSpec  # lazy: spec imports torch


@dataclass(frozen=True)
class Leaderboard:
    """A leaderboard the server runs: its GPUs, its measured payload baseline (None: not measured) and
    the CLI name of submitgen's problem for it (None: lint only)."""

    name: str
    gpus: tuple[str, ...]
    payload_baseline: int | None = None
    problem: str | None = None
    clones_inputs: bool = True  # the problem's eval_clones_inputs (True without a problem)


# The baselines: payload_baseline() (problems/folder.py) of reference-kernels' problems/amd_202602/<name>
# folder, computed once (2026-12-07): `python -c "from submitgen.problems.folder import payload_baseline;
# print(payload_baseline('PATH/problems/amd_202602/mxfp4-mm'))"` -> 9852 (mixed-mla, moe-mxfp4 alike)
SHIPPED: tuple[Leaderboard, ...] = (
    Leaderboard("amd-mxfp4-mm", ("MI355X",), 9_852, "mxfp4-mm"),
    Leaderboard("amd-mixed-mla", ("MI355X",), 12_708, "mixed-mla"),
    Leaderboard("amd-moe-mxfp4", ("MI355X",), 11_964, "moe-mxfp4", clones_inputs=False),
)
"""The built-in problems (module ``submitgen.problems.<name>``), in the round's order: problems are
listed in this order, then any other in registration order. Their specs take GPU, baseline and
clones_inputs from here (``spec.mi355x_problem``), and lint reads them without importing a problem
module (they import torch)."""
ROUND_ORDER = {row.name: i for i, row in enumerate(SHIPPED)}

OTHER_LEADERBOARDS: tuple[Leaderboard, ...] = (
    # AMD Developer Challenge 2025 (problems/amd.yaml, problems/amd_distributed.yaml)
    Leaderboard("amd-identity", ("MI300",)),
    Leaderboard("amd-fp8-mm", ("MI300",)),
    Leaderboard("amd-mixture-of-experts", ("MI300",)),
    Leaderboard("amd-mla-decode", ("MI300",)),
    Leaderboard("amd-all2all", ("MI300x8",)),
    Leaderboard("amd-gemm-rs", ("MI300x8",)),
    Leaderboard("amd-ag-gemm", ("MI300x8",)),
)
"""Leaderboards without a problem module. A registered problem's spec replaces a row of the same
leaderboard."""

def _check(name: str, spec: Any, where: str) -> ProblemSpec:
    """A built-in's or a plug-in's spec, or ProblemError saying what is wrong with it."""
    from submitgen.problems.spec import ProblemSpec  # lazy: spec imports torch

    if not isinstance(spec, ProblemSpec):
        hint = " (the module binds no PROBLEM)" if spec is None and ":" not in where else ""
        raise ProblemError(f"{where} is {type(spec).__name__}, expected a ProblemSpec{hint}")
    for what in ("name", "leaderboard", "gpu", "arch"):  # shown in tables, #!POPCORN lines, messages
        value = getattr(spec, what)
        if not isinstance(value, str) or not NAME_RE.fullmatch(value):
            raise ProblemError(f"{what} {str(value)[:64]!r} must be 1 to 64 letters, digits, '.', '_' or "
                               "'-' (starting with a letter or digit)")
    if spec.name != name:
        raise ProblemError(f"its entry point is named {name!r}, but the spec's name is {spec.name!r} "
                           "(they must be equal)")
    if spec.module not in sys.modules:
        raise ProblemError(f"module={spec.module!r} is not an imported module (write module=__name__ in "
                           f"{where.split(':')[0] if ':' in where else where.rsplit('.', 1)[0]})")
    if not spec.kernel_project.is_dir():
        raise ProblemError(f"kernel_project {str(spec.kernel_project)!r} is not a folder")
    return spec


REGISTRY: Registry[ProblemSpec] = Registry(
    "problem",
    tuple((row.problem, f"submitgen.problems.{row.problem.replace('-', '_')}") for row in SHIPPED),
    attr="PROBLEM", group="submitgen.problems", check=_check, key=lambda p: p.leaderboard,
    describe=lambda p: f"{p.name!r} ({p.leaderboard})", unique="a name and a leaderboard", error=ProblemError)


def register(spec: ProblemSpec) -> ProblemSpec:
    """Add ``spec`` to the registry (again with the same spec: no change). A second, different spec
    under a taken name or leaderboard is refused."""
    from submitgen.problems.spec import ProblemSpec  # lazy: spec imports torch

    if not isinstance(spec, ProblemSpec):
        raise ProblemError(f"register() takes a ProblemSpec, got {type(spec).__name__}")
    return REGISTRY.register(spec.name, spec, Origin("registered", spec.module))


def unregister(name: str) -> None:  # tests clean up with this
    REGISTRY.unregister(name)


def import_root(spec: ProblemSpec) -> str | None:
    """The ``sys.path`` folder from which ``spec.module`` imports (for a worker process), or None."""
    module = sys.modules.get(spec.module)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    levels = spec.module.count(".") + (1 if Path(file).name == "__init__.py" else 0)
    return str(Path(file).resolve().parents[levels])


def load(module: str, name: str, root: str | None = None) -> ProblemSpec:
    """Import ``module`` (from ``root`` when it is not importable as is), register the ``PROBLEM``
    it binds, and return the problem ``name``: how a worker process finds a problem."""
    from submitgen.problems.spec import ProblemSpec  # lazy: spec imports torch

    if root and root not in sys.path:
        sys.path.append(root)
    spec = getattr(importlib.import_module(module), "PROBLEM", None)
    if isinstance(spec, ProblemSpec):
        register(spec)
    return get_problem(name)


def problems() -> tuple[ProblemSpec, ...]:
    """Every registered problem, in listing order."""
    seq = {name: i for i, name in enumerate(REGISTRY)}
    return tuple(sorted(REGISTRY.values(), key=lambda p: (ROUND_ORDER.get(p.leaderboard, 9), seq[p.name])))


def cheap_names() -> tuple[tuple[str, str], ...] | None:
    """(name, leaderboard) of every known problem, in listing order, importing no problem module:
    None when an installed plug-in is there (only its import says what it adds)."""
    if REGISTRY.loaded:
        return tuple((p.name, p.leaderboard) for p in problems())
    if importlib.metadata.entry_points(group=REGISTRY.group):
        return None
    return tuple((r.problem, r.name) for r in _problem_rows(False) if r.problem is not None)  # type: ignore[misc]


def usage_names() -> tuple[str, ...]:
    """The problem names a usage line lists, importing no plug-in (one may hang or fail at import):
    :func:`cheap_names` where it can tell, else the registry's names (a plug-in's entry point name)."""
    return REGISTRY.names() if (cheap := cheap_names()) is None else tuple(name for name, _ in cheap)


def check_name(name: str) -> None:
    """ProblemError, as :func:`get_problem` words it, for a name no problem has; where
    :func:`cheap_names` can tell, without importing a problem module."""
    cheap = None if REGISTRY.loaded else cheap_names()  # once read, get_problem is cheap and knows plug-ins
    if is_folder(name):
        return
    if cheap is None:
        get_problem(name)
    elif name.strip() not in {n for pair in cheap for n in pair}:
        known = ", ".join(f"{n} ({lb})" for n, lb in cheap)
        raise ProblemError(f"unknown problem {name!r}: known problems are {known}")


def get_problem(name: str, *, leaderboard: str | None = None, gpu: str | None = None) -> ProblemSpec:
    """The problem by CLI name ("mxfp4-mm"), leaderboard name ("amd-mxfp4-mm") or path to a
    reference-kernels problem folder (:mod:`submitgen.problems.folder`; ``leaderboard`` and ``gpu``
    set or override its round file's)."""
    if is_folder(name):
        return folder_problem(name, leaderboard=leaderboard, gpu=gpu)
    key = name.strip()
    for problem in problems():
        if key in (problem.name, problem.leaderboard):
            return problem
    for broken in REGISTRY.broken:
        if key == broken.name:
            raise ProblemError(broken.message())
    known = ", ".join(f"{p.name} ({p.leaderboard})" for p in problems())
    raise ProblemError(f"unknown problem {name!r}: known problems are {known}")


def leaderboards(*, load: bool = True) -> dict[str, Leaderboard]:
    """Every leaderboard lint knows, by name, in listing order: the problems', then the others.
    ``load=False`` imports no problem module that is not imported yet (they import torch): the
    built-ins not loaded yet are their :data:`SHIPPED` rows."""
    out = {row.name: row for row in _problem_rows(load)}
    for row in OTHER_LEADERBOARDS:
        out.setdefault(row.name, row)
    return out


def _row(p) -> Leaderboard:
    return Leaderboard(p.leaderboard, (p.gpu,), p.payload_baseline, p.name, p.eval_clones_inputs)


def _problem_rows(load: bool) -> list[Leaderboard]:
    if load or REGISTRY.builtins_loaded:
        return [_row(p) for p in problems()]
    known = [_row(p) for p in REGISTRY.registered()]
    known += [row for row in SHIPPED if row.problem not in {k.problem for k in known}]
    ranked = sorted(enumerate(known), key=lambda ir: (ROUND_ORDER.get(ir[1].name, 9), ir[0]))
    return [row for _, row in ranked]


def payload_baseline(leaderboard: str | None) -> int:
    """The measured baseline of ``leaderboard``, else the largest measured one (the safe guess for a
    file of no known problem)."""
    rows = leaderboards(load=False)
    row = rows.get(leaderboard) if leaderboard else None
    if row is None or row.payload_baseline is None:
        return max(lb.payload_baseline for lb in rows.values() if lb.payload_baseline is not None)
    return row.payload_baseline


PROBLEMS: Mapping[str, ProblemSpec] = REGISTRY
