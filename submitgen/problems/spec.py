"""``ProblemSpec``: everything submitgen knows about one leaderboard problem, as one frozen value.

A problem module (``submitgen/problems/<name>.py``, or any importable module that calls
:func:`submitgen.problems.register`) binds ``PROBLEM = ProblemSpec(...)``. The build, the lint, the
payload estimate, ``submitgen test``/``bench`` and the CLI read it through the registry
(:mod:`submitgen.problems.registry`); nothing else lists problems.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
from torch.utils._pytree import tree_map

from submitgen.errors import ProblemError
from submitgen.files import kernels_dir
from submitgen.problems.compare import CheckResult, Tolerance, compare
from submitgen.problems.folder import NO_FALLBACK

LEAVES_FUNCTION = "_sg_leaves"
KEY_FUNCTION = "_sg_key"
FALLBACK_FUNCTION = "_sg_fallback"


def frozen_specs(specs: Any) -> tuple[Mapping[str, Any], ...]:
    """Shape specs as a tuple of read-only mappings (what ``ProblemSpec.tests``/``benchmarks`` hold)."""
    return tuple(MappingProxyType(dict(s)) for s in specs)


@dataclass(frozen=True)
class ProblemSpec:
    """One leaderboard problem. Frozen; shapes are read-only mappings, callables are the module's."""

    name: str  # CLI name: "mxfp4-mm"
    leaderboard: str  # the server's name: "amd-mxfp4-mm"
    gpu: str  # the GPU of the #!POPCORN gpu line: "MI355X"
    arch: str  # the processor of that GPU: "gfx950"
    spec_keys: tuple[str, ...]  # keys of a shape in the leaderboard's TestSpec order (the last is "seed")
    tests: tuple[Mapping[str, Any], ...]
    benchmarks: tuple[Mapping[str, Any], ...]
    tolerance: Tolerance
    payload_baseline: int  # measured dispatch payload (chars) of the problem's files, empty submission
    leaves: Callable[[Any], tuple[torch.Tensor, ...]]  # _sg_leaves(data): the input tensors, flat (pasted)
    key: Callable[[Any], tuple]  # _sg_key(data): a cheap hashable shape key (pasted like leaves)
    # defines _sg_fallback(data): pure torch, on any device, inputs unchanged, passes the check (pasted whole)
    fallback_module: str
    kernel_project: Path  # the default kernel project (device sources + launch.py) build compiles
    task_source: str  # the leaderboard's task.py (input_t, output_t, TestSpec) for the local evaluator
    shape_label: Callable[[Mapping[str, Any]], str]  # the spec without its seed: "m=8 n=2112 k=7168"
    # generate_input(spec, device="cpu"): the data as the leaderboard builds it, seeded by spec["seed"]
    generate_input: Callable[..., Any]
    meta_input: Callable[[Mapping[str, Any]], Any]  # the same structure, every tensor on device "meta"
    reference: Callable[..., torch.Tensor]  # reference(data, **options): the local torch reference
    module: str  # the module that defines this spec (__name__): the test worker imports it
    # False: eval.py hands custom_kernel the very inputs, and test fails a shape whose inputs changed
    eval_clones_inputs: bool = True
    input_names: tuple[str, ...] = ()  # the leaves' names for messages (empty: "input 0", ...)
    # output_meta(spec): a meta tensor of the output's shape and dtype, which the build holds the plan to
    output_meta: Callable[[Mapping[str, Any]], torch.Tensor] | None = None
    folder: Path | None = None  # the reference-kernels problem folder it comes from (problems/folder.py)
    handed_output: int | None = None  # the leaf the task hands in as the output: a plan may return it
    tuple_output: int = 0  # the number of tensors of a tuple output (ref_kernel's); 0: one tensor
    notes: tuple[str, ...] = ()  # what the build summary says of the problem (a check it could not make)
    fallback_text: str = ""  # the fallback's source when not fallback_module's (build --fallback FILE)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for fn, want in ((self.leaves, LEAVES_FUNCTION), (self.key, KEY_FUNCTION)):
            if getattr(fn, "__name__", None) != want:
                raise ProblemError(f"problem {self.name!r}: the pasted function must be named {want!r}, "
                                   f"got {getattr(fn, '__name__', fn)!r}")
        if not self.spec_keys or self.spec_keys[-1] != "seed":
            raise ProblemError(f"problem {self.name!r}: spec_keys must end with 'seed', got {self.spec_keys}")
        for spec in (*self.tests, *self.benchmarks):
            if tuple(spec) != self.spec_keys:
                raise ProblemError(f"problem {self.name!r}: shape {dict(spec)} has keys {tuple(spec)}, "
                                   f"expected {self.spec_keys}")

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def leaves_source(self) -> str:
        """Source of ``_sg_leaves`` and ``_sg_key``, pasted into submissions."""
        if "leaves" not in self._cache:
            sources = (inspect.getsource(f).rstrip() for f in (self.leaves, self.key))
            self._cache["leaves"] = "\n\n\n".join(sources) + "\n"
        return self._cache["leaves"]

    @property
    def fallback_source(self) -> str:
        """Source of the fallback module, pasted into submissions (read once per spec)."""
        if self.fallback_text or not self.fallback_module:
            return self.fallback_text or NO_FALLBACK
        if "fallback" not in self._cache:
            try:
                text = inspect.getsource(importlib.import_module(self.fallback_module))
            except (ImportError, OSError, TypeError) as e:
                raise ProblemError(f"cannot read the source of module {self.fallback_module!r}: {e}") from e
            if f"def {FALLBACK_FUNCTION}(" not in text:
                raise ProblemError(f"problem {self.name!r}: fallback module {self.fallback_module!r} defines "
                                   f"no {FALLBACK_FUNCTION}(data)")
            self._cache["fallback"] = text
        return self._cache["fallback"]

    def input_name(self, index: int) -> str:
        """The name of leaf ``index`` for messages."""
        return self.input_names[index] if index < len(self.input_names) else f"input {index}"

    def header_lines(self) -> tuple[str, str]:
        return (f"#!POPCORN leaderboard {self.leaderboard}", f"#!POPCORN gpu {self.gpu}")

    def empty_input(self, spec: Mapping[str, Any], device: str | torch.device = "cpu") -> Any:
        """``meta_input`` with every tensor allocated, uninitialised, on ``device``: real addresses and
        shapes at no cost, for launch and dispatch checks that never read values."""
        return map_tensors(
            self.meta_input(spec), lambda t: torch.empty(t.shape, dtype=t.dtype, device=device)
        )

    def check(self, output: Any, data_or_reference: Any) -> CheckResult:
        """The leaderboard's rule on ``output`` against the reference output (a tensor) or against the
        reference computed from the inputs."""
        expected = data_or_reference if isinstance(data_or_reference, torch.Tensor) else \
            self.reference(data_or_reference)
        return compare(output, expected, self.tolerance)


def map_tensors(data: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """``data`` (nested tuples/lists/dicts) with every tensor replaced by ``fn(tensor)``."""
    return tree_map(lambda v: fn(v) if isinstance(v, torch.Tensor) else v, data)


def mi355x_problem(ns: Mapping[str, Any], *, kernel: str, tolerance: Tolerance,
                   input_names: tuple[str, ...]) -> ProblemSpec:
    """The ``ProblemSpec`` of a shipped MI355X problem module from its ``globals()``: the module
    binds NAME, LEADERBOARD, SPEC_KEYS, TESTS, BENCHMARKS, TASK_SOURCE, ``_sg_leaves``, ``_sg_key``,
    ``shape_label``, ``generate_input``, ``meta_input``, ``reference`` and optionally ``output_meta``;
    its fallback is ``submitgen.problems.fallbacks.<kernel>``, its kernels ``kernels/<kernel>``, its
    GPU, payload baseline and clones_inputs its row of ``registry.SHIPPED``."""
    from submitgen.problems.registry import SHIPPED  # lazy: the registry imports spec lazily too

    row = next(r for r in SHIPPED if r.name == ns["LEADERBOARD"])
    return ProblemSpec(
        name=ns["NAME"], leaderboard=row.name, gpu=row.gpus[0], arch="gfx950",
        spec_keys=ns["SPEC_KEYS"], tests=frozen_specs(ns["TESTS"]), benchmarks=frozen_specs(ns["BENCHMARKS"]),
        tolerance=tolerance, payload_baseline=row.payload_baseline, eval_clones_inputs=row.clones_inputs,
        leaves=ns[LEAVES_FUNCTION], key=ns[KEY_FUNCTION], input_names=input_names,
        fallback_module=f"submitgen.problems.fallbacks.{kernel}", kernel_project=kernels_dir() / kernel,
        task_source=ns["TASK_SOURCE"], shape_label=ns["shape_label"], generate_input=ns["generate_input"],
        meta_input=ns["meta_input"], output_meta=ns.get("output_meta"), reference=ns["reference"],
        module=ns["__name__"],
    )
