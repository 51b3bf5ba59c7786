"""The parent side of ``submitgen test``/``bench``: judging a shape outside the submission's process.

The worker only runs the submission and writes each output's raw bytes to a file. Here the inputs
are generated again from the shape's seed (on the same device, so the same numbers), the reference
is computed, and the problem's check is applied to the bytes read back. A submission can therefore
forge neither the verdict nor the reference: whatever it writes to the pipe or patches in its own
process, only its output bytes reach the check."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_OUTPUT_DIMS = 16


class UnreadableOutput(Exception):
    """The worker's description of an output does not match the bytes it wrote (internal to this
    module: it becomes the shape's error text)."""


def _dtype(name: Any):
    import torch

    value = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    if not isinstance(value, torch.dtype):
        raise UnreadableOutput(f"the worker named an unknown output dtype {name!r}")
    return value


def _shape(value: Any) -> tuple[int, ...]:
    if (not isinstance(value, list) or len(value) > MAX_OUTPUT_DIMS
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)):
        raise UnreadableOutput(f"the worker described the output shape as {value!r}")
    return tuple(value)


WIDEST = 16
"""Bytes of torch's widest element (complex128): an output of the problem's element count in any
dtype is read back (and judged, e.g. DTYPE MISMATCH), a larger one is not."""


def read_output(described: Any, path: Path, limit: int | None = None) -> Any:
    """The output tensor from ``path`` as ``described`` by the worker (``{"dtype", "shape"}``), or a
    placeholder naming the type custom_kernel returned instead of a tensor. An output described as
    more than ``limit`` bytes (the problem's output, :meth:`Assessor.output_limit`) is not read:
    the worker is the submission's, and this process holds only what the problem makes."""
    import torch

    if not isinstance(described, Mapping):
        raise UnreadableOutput(f"the worker described the output as {described!r}")
    if "type" in described:
        return _NotATensor(str(described["type"])[:100])
    dtype, shape = _dtype(described.get("dtype")), _shape(described.get("shape"))
    itemsize = torch.empty((), dtype=dtype).element_size()
    want = math.prod(shape) * itemsize
    if limit is not None and want > limit:
        raise UnreadableOutput(f"the worker describes a {dtype} {list(shape)} output of {want:,} bytes, "
                               f"more than the {limit:,} read back for the problem's output of "
                               f"{limit // WIDEST:,} elements ({WIDEST} bytes each, the widest dtype): "
                               "not read")
    try:
        size = os.stat(path).st_size
    except OSError:
        raise UnreadableOutput("the worker wrote no output file") from None
    if size != want:
        raise UnreadableOutput(f"the output file holds {size:,} bytes, {dtype} {list(shape)} needs {want:,}")
    raw = torch.from_file(str(path), shared=False, size=size, dtype=torch.uint8) if size else \
        torch.empty(0, dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)


class _NotATensor:
    """What the check sees when custom_kernel returned something other than a tensor."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return self.type_name


def device() -> str:
    """Where the worker generates inputs: the same rule, so the same numbers."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def judge(problem: Any, spec: Mapping[str, Any], output: Any, data: Any = None, expected: Any = None) -> Any:
    """The problem's check of ``output`` against the reference of ``data`` (freshly generated
    inputs when None; ``expected``: that reference, when already computed)."""
    if data is None:
        data = problem.generate_input(dict(spec), device=device())
    if expected is None:
        expected = problem.reference(data).cpu()
    if isinstance(output, _NotATensor):
        from submitgen.problems.compare import CheckResult  # lazy: compare imports torch

        total = expected.numel()
        return CheckResult(False, math.nan, math.nan, total, total, 1.0,
                           f"custom_kernel returned {output.type_name}, not a tensor of shape "
                           f"{tuple(expected.shape)}")
    return problem.check(output, expected)


def _launch_only(problem: Any, spec: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """A dry run's fields: the output's form checked against the problem's output contract
    (where the problem states one), never its values."""
    meta = problem.output_meta(dict(spec)) if getattr(problem, "output_meta", None) else None
    if isinstance(output, _NotATensor):
        return {"passed": False, "message": f"custom_kernel returned {output.type_name}, not a tensor"}
    if meta is not None and (output.dtype != meta.dtype or tuple(output.shape) != tuple(meta.shape)):
        return {"passed": False, "message": f"the output is {output.dtype} {list(output.shape)}, the problem "
                                           f"returns {meta.dtype} {list(meta.shape)}"}
    return {"passed": True, "message": "output not checked"}


@dataclass(frozen=True)
class Assessment:
    """The parent's verdict on one shape: the check's fields (None when there is no output to
    judge), why it could not be judged, and the inputs found changed."""

    fields: dict[str, Any] | None
    error: str | None
    mutated: tuple[str, ...] = ()


class Assessor:
    """Judges the worker's events for one problem: the inputs are regenerated here from the
    shape's seed and the output bytes checked against the reference (or, for a dry run against the
    stand-in HIP library, only the output's form); the inputs the worker found changed are named.
    With ``recheck`` (bench --mode leaderboard) every timed call's output is judged the same way
    (:mod:`.recheck`)."""

    def __init__(self, problem: Any, *, check_values: bool = True, recheck: bool = False) -> None:
        self.problem = problem
        self.check_values = check_values
        self.recheck = recheck

    def __call__(self, spec: Mapping[str, Any], ev: Mapping[str, Any], out: Path) -> Assessment:
        first = self.first_call(spec, ev, out)
        if (not self.recheck or ev["event"] != "bench" or ev.get("skipped") is not None
                or first.error is not None):
            return first
        from submitgen.evaluate.recheck import recheck_timed_calls  # lazy: recheck imports this module

        return recheck_timed_calls(self, spec, ev, out, first)

    def fields_of(self, spec: Mapping[str, Any], output: Any, data: Any,
                  expected: Any = None) -> dict[str, Any]:
        """The check's fields of ``output`` for inputs ``data`` (only its form on a dry run)."""
        if not self.check_values:
            return _launch_only(self.problem, spec, output)
        return check_fields(judge(self.problem, spec, output, data, expected))

    def output_limit(self, spec: Mapping[str, Any], data: Any) -> tuple[int | None, Any]:
        """(the most bytes of output read back for inputs ``data``, the reference when it was
        computed for that): the problem's output's element count, from its ``output_meta`` where it
        states one, else from its reference's output (which the check then reuses), at
        :data:`WIDEST` bytes each. None on a dry
        run of a problem without ``output_meta``: its values are not checked, and its reference
        (minutes a shape on a CPU for moe) is not run for the bound."""
        meta = self.problem.output_meta(dict(spec)) if getattr(self.problem, "output_meta", None) else None
        expected = None
        if meta is None:
            if not self.check_values:
                return None, None
            meta = expected = self.problem.reference(data).cpu()
        return meta.numel() * WIDEST, expected

    def first_call(self, spec: Mapping[str, Any], ev: Mapping[str, Any], out: Path) -> Assessment:
        """The assessment of the untimed call (the only call of ``test``)."""
        if ev["event"] == "error":
            return Assessment(None, ev["error"])
        data = self.problem.generate_input(dict(spec), device=device())
        mutated = list(ev.get("mutated") or [])
        mutated += [m for m in ev.get("timed_mutated") or [] if m not in mutated]
        try:
            limit, expected = self.output_limit(spec, data)
            output = read_output(ev.get("output"), out, limit)
        except UnreadableOutput as e:
            return Assessment(None, f"the worker's output cannot be read back: {e}", tuple(mutated))
        except Exception as e:  # noqa: BLE001 - the reference failed: the shape fails, named
            return Assessment(None, f"checking the output failed: {type(e).__name__}: {e}", tuple(mutated))
        try:
            return Assessment(self.fields_of(spec, output, data, expected), None, tuple(mutated))
        except Exception as e:  # noqa: BLE001 - e.g. the reference ran out of memory: the shape fails, named
            return Assessment(None, f"checking the output failed: {type(e).__name__}: {e}", tuple(mutated))


def check_fields(res: Any) -> dict[str, Any]:
    def finite(x: float) -> float | None:
        return x if isinstance(x, (int, float)) and math.isfinite(x) else None

    return {
        "passed": bool(res.passed),
        "max_abs_err": finite(float(res.max_abs_err)),
        "max_rel_err": finite(float(res.max_rel_err)),
        "mismatches": int(res.mismatches),
        "total": int(res.total),
        "mismatch_ratio": float(res.mismatch_ratio),
        "message": str(res.message),
        "rel_l2_err": finite(float(getattr(res, "rel_l2_err", math.nan))),
    }
