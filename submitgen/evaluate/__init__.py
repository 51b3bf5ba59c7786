"""``submitgen test`` and ``submitgen bench``: run a single-file submission on this machine the way
the leaderboard's evaluator does (docs/rules.md, "Evaluation").

Process model. The submission is copied as ``submission.py`` next to the problem's ``task.py`` in
a fresh temporary folder, and ONE fresh Python process (:mod:`submitgen.evaluate_worker`) imports it
and runs every selected shape, like ``eval.py``'s single spawned worker: module-level code runs once,
per-shape caches carry across shapes as they do on the leaderboard, and torch and the submission
are imported once instead of once per shape. If that process dies (a segfault in a kernel) or a
shape runs past ``timeout_s``, the shape is reported as failed with the tail of the process output,
and a new process carries on with the remaining shapes.

For each shape (``test``): the inputs are generated with the shape's seed (combined with ``--seed``
by eval.py's Cantor pairing), ``custom_kernel`` is called on a clone (or, where the problem's
evaluator does not clone, on the inputs themselves), and every input is compared with a pristine
copy byte for byte: an input the kernel changed fails the shape, named. The output is judged in
THIS process (:mod:`submitgen.evaluate.check`): the worker writes its raw bytes to a file, and the
inputs, the reference and the check are computed here, out of the submission's reach.

``bench`` times ``custom_kernel`` per shape after one untimed, checked call. With a GPU
(``torch.cuda.is_available()``, CUDA or ROCm) it records device events around each call and zeroes
a flush buffer (``flush_mib``, default 512 MiB, larger than MI355X's 256 MB MALL) before each
iteration; the leaderboard's 62.5 GiB fill also hides host launch overhead, which a smaller flush
may not. Without a GPU it measures host wall time and says so: those figures are not comparable
with the leaderboard's."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import EvaluateError, LintFailed, ProblemError
from ..lint import lint_report, read_header, read_submission, render_findings, resolve_leaderboard
from .check import OutputError, check_fields, judge, read_output
from .fmt import format_bench_report, format_ns, format_test_report, progress_line
from .process import IMPORT_TIMEOUT_S, RunState, run_worker
from .recheck import recheck_fields
from .results import Backend, BenchReport, BenchResult, Figures, Shape, ShapeResult, TestReport, Timing
from .shapes import combine_seed, parse_shape, select_shapes
from .stoprule import WALL_S, rule_for

R = TypeVar("R")

__all__ = [
    "IMPORT_TIMEOUT_S",
    "Backend",
    "BenchReport",
    "BenchResult",
    "EvaluateError",
    "LintFailed",
    "Prepared",
    "Shape",
    "ShapeResult",
    "TestReport",
    "combine_seed",
    "format_bench_report",
    "format_ns",
    "format_test_report",
    "parse_shape",
    "prepare",
    "progress_line",
    "run_bench",
    "run_test",
    "select_shapes",
]

DEFAULT_TIMEOUT_S = 900.0
MAX_TIMEOUT_S = 86_400.0
DEFAULT_MAX_TIME_S = WALL_S
BENCH_MODES = ("benchmark", "leaderboard")
DEFAULT_FLUSH_MIB = 512


@dataclass(frozen=True)
class Prepared:
    path: str
    text: str
    problem: Any  # submitgen.problems.ProblemSpec
    lint_warnings: tuple[str, ...] = ()


def prepare(path: str | Path, problem: str | None = None, *, lint: bool = True) -> Prepared:
    """Read the file, resolve its problem (header or ``problem``), lint it (LintFailed on any
    failed rule) and load the local problem (EvaluateError when submitgen has none for it)."""
    text, size = read_submission(path)
    canon = resolve_leaderboard(problem) if problem is not None else None
    warnings: tuple[str, ...] = ()
    if lint:
        report = lint_report(text, problem=canon, size_bytes=size)
        if report.errors:
            raise LintFailed(str(path), report.errors, render_findings(report.errors, str(path)))
        warnings = tuple(render_findings(report.warnings, str(path)))
    name = canon or read_header(text).leaderboard
    if name is None:
        raise EvaluateError(f"{path}: no '#!POPCORN leaderboard' line and no --problem: which problem?")
    resolve_leaderboard(name)  # unknown leaderboards are refused here when lint is off
    from ..problems import get_problem

    try:
        prob = get_problem(name)
    except ProblemError as e:
        raise EvaluateError(f"leaderboard {name!r} has no local problem to test against ({e})") from None
    return Prepared(str(path), text, prob, warnings)


def check_timeout(timeout_s: float) -> float:
    """``timeout_s`` as a usable limit; EvaluateError for inf, nan, 0 or less, or more than a day."""
    if (
        not isinstance(timeout_s, (int, float))
        or not math.isfinite(timeout_s)
        or not 0 < timeout_s <= MAX_TIMEOUT_S
    ):
        raise EvaluateError(
            f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:,.0f}, got {timeout_s}"
        )
    return float(timeout_s)


def _first_output(log: Path, n: int = 3) -> tuple[str, ...]:
    try:
        with open(log, "rb") as f:
            lines = [
                ln.rstrip() for ln in f.read(64 * 1024).decode(errors="replace").splitlines() if ln.strip()
            ]
    except OSError:
        return ()
    seen: list[str] = []
    for ln in lines:
        if ln not in seen:
            seen.append(ln)
        if len(seen) == n:
            break
    return tuple(seen)


def _execute(prep: Prepared, mode: str, shapes: Sequence[Shape], options: dict[str, Any], timeout_s: float,
             on_result: Callable[[int, dict[str, Any], Path], None]) -> tuple[RunState, Path]:
    """Run all ``shapes``, starting a new worker after one dies, until every shape has a result."""
    from ..problems.registry import import_root

    state = RunState()
    # the pid in the name lets files.clean_stale remove it after a kill -9
    tmp = Path(tempfile.mkdtemp(prefix=f"submitgen-{os.getpid()}-run-"))
    run = tmp / "run"
    run.mkdir()
    (run / "submission.py").write_text(prep.text, encoding="utf-8", errors="surrogateescape")
    (run / "task.py").write_text(prep.problem.task_source)
    cfg = {"mode": mode, "problem": prep.problem.leaderboard, "problem_module": prep.problem.module,
           "problem_root": import_root(prep.problem), **options}
    todo = list(range(len(shapes)))
    attempt = 0
    while todo:
        mapping = dict(enumerate(todo))

        def mapped(pos: int, ev: dict[str, Any], out: Path, mapping: dict[int, int] = mapping) -> None:
            on_result(mapping[pos], ev, out)

        left = run_worker(cfg, [shapes[i] for i in todo], timeout_s, mapped, tmp, attempt, state)
        if state.import_error is not None:
            break
        todo = [mapping[i] for i in left]
        attempt += 1
    return state, tmp


def _backend_of(state: RunState, tmp: Path) -> Backend:
    ready = state.ready or {}
    import torch

    gpu = ready.get("gpu")
    gpu = bool(gpu) if isinstance(gpu, bool) else torch.cuda.is_available()
    return Backend(
        state.backend, gpu, str(ready.get("device", "cpu"))[:200], _first_output(tmp / "worker-0.log")
    )


def _number(ev: Mapping[str, Any], key: str) -> float | None:
    x = ev.get(key)
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _verdict(
    prep: Prepared, shape: Shape, ev: dict[str, Any], out: Path, recheck: bool = False
) -> tuple[dict[str, Any] | None, str | None]:
    """(check fields, None) for the output the worker wrote, or (None, why it cannot be judged).
    ``recheck`` (bench --mode leaderboard): every timed call's output is judged too."""
    if ev["event"] == "error":
        return None, ev["error"]
    try:
        output = read_output(ev.get("output"), out)
    except OutputError as e:
        return None, f"the worker's output cannot be read back: {e}"
    try:
        fields = check_fields(judge(prep.problem, shape.spec_dict, output))
        if recheck and fields["passed"]:
            fields = recheck_fields(prep.problem, shape.spec_dict, ev, out, fields)
        return fields, None
    except Exception as e:  # noqa: BLE001 - e.g. the reference ran out of memory: the shape fails, named
        return None, f"checking the output failed: {type(e).__name__}: {e}"


def _mutated(prep: Prepared, ev: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(ev.get("mutated") or ())


def _run_shapes(prep: Prepared, kind: str, selected: Sequence[Shape], options: dict[str, Any],
                timeout_s: float, result: Callable[..., R], missing: Callable[[Shape], R],
                report: Callable[[tuple[R, ...], Backend], Any],
                progress: Callable[[R, int, int], None] | None) -> Any:
    """Run ``kind`` on every selected shape in a fresh process: ``result(shape, fields, error, ev,
    mutated)`` makes each shape's result as it finishes (``missing(shape)`` one that never ran),
    ``report(results, backend)`` the report."""
    done: dict[int, R] = {}

    def on(pos: int, ev: dict[str, Any], out: Path) -> None:
        fields, error = _verdict(prep, selected[pos], ev, out, bool(options.get("recheck")))
        done[pos] = result(selected[pos], fields, error, ev, _mutated(prep, ev))
        if progress:
            progress(done[pos], len(done), len(selected))

    state, tmp = _execute(prep, kind, selected, options, timeout_s, on)
    try:
        if state.import_error is not None:
            for pos in range(len(selected)):
                if pos not in done:
                    on(pos, {"event": "error", "error": state.import_error}, tmp)
        results = tuple(done.get(pos) or missing(s) for pos, s in enumerate(selected))
        return report(results, _backend_of(state, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_test(path: str | Path, *, problem: str | None = None, shapes: str = "test",
             custom: Sequence[Mapping[str, Any] | str] = (), seed: int | None = None,
             timeout_s: float = DEFAULT_TIMEOUT_S, lint: bool = True,
             progress: Callable[[ShapeResult, int, int], None] | None = None) -> TestReport:
    """Lint, then run ``custom_kernel`` on every selected shape in a fresh process and judge each
    output here. ``progress(result, finished, count)`` is called as each shape finishes."""
    timeout_s = check_timeout(timeout_s)
    prep = prepare(path, problem, lint=lint)
    selected = select_shapes(prep.problem, shapes, custom=custom, seed=seed)

    def result(shape: Shape, fields: dict[str, Any] | None, error: str | None, ev: Mapping[str, Any],
               mutated: tuple[str, ...]) -> ShapeResult:
        f = fields or {}
        return ShapeResult(
            shape=shape,
            passed=bool(f.get("passed")) and not mutated and error is None,
            figures=Figures.from_fields(f),
            message=str(f.get("message", "")),
            mutated=mutated,
            error=error,
            seconds=_number(ev, "seconds"),
        )

    def report(results: tuple[ShapeResult, ...], backend: Backend) -> TestReport:
        return TestReport(str(path), prep.problem.leaderboard, backend, results,
                          prep.lint_warnings, prep.problem.eval_clones_inputs)

    return _run_shapes(prep, "test", selected, {}, timeout_s, result,
                       lambda s: ShapeResult(s, False, error="not run"), report, progress)


def run_bench(
    path: str | Path,
    *,
    problem: str | None = None,
    shapes: str = "benchmark",
    custom: Sequence[Mapping[str, Any] | str] = (),
    seed: int | None = None,
    iters: int | None = None,
    max_time_s: float = DEFAULT_MAX_TIME_S,
    mode: str = "benchmark",
    flush_mib: int = DEFAULT_FLUSH_MIB,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    lint: bool = True,
    progress: Callable[[BenchResult, int, int], None] | None = None,
) -> BenchReport:
    """Lint, then time ``custom_kernel`` on every selected shape in a fresh process. Timing stops
    by eval.py's rule (:mod:`.stoprule`), with ``max_time_s`` as its wall limit, or after ``iters``
    calls when given. The first call's output is judged here; with ``mode`` 'leaderboard', as in
    the ranked run, each timed call gets fresh inputs (seed += 13) and every output is judged."""
    if mode not in BENCH_MODES:
        raise EvaluateError(f"bench --mode must be one of {', '.join(BENCH_MODES)}, got {mode!r}")
    if iters is not None and iters < 1:
        raise EvaluateError(f"--iters must be at least 1, got {iters}")
    if flush_mib < 0:
        raise EvaluateError(f"--flush-mib must be 0 or more, got {flush_mib}")
    if not math.isfinite(max_time_s) or max_time_s < 0:
        raise EvaluateError(f"--max-time must be a finite number of seconds, 0 or more, got {max_time_s}")
    timeout_s = check_timeout(timeout_s)
    prep = prepare(path, problem, lint=lint)
    selected = select_shapes(prep.problem, shapes, custom=custom, seed=seed)

    def result(shape: Shape, fields: dict[str, Any] | None, error: str | None, ev: Mapping[str, Any],
               mutated: tuple[str, ...]) -> BenchResult:
        message = str((fields or {}).get("message", ""))
        if mutated:
            message += "; " + "; ".join(f"input '{m}' was modified by custom_kernel" for m in mutated)
        return BenchResult(shape=shape, timing=Timing.from_event(ev),
                           correct=bool(fields and fields["passed"]) and not mutated,
                           check_message=message, error=error)

    rule = rule_for(mode, iters, max_time_s)

    def report(results: tuple[BenchResult, ...], backend: Backend) -> BenchReport:
        return BenchReport(str(path), prep.problem.leaderboard, backend, results,
                           "device" if backend.gpu else "host", flush_mib, prep.lint_warnings,
                           mode=mode, stop=rule.describe())

    options = {"stop": rule.to_dict(), "recheck": mode == "leaderboard",
               "flush_bytes": flush_mib * 1024 * 1024}
    return _run_shapes(prep, "bench", selected, options, timeout_s, result,
                       lambda s: BenchResult(s, error="not run"), report, progress)
