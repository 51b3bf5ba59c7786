"""``submitgen test --json`` and ``bench --json``: a report's fields inside the shared envelope
(submitgen/textfmt.py; docs/json.md has the keys, docs/json.schema.json the schema). The same
report gives the text table (:mod:`.fmt`), so the verdict and the exit code are the text mode's."""

from __future__ import annotations

from typing import Any

from submitgen.evaluate.fmt import require_kernel_line, score_ns, shape_verdict, test_verdict
from submitgen.evaluate.results import BenchReport, BenchResult, Figures, ShapeResult, TestReport, Timing


def _us(ns: float) -> float:
    return ns / 1e3


def _figures(g: Figures | None) -> dict[str, Any] | None:
    if g is None:
        return None
    return {"mismatches": g.mismatches, "total": g.total, "mismatch_ratio": g.mismatch_ratio,
            "max_abs_err": g.max_abs_err, "max_rel_err": g.max_rel_err, "rel_l2_err": g.rel_l2_err}


def _timing(t: Timing | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"runs": t.runs, "mean_us": _us(t.mean_ns), "std_us": _us(t.std_ns), "err_us": _us(t.err_ns),
            "best_us": _us(t.best_ns), "worst_us": _us(t.worst_ns)}


def _shape(r: ShapeResult | BenchResult) -> dict[str, Any]:
    s = r.shape
    return {"label": s.label, "kind": s.kind, "index": s.index, "spec": s.spec_dict, "passed": r.passed,
            "error": r.error, "missing": r.missing}


def _test_shape(r: ShapeResult) -> dict[str, Any]:
    return {**_shape(r), "result": shape_verdict(r), "message": r.message, "mutated": list(r.mutated),
            "checked": r.checked, "seconds": r.seconds, "figures": _figures(r.figures)}


def _bench_shape(r: BenchResult) -> dict[str, Any]:
    result = "error" if r.error else ("ok" if r.correct else "WRONG")
    return {**_shape(r), "result": result, "message": r.check_message, "timing": _timing(r.timing),
            "skipped": r.skipped, "flush_mib": None if r.flush is None else r.flush.mib}


def _common(report: TestReport | BenchReport, require_kernel: bool) -> dict[str, Any]:
    b = report.backend
    exit_code = report.exit_code(require_kernel)
    why = require_kernel_line(report) if require_kernel and report.cannot_run is None else None
    return {"file": report.path, "problem": report.problem,
            "backend": {"value": b.value, "kernel": b.kernel, "gpu": b.gpu, "device": b.device,
                        "text": b.describe()},
            "verdict": test_verdict(report), "require_kernel": why, "cannot_run": report.cannot_run,
            "exit_code": exit_code, "lint_warnings": list(report.lint_warnings)}


def test_fields(report: TestReport, require_kernel: bool = False) -> dict[str, Any]:
    """``test --json``'s fields."""
    return {**_common(report, require_kernel), "mode": "test",
            "shapes": [_test_shape(r) for r in report.results]}


def bench_fields(report: BenchReport, require_kernel: bool = False) -> dict[str, Any]:
    """``bench --json``'s fields; ``score_us`` is the geometric mean of the means (null unless every
    shape was timed)."""
    score = score_ns(report)
    return {**_common(report, require_kernel), "mode": report.mode, "timing": report.timing,
            "flush_mib": report.flush_mib, "flush_note": report.flush_note(), "stop": report.stop,
            "shapes": [_bench_shape(r) for r in report.results],
            "score_us": None if score is None else _us(score)}
