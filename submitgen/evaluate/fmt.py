"""The text ``submitgen test`` and ``bench`` print, and their ``--json`` fields inside the shared
envelope (submitgen/textfmt.py; docs/json.md has the keys): one report gives both, so the verdict
and the exit code are the same. ``--reference-kernels`` runs get the same table and verdict,
filled with what eval.py reported (:func:`format_reference_report`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from submitgen.evaluate.popcorn import CaseResult
from submitgen.evaluate.refkernels import REFERENCE_UNAVAILABLE_EXIT, RefReport, label
from submitgen.evaluate.results import (
    KERNEL_DRY_RUN,
    KERNEL_FALLBACK,
    KERNEL_INTERPRETED,
    KERNEL_NO_GPU,
    TIMING_SKIPPED,
    BenchReport,
    BenchResult,
    Figures,
    ShapeResult,
    TestReport,
    Timing,
    format_ns,
    modified,
)

FALLBACK_ONLY = "kernel not run: fallback only"
DRY_RUN = "launches checked, outputs not checked"
INTERPRETED = "kernel checked under the Triton interpreter"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()]
    out += [fmt.format(*r).rstrip() for r in rows]
    return out


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def progress_line(result: ShapeResult | BenchResult, position: int, count: int) -> str:
    return f"[{position}/{count}] {result.shape.label}: {result.summary()}"


def _grouped_errors(results: Sequence[ShapeResult | BenchResult]) -> list[str]:
    """Each distinct error text once, after the labels of the shapes that gave it."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.error:
            groups.setdefault(r.error, []).append(r.shape.label)
    return [f"{', '.join(labels)}: {error}" for error, labels in groups.items()]


def _head(report: TestReport | BenchReport) -> list[str]:
    lines = [f"{report.problem}: {report.path}", report.backend.describe()]
    if report.backend.compile_note:
        lines.append(report.backend.compile_note)
    lines += [f"  the file printed: {ln}" for ln in report.backend.output]
    lines += [f"lint warning: {ln}" for ln in report.lint_warnings]
    return lines


def test_verdict(report: TestReport | BenchReport) -> str:
    """The last line of ``submitgen test`` and ``bench``."""
    if report.cannot_run is not None:
        return f"cannot run here: needs {report.cannot_run}"
    failed = sum(not r.passed for r in report.results)
    n = len(report.results)
    kernel = report.backend.kernel
    notes = {KERNEL_FALLBACK: FALLBACK_ONLY, KERNEL_DRY_RUN: DRY_RUN, KERNEL_INTERPRETED: INTERPRETED}
    note = notes.get(kernel)
    timed_out = sum((getattr(r, "error", None) or "").startswith("timed out") for r in report.results)
    if failed and kernel == KERNEL_INTERPRETED and timed_out:
        note = (f"not checked: {timed_out} timed out under the Triton interpreter; a smaller shape "
                "(--shape K=V,...) or a longer --timeout may finish")
    if failed:
        return f"FAILED: {failed} of {n} shapes failed" + (f" ({note})" if note else "")
    if kernel == KERNEL_FALLBACK:
        return f"{FALLBACK_ONLY} (the pure-torch fallback passed all {n} shapes)"
    if kernel == KERNEL_DRY_RUN:
        return f"{DRY_RUN}: all {n} shapes launched against the stand-in library"
    if kernel == KERNEL_INTERPRETED:
        return f"{INTERPRETED}: all {n} shapes passed"
    return f"all {n} shapes passed"


def require_kernel_line(report: TestReport | BenchReport) -> str | None:
    """What ``--require-kernel`` says when the kernel did not run (None when it ran)."""
    why = {KERNEL_FALLBACK: "only the pure-torch fallback ran",
           KERNEL_DRY_RUN: "a dry run against the stand-in library, no kernel ran",
           KERNEL_NO_GPU: "no GPU here"}.get(report.backend.kernel)
    return None if why is None else f"--require-kernel: the kernel did not run ({why})"


def shape_verdict(r: ShapeResult) -> str:
    """The result column of ``test``'s table: pass, FAIL, ERROR, MUTATED or launched (a dry run)."""
    if r.mutated:
        return "MUTATED"
    if r.passed and not r.checked:
        return "launched"
    return "pass" if r.passed else ("ERROR" if r.error else "FAIL")


def score_ns(report: BenchReport) -> float | None:
    """The score: the geometric mean of the shapes' means, None unless every shape was timed."""
    means = [r.timing.mean_ns for r in report.results if r.timing and r.timing.mean_ns]
    if not means or len(means) != len(report.results):
        return None
    return math.exp(sum(math.log(m) for m in means) / len(means))


def format_test_report(report: TestReport) -> list[str]:
    """The final table, each distinct failure's details once, and the verdict."""
    if report.cannot_run is not None:
        return [*_head(report), *_grouped_errors(report.results), test_verdict(report)]
    rows = []
    for r in report.results:
        g = r.figures
        ratio = "-" if g is None else f"{g.mismatch_ratio:.3%}"
        mism = "-" if g is None else f"{g.mismatches:,}/{g.total:,}"
        verdict = shape_verdict(r)
        errs = [_num(g.max_abs_err), _num(g.max_rel_err)] if g else ["-", "-"]
        seconds = "-" if r.seconds is None else f"{r.seconds:.2f}s"
        rows.append([r.shape.label, verdict, *errs, mism, ratio, seconds])
    lines = _head(report)
    lines += _table(["shape", "result", "max abs err", "max rel err", "mismatches", "ratio", "time"], rows)
    lines += _grouped_errors(report.results)
    for r in report.results:
        if r.passed or r.error:
            continue
        if r.mutated:
            why = ("this leaderboard's evaluator passes the inputs uncloned, so its reference would read the "
                   "changed tensors" if not report.clones_inputs else
                   "the leaderboard's timed loop passes the inputs uncloned")
            lines.append(
                f"{r.shape.label}: {'; '.join(modified(m) for m in r.mutated)} ({why}): write results "
                "into a fresh tensor instead"
            )
        else:
            lines.append(f"{r.shape.label}: {r.message}")
    lines.append(test_verdict(report))
    return lines


def format_bench_report(report: BenchReport) -> list[str]:
    if report.cannot_run is not None:
        return [*_head(report), *_grouped_errors(report.results),
                f"cannot run here: needs {report.cannot_run}"]
    rows = []
    for r in report.results:
        status = "error" if r.error else ("ok" if r.correct else "WRONG")
        t = r.timing
        figures = [t.mean_ns, t.std_ns, t.err_ns, t.best_ns, t.worst_ns] if t else [None] * 5
        rows.append([r.shape.label, str(t.runs if t else 0), *(format_ns(f) for f in figures), status])
    lines = _head(report)
    lines.append(report.mode_note())
    lines.append(report.timing_note())
    if report.stop:
        lines.append(report.stop)
    lines += _table(["shape", "runs", "mean", "std", "err", "best", "worst", "output"], rows)
    lines += _grouped_errors(report.results)
    for r in report.results:
        if not r.error and not r.correct:
            lines.append(f"{r.shape.label}: wrong output: {r.check_message}")
    if any(r.skipped for r in report.results):
        lines.append(TIMING_SKIPPED)
    geo = score_ns(report)
    if geo is not None:
        lines.append(f"geometric mean of the means: {format_ns(geo)} ({report.timing} time)")
    lines.append(test_verdict(report))
    return lines


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


def _rows(report: RefReport) -> list[tuple[str, CaseResult | None]]:
    """One row per case of the cases file: its label and what eval.py reported for it (None: not
    reported)."""
    by_index = {c.index: c for c in report.result.cases} if report.result else {}
    return [(label(line), by_index.get(i)) for i, line in enumerate(report.cases)]


def _status(case: CaseResult | None) -> str:
    if case is None or case.status is None:
        return "not run"
    return "pass" if case.status == "pass" else "FAIL"


def _verdict(report: RefReport, rows: list[tuple[str, CaseResult | None]]) -> list[str]:
    r = report.result
    code = ("stopped" if report.timed_out is not None else
            "no exit code" if report.returncode is None else f"exit code {report.returncode}")
    out = [f"eval.py: check {r.check if r and r.check else '(none)'} ({code})"]
    failed = sum(_status(c) == "FAIL" for _, c in rows)
    unrun = sum(_status(c) == "not run" for _, c in rows)
    n = len(rows)
    if report.passed:
        out.append(f"all {n} shapes passed")
    else:
        if failed:
            out.append(f"FAILED: {failed} of {n} shapes failed" + (f", {unrun} not run" if unrun else ""))
        elif unrun:
            out.append(f"FAILED: {unrun} of {n} shapes not run")
        else:
            out.append("FAILED: every shape ran, but eval.py did not give its pass")
    return out


def format_reference_report(report: RefReport) -> list[str]:
    lines = [f"{report.problem}: {report.path}",
             f"harness: eval.py of {report.folder} (reference-kernels), mode {report.mode}: its own "
             "inputs, reference, checks and timing"]
    lines += [f"lint warning: {ln}" for ln in report.lint_warnings]
    if report.unavailable is not None:
        first, _, rest = report.unavailable.partition("\n")
        lines.append(f"the reference cannot run here: {first}")
        lines += [f"  {ln}" for ln in rest.splitlines()]
        lines.append(f"nothing was run; no verdict (exit code {REFERENCE_UNAVAILABLE_EXIT})")
        return lines
    if report.mode != "test" and report.ranking_by == "last":
        lines.append("task.yml ranks by the last benchmark (ranking_by: last): kernelbot runs only that one")
    rows = _rows(report)
    if report.mode == "test":
        lines += _table(["shape", "result"], [[name, _status(c)] for name, c in rows])
    else:
        table = []
        for name, c in rows:
            s = c.stats if c else None
            figures = [s.mean, s.std, s.err, s.best, s.worst] if s else [None] * 5
            table.append([name, str(s.runs) if s else "0", *(format_ns(f) for f in figures), _status(c)])
        lines += _table(["shape", "runs", "mean", "std", "err", "best", "worst", "result"], table)
    for name, c in rows:
        if c is not None and c.error:
            first, _, rest = c.error.partition("\n")
            lines.append(f"{name}: {first}")
            lines += [f"  {ln}" for ln in rest.splitlines()]
        elif c is not None and c.message:
            lines.append(f"{name}: {c.message}")
    means = [c.stats.mean for _, c in rows if c and c.stats and c.stats.mean > 0]
    if report.mode != "test" and means and len(means) == len(rows):
        geo = math.exp(sum(math.log(m) for m in means) / len(means))
        lines.append(f"geometric mean of the means: {format_ns(geo)} (eval.py's timing)")
    if report.timed_out is not None:
        lines.append(f"eval.py ran past its limit of {report.timed_out:g} s and was stopped")
    elif report.returncode not in (0, 112):
        lines.append(f"eval.py ended with exit code {report.returncode} before its verdict")
    if not report.passed and report.output_tail and (report.timed_out is not None
                                                     or report.returncode not in (0, 112)):
        lines.append("its last output:")
        lines += [f"  {ln}" for ln in report.output_tail.splitlines()]
    lines += _verdict(report, rows)
    return lines
