"""The text of ``test``/``bench --reference-kernels``: the built-in harness's table and verdict,
filled with what eval.py reported."""

from __future__ import annotations

import math

from submitgen.evaluate.fmt import _table
from submitgen.evaluate.popcorn import CaseResult
from submitgen.evaluate.refkernels import REFERENCE_UNAVAILABLE_EXIT, RefReport, label
from submitgen.evaluate.results import format_ns


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
