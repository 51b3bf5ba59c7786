"""The leaderboard problems: their shapes, inputs, torch reference, correctness rule, and the
pure-torch fallback that submissions paste in.

Each problem lives in its own module (``mxfp4_mm``, ``mixed_mla``) exposing the same names
(NAME, LEADERBOARD, KERNEL_DIR, TESTS, BENCHMARKS, RTOL/ATOL, LEAVES_SOURCE, TASK_SOURCE,
shape_label, generate_input, meta_input, reference); :class:`Problem` binds one of them to the API
the build, ``submitgen test`` and kernel authors use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any

import torch

from submitgen.errors import ProblemError
from submitgen.problems.compare import CheckResult, Tolerance, compare
from submitgen.resources import templates_dir

__all__ = ["PROBLEMS", "CheckResult", "Problem", "Tolerance", "get_problem"]

GPU = "MI355X"


@functools.cache
def _fallback_text(kernel_dir: str) -> str:
    path = templates_dir() / "fallbacks" / f"{kernel_dir}.py"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ProblemError(f"fallback source for '{kernel_dir}' is missing: expected {path}") from e


@dataclass(frozen=True)
class Problem:
    name: str
    """CLI name: "mxfp4-mm", "mixed-mla"."""
    leaderboard: str
    """Leaderboard name: "amd-mxfp4-mm", "amd-mixed-mla"."""
    gpu: str
    kernel_dir: str
    """Default kernel project folder under kernels/."""
    tests: tuple[Mapping[str, int], ...]
    benchmarks: tuple[Mapping[str, int], ...]
    tolerance: Tolerance
    leaves_source: str
    """Source of ``_sg_leaves(data)`` (the input tensors, flat, in a fixed order) and ``_sg_key(data)``
    (a cheap hashable shape key); pasted into submissions."""
    task_source: str
    """The leaderboard's task.py (``input_t``, ``output_t``, ``TestSpec``) for the local evaluator."""
    _impl: ModuleType = field(repr=False, compare=False)

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def fallback_source(self) -> str:
        """Source of ``_sg_fallback(data)`` from templates/fallbacks/<kernel_dir>.py: pure torch, runs on
        CPU or any GPU, does not mutate its inputs, passes the leaderboard's check."""
        return _fallback_text(self.kernel_dir)

    @property
    def spec_keys(self) -> tuple[str, ...]:
        """Keys of a shape spec, in the leaderboard's TestSpec order (the last is "seed")."""
        return self._impl.SPEC_KEYS

    def header_lines(self) -> tuple[str, str]:
        return (f"#!POPCORN leaderboard {self.leaderboard}", f"#!POPCORN gpu {self.gpu}")

    def shape_label(self, spec: Mapping[str, Any]) -> str:
        """The spec without its seed, e.g. "m=8 n=2112 k=7168"."""
        return self._impl.shape_label(spec)

    def generate_input(self, spec: Mapping[str, Any], device: str | torch.device = "cpu") -> Any:
        """The data exactly as the leaderboard builds it, from a ``torch.Generator`` on ``device``
        seeded with ``spec["seed"]`` (on CPU the random numbers differ from the GPU's)."""
        return self._impl.generate_input(spec, device)

    def meta_input(self, spec: Mapping[str, Any]) -> Any:
        """The same structure as :meth:`generate_input` with every tensor on device "meta"."""
        return self._impl.meta_input(spec)

    def empty_input(self, spec: Mapping[str, Any], device: str | torch.device = "cpu") -> Any:
        """:meth:`meta_input` with every tensor allocated, uninitialised, on ``device``: real
        addresses and shapes at no cost, for launch and dispatch checks that never read values."""
        return _map_tensors(self.meta_input(spec), lambda t: torch.empty(t.shape, dtype=t.dtype, device=device))

    def leaves(self, data: Any) -> tuple[torch.Tensor, ...]:
        """The input tensors, flat, in the order ``leaves_source``'s ``_sg_leaves`` gives them."""
        return _leaves_namespace(self.name)["_sg_leaves"](data)

    def key(self, data: Any) -> tuple:
        """``leaves_source``'s ``_sg_key(data)``."""
        return _leaves_namespace(self.name)["_sg_key"](data)

    def reference(self, data: Any, **options: Any) -> torch.Tensor:
        """The local torch reference output (CPU-capable). Options are the problem module's
        (mxfp4-mm: ``ties``; mixed-mla: ``kv``)."""
        return self._impl.reference(data, **options)

    def _expected(self, data_or_reference: Any) -> torch.Tensor:
        if isinstance(data_or_reference, torch.Tensor):
            return data_or_reference
        return self.reference(data_or_reference)

    def check(self, output: Any, data_or_reference: Any) -> CheckResult:
        """The leaderboard's rule on ``output`` against the reference output (a tensor) or against the
        reference computed from the inputs."""
        return compare(output, self._expected(data_or_reference), self.tolerance)

    def check_strict(self, output: Any, data_or_reference: Any) -> CheckResult:
        """:meth:`check`, and also ``rel_l2_err <= tolerance.strict_rel_l2`` where the problem sets one."""
        return compare(output, self._expected(data_or_reference), self.tolerance, strict=True)


def _map_tensors(data: Any, fn) -> Any:
    """``data`` (nested tuples/lists/dicts) with every tensor replaced by ``fn(tensor)``."""
    if isinstance(data, torch.Tensor):
        return fn(data)
    if isinstance(data, tuple):
        return tuple(_map_tensors(v, fn) for v in data)
    if isinstance(data, list):
        return [_map_tensors(v, fn) for v in data]
    if isinstance(data, dict):
        return {k: _map_tensors(v, fn) for k, v in data.items()}
    return data


def _make(impl: ModuleType, tolerance: Tolerance) -> Problem:
    return Problem(
        name=impl.NAME,
        leaderboard=impl.LEADERBOARD,
        gpu=GPU,
        kernel_dir=impl.KERNEL_DIR,
        tests=tuple(MappingProxyType(dict(s)) for s in impl.TESTS),
        benchmarks=tuple(MappingProxyType(dict(s)) for s in impl.BENCHMARKS),
        tolerance=tolerance,
        leaves_source=impl.LEAVES_SOURCE,
        task_source=impl.TASK_SOURCE,
        _impl=impl,
    )


def _build() -> dict[str, Problem]:
    from submitgen.problems import mixed_mla, mxfp4_mm

    return {
        mxfp4_mm.NAME: _make(mxfp4_mm, Tolerance(rtol=mxfp4_mm.RTOL, atol=mxfp4_mm.ATOL)),
        mixed_mla.NAME: _make(mixed_mla, Tolerance(rtol=mixed_mla.RTOL, atol=mixed_mla.ATOL,
                                                   max_mismatch_ratio=mixed_mla.MAX_MISMATCH_RATIO,
                                                   strict_rel_l2=mixed_mla.STRICT_REL_L2)),
    }


PROBLEMS: Mapping[str, Problem] = MappingProxyType(_build())


@functools.cache
def _leaves_namespace(name: str) -> dict[str, Any]:
    """The functions ``leaves_source`` defines, compiled from the same text the submissions carry."""
    namespace: dict[str, Any] = {}
    exec(compile(PROBLEMS[name].leaves_source, f"<{name} leaves>", "exec"), namespace)  # noqa: S102
    return namespace


def get_problem(name: str) -> Problem:
    """The problem by CLI name ("mxfp4-mm") or leaderboard name ("amd-mxfp4-mm")."""
    key = name.strip()
    if key in PROBLEMS:
        return PROBLEMS[key]
    for problem in PROBLEMS.values():
        if problem.leaderboard == key:
            return problem
    known = ", ".join(f"{p.name} ({p.leaderboard})" for p in PROBLEMS.values())
    raise ProblemError(f"unknown problem {name!r}: known problems are {known}")
