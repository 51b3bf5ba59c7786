"""The checks of one shape, made in the worker as eval.py makes them in the submission's process:
the problem's check of the output against the reference of the shape's inputs (only the output's
form on a dry run against a stand-in library), and in ``bench --mode leaderboard`` every timed
call's output (docs/evaluate.md, "What the verdict rests on")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from submitgen.problems.compare import CheckResult

RECHECK_SEED_STEP = 13
"""eval.py's ranked run adds this to the case's seed before every timed call."""


def recheck_spec(spec: Mapping[str, Any], j: int) -> dict[str, Any]:
    """The spec of timed call ``j`` (from 0) in leaderboard mode: seed + 13 * (j + 1)."""
    out = dict(spec)
    if "seed" in out:
        out["seed"] = int(out["seed"]) + RECHECK_SEED_STEP * (j + 1)
    return out


def judge(problem: Any, spec: Mapping[str, Any], output: Any, data: Any,
          check_values: bool) -> dict[str, Any]:
    """The check's fields of ``output`` for inputs ``data`` (without ``check_values``, a dry run:
    only its dtype and shape against the problem's output contract, where it states one)."""
    what = type(output).__name__[:100]
    if not check_values:
        meta = problem.output_meta(dict(spec)) if getattr(problem, "output_meta", None) else None
        if isinstance(meta, tuple):  # a folder's ref_kernel returns a tuple
            outs = output if _tensors(output) else ()
            if len(outs) != len(meta) or any(_form(o) != _form(m) for o, m in zip(outs, meta)):
                return {"passed": False, "message": f"the output is {_form(output)}, the problem returns "
                                                   f"{_form(meta)}"}
            return {"passed": True, "message": "output not checked"}
        if not isinstance(output, torch.Tensor):
            return {"passed": False, "message": f"custom_kernel returned {what}, not a tensor"}
        if meta is not None and (output.dtype != meta.dtype or tuple(output.shape) != tuple(meta.shape)):
            return {"passed": False, "message": f"the output is {output.dtype} {list(output.shape)}, the "
                                               f"problem returns {meta.dtype} {list(meta.shape)}"}
        return {"passed": True, "message": "output not checked"}
    expected = problem.reference(data)
    if isinstance(expected, (tuple, list)):
        return check_fields(_judge_items(problem, output, tuple(t.cpu() for t in expected)))
    expected = expected.cpu()
    if not isinstance(output, torch.Tensor):
        total = expected.numel()
        return check_fields(CheckResult(False, math.nan, math.nan, total, total, 1.0,
                                        f"custom_kernel returned {what}, not a tensor of shape "
                                        f"{tuple(expected.shape)}"))
    return check_fields(problem.check(output.detach().cpu(), expected))


def _tensors(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(t, torch.Tensor) for t in value)


def _form(value: Any) -> str:
    if _tensors(value):
        return f"({', '.join(map(_form, value))})"
    if isinstance(value, torch.Tensor):
        return f"{value.dtype} {list(value.shape)}"
    return type(value).__name__[:100]


def _judge_items(problem: Any, output: Any, expected: tuple) -> CheckResult:
    """A tuple output (a folder's ref_kernel returns one) judged item by item, as a folder's
    check_implementation takes it: it passes where every ``out[j]`` passes the problem's check; the
    message names the first that fails."""
    total = sum(t.numel() for t in expected)
    if not (_tensors(output) and len(output) == len(expected)):
        return CheckResult(False, math.nan, math.nan, total, total, 1.0,
                           f"custom_kernel returned {_form(output)}, not a tuple of {len(expected)} tensors")
    results = [problem.check(o.detach().cpu(), e) for o, e in zip(output, expected)]
    failed = next((j for j, r in enumerate(results) if not r.passed), None)
    mismatches = sum(r.mismatches for r in results)
    return CheckResult(failed is None, max(r.max_abs_err for r in results),
                       max(r.max_rel_err for r in results), mismatches, total,
                       mismatches / total if total else 0.0,
                       results[0].message if failed is None else f"out[{failed}]: {results[failed].message}")


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


def with_timed_calls(fields: dict[str, Any], mutated: list[str], spec: Mapping[str, Any],
                     calls: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """``fields`` (the untimed call's) with every timed call's check of leaderboard mode: ``calls``
    holds each call's changed inputs (``mutated``, added to ``mutated`` here) and its fields (None:
    not judged, a call before it failed) or the ``error`` its check raised. The first failing call
    fails the shape, named with its seed; an input a call changed is named with the call. Returns
    (fields, error)."""
    runs, changes, message = len(calls), [], None
    for j, call in enumerate(calls):
        call_spec = recheck_spec(spec, j)
        where = f"timed call {j + 1} of {runs}"
        if "seed" in call_spec:
            where += f" (seed {call_spec['seed']})"
        changes += [f"{where}: input '{m}' was changed by the call" for m in call["mutated"]
                    if m not in mutated]
        mutated += [m for m in call["mutated"] if m not in mutated]
        if message is None and call.get("error"):
            return fields, f"{where}: checking the output failed: {call['error']}"
        if message is None and call.get("fields") and not call["fields"]["passed"]:
            message = f"{where}: {call['fields']['message']}"
    if message is not None:
        return {**fields, "passed": False, "message": "; ".join([message, *changes])}, None
    if changes:
        fields = {**fields, "message": "; ".join([str(fields.get("message", "")), *changes])}
    return fields, None
