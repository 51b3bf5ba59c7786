"""The text ``submitgen test`` and ``bench`` print."""

from __future__ import annotations

import math
from collections.abc import Sequence

from submitgen.evaluate.results import (
    KERNEL_DRY_RUN,
    KERNEL_FALLBACK,
    KERNEL_INTERPRETED,
    KERNEL_NO_GPU,
    TIMING_SKIPPED,
    BenchReport,
    BenchResult,
    ShapeResult,
    TestReport,
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
