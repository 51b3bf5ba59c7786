"""The leaderboards' correctness rules, written from reference-kernels' ``utils.py`` (docs/rules.md,
"Evaluation"): ``verbose_allclose`` (every element, NaN and infinities matched), and mixed-mla's
escape (at most ``max_mismatch_ratio`` of the elements failing ``torch.isclose``). Every result
also carries the relative L2 error, which shows real accuracy where the 5% rule is weak."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    max_mismatch_ratio: float = 0.0  # fraction of elements allowed to fail isclose (mixed-mla: 0.05)
    check_dtype: bool = False  # an output whose dtype differs from the reference's fails (mxfp4-mm)


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    max_abs_err: float  # largest |out - ref| where both are finite (nan when shapes differ)
    max_rel_err: float  # largest |out - ref| / |ref| where finite and |ref| > atol (below: atol judges)
    mismatches: int
    total: int
    mismatch_ratio: float
    message: str
    rel_l2_err: float = math.nan  # ||out - ref||_2 / ||ref||_2 over finite elements


def _shape_fail(output: object, expected: torch.Tensor) -> CheckResult:
    got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
    total = expected.numel()
    return CheckResult(False, math.nan, math.nan, total, total, 1.0,
                       f"SIZE MISMATCH: expected shape {tuple(expected.shape)}, got {got}")


def _rule_mismatches(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> torch.Tensor:
    """verbose_allclose's mismatch mask."""
    diff = (out.float() - ref.float()).abs()
    bad = diff > (tol.atol + tol.rtol * ref.abs())
    bad |= torch.isnan(out) ^ torch.isnan(ref)
    bad |= torch.isposinf(out) ^ torch.isposinf(ref)
    bad |= torch.isneginf(out) ^ torch.isneginf(ref)
    return bad


def compare(output: object, expected: torch.Tensor, tol: Tolerance) -> CheckResult:
    """Judge ``output`` against the reference output ``expected`` by the leaderboard's rule."""
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
        return _shape_fail(output, expected)
    if tol.check_dtype and output.dtype != expected.dtype:
        total = expected.numel()
        return CheckResult(False, math.nan, math.nan, total, total, 1.0,
                           f"DTYPE MISMATCH: expected {expected.dtype}, got {output.dtype}")
    out = output.detach().to(expected.device)
    total = out.numel()
    rule_mismatches = int(_rule_mismatches(out, expected, tol).sum())
    if tol.max_mismatch_ratio > 0:
        # The count that decides is isclose's; verbose_allclose still passes a perfect output.
        mismatches = int((~torch.isclose(out.float(), expected.float(), rtol=tol.rtol, atol=tol.atol)).sum())
        passed = rule_mismatches == 0 or mismatches / max(total, 1) <= tol.max_mismatch_ratio
        rule = f"rtol={tol.rtol:g} atol={tol.atol:g}, up to {tol.max_mismatch_ratio:.0%} mismatches"
    else:
        mismatches = rule_mismatches
        passed = mismatches == 0
        rule = f"rtol={tol.rtol:g} atol={tol.atol:g}, every element"

    o, r = out.float(), expected.float()
    finite = torch.isfinite(o) & torch.isfinite(r)
    d = (o - r).abs().where(finite, 0.0)
    max_abs = float(d.max()) if total else 0.0
    big = finite & (r.abs() > tol.atol)
    max_rel = float((d / r.abs()).where(big, 0.0).max()) if total else 0.0
    ref_norm = float(r.where(finite, 0.0).norm())
    err_norm = float(d.norm())
    rel_l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)

    ratio = mismatches / max(total, 1)
    message = (f"{'pass' if passed else 'FAIL'} ({rule}): {mismatches}/{total} mismatched ({ratio:.4%}), "
               f"max abs err {max_abs:.4g}, max rel err {max_rel:.4g}, rel L2 err {rel_l2:.4g}")
    return CheckResult(passed, max_abs, max_rel, mismatches, total, ratio, message, rel_l2)
