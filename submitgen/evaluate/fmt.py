"""The text ``submitgen test`` and ``bench`` print."""

from __future__ import annotations

from collections.abc import Sequence

from .results import BenchReport, BenchResult, ShapeResult, TestReport, format_ns, modified


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


def format_test_report(report: TestReport) -> list[str]:
    """The final table, a line per failure's details, and the verdict."""
    rows = []
    for r in report.results:
        g = r.figures
        ratio = "-" if g is None else f"{g.mismatch_ratio:.3%}"
        mism = "-" if g is None else f"{g.mismatches:,}/{g.total:,}"
        verdict = "pass" if r.passed else ("ERROR" if r.error else "FAIL")
        if r.mutated:
            verdict = "MUTATED"
        errs = [_num(g.max_abs_err), _num(g.max_rel_err)] if g else ["-", "-"]
        seconds = "-" if r.seconds is None else f"{r.seconds:.2f}s"
        rows.append([r.shape.label, verdict, *errs, mism, ratio, seconds])
    lines = [f"{report.problem}: {report.path}", report.backend.describe()]
    lines += [f"  the file printed: {ln}" for ln in report.backend.output]
    lines += [f"lint warning: {ln}" for ln in report.lint_warnings]
    lines += _table(["shape", "result", "max abs err", "max rel err", "mismatches", "ratio", "time"], rows)
    for r in report.results:
        if r.passed:
            continue
        if r.error:
            lines.append(f"{r.shape.label}: {r.error}")
        elif r.mutated:
            why = ("this leaderboard's evaluator passes the inputs uncloned, so its reference would read the "
                   "changed tensors" if not report.clones_inputs else
                   "the leaderboard's timed loop passes the inputs uncloned")
            lines.append(
                f"{r.shape.label}: {'; '.join(modified(m) for m in r.mutated)} ({why}): write results "
                "into a fresh tensor instead"
            )
        else:
            lines.append(f"{r.shape.label}: {r.message}")
    lines.append(verdict_line(report.results))
    return lines


def format_bench_report(report: BenchReport) -> list[str]:
    rows = []
    for r in report.results:
        status = "error" if r.error else ("ok" if r.correct else "WRONG")
        t = r.timing
        figures = [t.mean_ns, t.std_ns, t.err_ns, t.best_ns, t.worst_ns] if t else [None] * 5
        rows.append([r.shape.label, str(t.runs if t else 0), *(format_ns(f) for f in figures), status])
    lines = [f"{report.problem}: {report.path}", report.backend.describe()]
    lines += [f"  the file printed: {ln}" for ln in report.backend.output]
    lines += [f"lint warning: {ln}" for ln in report.lint_warnings]
    lines.append(report.mode_note())
    lines.append(report.timing_note())
    if report.stop:
        lines.append(report.stop)
    lines += _table(["shape", "runs", "mean", "std", "err", "best", "worst", "output"], rows)
    for r in report.results:
        if r.error:
            lines.append(f"{r.shape.label}: {r.error}")
        elif not r.correct:
            lines.append(f"{r.shape.label}: wrong output: {r.check_message}")
    means = [r.timing.mean_ns for r in report.results if r.timing and r.timing.mean_ns]
    if means and len(means) == len(report.results):
        import math

        geo = math.exp(sum(math.log(m) for m in means) / len(means))
        lines.append(f"geometric mean of the means: {format_ns(geo)} ({report.timing} time)")
    lines.append(verdict_line(report.results))
    return lines


def verdict_line(results: Sequence[ShapeResult | BenchResult]) -> str:
    failed = sum(not r.passed for r in results)
    n = len(results)
    return f"all {n} shapes passed" if failed == 0 else f"FAILED: {failed} of {n} shapes failed"
