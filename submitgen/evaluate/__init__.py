"""``submitgen test`` and ``submitgen bench``: run a single-file submission on this machine the way
the leaderboard's evaluator does, and report (docs/evaluate.md says what runs, in which process,
and what the verdict rests on). Here: the options checked, the shapes selected, what will run said
first, the worker's events (:mod:`.process`) turned into the report (:mod:`.results`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from submitgen.errors import EvaluateError, LintError, ProblemError
from submitgen.evaluate import interpret
from submitgen.evaluate.estimate import estimate_line
from submitgen.evaluate.group import signals_end_the_run
from submitgen.evaluate.interpret import TIMEOUT_S
from submitgen.evaluate.layout import lay_out
from submitgen.evaluate.process import PASSIVE_THREADS, STAND_IN_LIBRARIES, RunState, run_worker
from submitgen.evaluate.results import (
    BenchReport,
    BenchResult,
    Execution,
    Figures,
    Flush,
    Shape,
    ShapeResult,
    TestReport,
    Timing,
    flush_line,
)
from submitgen.evaluate.shapes import select_shapes
from submitgen.evaluate.stoprule import WALL_S, StopRule, rule_for, warmup_rule
from submitgen.files import private_dir
from submitgen.lint import resolve_leaderboard
from submitgen.problems import get_problem
from submitgen.problems.registry import import_root
from submitgen.project.load import load_project
from submitgen.render import provenance

R = TypeVar("R")

DEFAULT_TIMEOUT_S = 900.0
MAX_TIMEOUT_S = 86_400.0
DEFAULT_MAX_TIME_S = WALL_S
BENCH_MODES = ("benchmark", "leaderboard")
DEFAULT_FLUSH_MIB = 16000 * 1024 * 1024 * 4 // 2**20
"""eval.py's flush: ``clear_l2_cache_large`` fills ``torch.randn((16000, 1024, 1024))``, float32:
64,000 MiB (62.5 GiB)."""


@dataclass(frozen=True)
class PreparedFile:
    path: str
    text: str
    problem: Any  # submitgen.problems.ProblemSpec
    lint_warnings: tuple[str, ...] = ()


def prepare(path: str | Path, problem: str | None = None, *, lint: bool = True) -> PreparedFile:
    """Read the file, resolve its problem (header or ``problem``), lint it (LintFailed on any
    failed rule) and load the local problem (EvaluateError when submitgen has none for it). Before
    anything imports torch here, OpenMP's threads are made to sleep while they wait
    (:data:`.process.PASSIVE_THREADS`)."""
    import sys

    if "torch" not in sys.modules:
        os.environ.setdefault(*PASSIVE_THREADS)
    from submitgen.evaluate.refkernels import read_and_lint  # lazy: refkernels imports this package

    text, name, warnings = read_and_lint(str(path), problem, lint)
    if name is None:
        raise EvaluateError(f"{path}: no '#!POPCORN leaderboard' line and no --problem: which problem?")
    try:
        resolve_leaderboard(name)
    except LintError:
        raise EvaluateError(f"leaderboard {name!r} is not one submitgen knows, so the built-in harness has "
                            "no problem to test against; pass --problem with its problem folder (its eval.py "
                            "runs) or --reference-kernels DIR") from None

    try:
        prob = get_problem(name)
    except ProblemError as e:
        raise EvaluateError(f"leaderboard {name!r} has no local problem to test against ({e})") from None
    return PreparedFile(str(path), text, prob, warnings)


def check_timeout(timeout_s: float) -> float:
    """``timeout_s`` as a usable limit; EvaluateError for inf, nan, 0 or less, or more than a day."""
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s)
            and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise EvaluateError(f"--timeout must be a number of seconds above 0 and at most "
                            f"{MAX_TIMEOUT_S:,.0f}, got {timeout_s}")
    return float(timeout_s)


def _first_output(log: Path, n: int = 3) -> tuple[str, ...]:
    """The first ``n`` distinct lines the file printed."""
    try:
        with open(log, "rb") as f:
            text = f.read(64 * 1024).decode(errors="replace")
    except OSError:
        return ()
    return tuple(dict.fromkeys(ln.rstrip() for ln in text.splitlines() if ln.strip()))[:n]


def _execute(prep: PreparedFile, mode: str, shapes: Sequence[Shape], options: dict[str, Any],
             timeout_s: float,
             on_result: Callable[[int, dict[str, Any]], None], tmp: Path, state: RunState,
             compile_first: bool = True) -> None:
    """Lay out the run folder, run the compile pass (unless ``compile_first`` is false: test
    --interpret's driver is no submission), then all ``shapes``, starting a new worker after one
    dies, until every shape has a result."""
    root = import_root(prep.problem)
    lay_out(tmp / "run", prep.text, prep.problem, root)
    folder = getattr(prep.problem, "folder", None)  # a problem folder: the worker finds it by path
    cfg = {"mode": mode, "compile": compile_first, "problem_module": prep.problem.module,
           "problem_root": root,
           "problem": str(Path(folder).resolve()) if folder is not None else prep.problem.leaderboard,
           **options}
    todo = list(range(len(shapes)))
    attempt = 0
    while todo:
        mapping = dict(enumerate(todo))

        def mapped(pos: int, ev: dict[str, Any], mapping: dict[int, int] = mapping) -> None:
            on_result(mapping[pos], ev)

        left = run_worker(cfg, [shapes[i] for i in todo], timeout_s, mapped, tmp, attempt, state)
        if state.import_error is not None:
            break
        todo = [mapping[i] for i in left]
        attempt += 1


def _backend_of(state: RunState, tmp: Path, interpreted: bool = False) -> Execution:
    ready = state.ready or {}
    import torch

    return Execution(
        state.backend, torch.cuda.is_available(), str(ready.get("device", "cpu"))[:200],
        _first_output(tmp / "worker-0.log"), stand_in=any(os.environ.get(v) for v in STAND_IN_LIBRARIES),
        compile_note=state.compile, interpreted=interpreted,
    )


def plan_line(mode: str, prep: PreparedFile, shapes: Sequence[Shape], *, rule: StopRule | None = None,
              force: bool = False) -> str:
    """What ``test``/``bench`` is about to run, said before it starts."""
    import torch

    what = (f"submitgen {mode}: {len(shapes)} shape(s) of {prep.problem.leaderboard}; first the compile pass "
            "(python submission.py), then one worker process imports the file and runs every shape")
    if mode == "bench":
        what += ", timed until eval.py's stop rule ends each shape" if rule is None or rule.fixed is None \
            else f", up to {rule.fixed} timed calls a shape (at most {rule.wall_s:g} s of timing each)"
    if torch.cuda.is_available():
        return what + f" on {torch.cuda.get_device_name(0)}"
    what += ("; no GPU here: a submitgen file runs its pure-torch fallback, which can take minutes a shape "
             "on a CPU")
    if mode == "bench":
        what += ", and is checked once but not timed" if not force else ", and is timed (--force)"
    return what


@dataclass(frozen=True)
class Assessment:
    """One shape's verdict as the worker's event gives it: the check's fields (None without a
    checked output), the error, the inputs found changed, the module a failed shape needed."""

    fields: dict[str, Any] | None
    error: str | None
    mutated: tuple[str, ...] = ()
    missing: str | None = None

    @classmethod
    def of(cls, ev: Mapping[str, Any]) -> Assessment:
        error = ev.get("error") if ev["event"] == "error" else None
        return cls(None if error is not None else ev.get("fields"), error, tuple(ev.get("mutated") or ()),
                   ev.get("missing") if error is not None else None)


def _run_shapes(prep: PreparedFile, kind: str, selected: Sequence[Shape], options: dict[str, Any],
                timeout_s: float, result: Callable[..., R], missing: Callable[[Shape], R],
                report: Callable[[tuple[R, ...], Execution], Any],
                progress: Callable[[R, int, int], None] | None,
                announce: Callable[[str], None] | None = None, interpreted: bool = False) -> Any:
    """Run ``kind`` on every selected shape in a fresh process: ``result(shape, assessment, ev)``
    makes each shape's result as it finishes (``missing(shape)`` one that never ran),
    ``report(results, backend)`` the report."""
    done: dict[int, R] = {}
    state = RunState()

    def on(pos: int, ev: dict[str, Any], show: bool = True) -> None:
        done[pos] = result(selected[pos], Assessment.of(ev), ev)
        if progress and show:
            progress(done[pos], len(done), len(selected))

    with private_dir("run") as folder, signals_end_the_run():
        tmp = Path(folder)
        _execute(prep, kind, selected, options, timeout_s, on, tmp, state, compile_first=not interpreted)
        if state.import_error is not None:
            for pos in range(len(selected)):
                if pos not in done:
                    on(pos, {"event": "error", "error": state.import_error,
                             "missing": state.import_missing}, show=False)
        results = tuple(done.get(pos) or missing(s) for pos, s in enumerate(selected))
        return report(results, _backend_of(state, tmp, interpreted))


def _prepare_interpret(root: str | Path, problem: str | None, shapes: str | None,
                       custom: Sequence[Mapping[str, Any] | str], seed: int | None
                       ) -> tuple[PreparedFile, list[Shape], str]:
    """``test --interpret ROOT``: the driver as the file to run, the shapes, what will run."""
    root = Path(root)
    if not root.is_dir():
        raise EvaluateError(f"--interpret {root}: not a folder (name a Triton kernel project: launch.py "
                            "and its kernels)")
    prob = interpret.project_problem(root, problem)

    if not load_project(root, arch=prob.arch).triton:  # the plan's checks and TRITON's, before any run
        raise EvaluateError(f"kernel project {root} has no TRITON kernels: --interpret runs Triton kernels "
                            "only")
    default = shapes is None and not custom
    if default:
        selected, what = interpret.default_shapes(prob, seed)
        what += ": "
    else:
        selected, what = select_shapes(prob, shapes or "test", custom=custom, seed=seed), ""
    own = prob.kernel_project is not None and Path(prob.kernel_project).resolve() == root.resolve()
    expected = interpret.EXPECTED.get(prob.leaderboard) if default and own else None
    labels = "; ".join(s.label for s in selected)
    line = (f"submitgen test --interpret: {len(selected)} shape(s) of {prob.leaderboard} ({what}{labels}); "
            f"one worker process runs {root}'s own plan and Triton kernels under Triton's interpreter on the "
            "CPU, every program instance in Python")
    line += (f": {expected} for this default project (2-core machine, 2026-12-02)" if expected else
             ": seconds to minutes a shape")
    prep = PreparedFile(str(root), interpret.driver_source(root.resolve(), prob.arch), prob)
    return prep, selected, line


def run_test(path: str | Path, *, problem: str | None = None, shapes: str | None = "test",
             custom: Sequence[Mapping[str, Any] | str] = (), seed: int | None = None,
             timeout_s: float | None = DEFAULT_TIMEOUT_S, lint: bool = True,
             progress: Callable[[ShapeResult, int, int], None] | None = None,
             announce: Callable[[str], None] | None = None, interpret: bool = False) -> TestReport:
    """Lint, then run ``custom_kernel`` on every selected shape in a fresh process.
    ``progress(result, finished, count)`` is called as each shape finishes, ``announce(line)`` with
    what will run before anything does. With ``interpret``, ``path`` is a Triton kernel project run
    under Triton's interpreter (:mod:`.interpret`; ``shapes`` None: its default shapes, and
    ``timeout_s`` None: ``interpret.TIMEOUT_S`` a shape)."""
    expected = None
    if interpret:
        timeout_s = check_timeout(TIMEOUT_S if timeout_s is None else timeout_s)
        prep, selected, line = _prepare_interpret(path, problem, shapes, custom, seed)
        line += f"; at most {timeout_s:g} s a shape (--timeout)"
    else:
        timeout_s = check_timeout(DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s)
        prep = prepare(path, problem, lint=lint)
        selected = select_shapes(prep.problem, shapes or "test", custom=custom, seed=seed)
        line = plan_line("test", prep, selected)
        import torch

        if not torch.cuda.is_available():
            expected = estimate_line(prep.problem, [s.spec_dict for s in selected])

    def result(shape: Shape, a: Assessment, ev: Mapping[str, Any]) -> ShapeResult:
        f = a.fields or {}
        return ShapeResult(
            shape=shape,
            passed=bool(f.get("passed")) and not a.mutated and a.error is None,
            figures=Figures.from_fields(f),
            message=str(f.get("message", "")),
            mutated=a.mutated,
            error=a.error,
            seconds=ev.get("seconds"),
            missing=a.missing,
            checked="max_abs_err" in f,
        )

    def report(results: tuple[ShapeResult, ...], backend: Execution) -> TestReport:
        return TestReport(str(path), prep.problem.leaderboard, backend, results,
                          prep.lint_warnings, prep.problem.eval_clones_inputs)

    if announce:
        announce(line)
        if expected:
            announce(expected)
    return _run_shapes(prep, "test", selected, {}, timeout_s, result,
                       lambda s: ShapeResult(s, False, error="not run"), report, progress, announce,
                       interpreted=interpret)


def _refuse_untimed_fallback(prep: PreparedFile) -> None:
    """EvaluateError, before anything runs, for a submitgen file on a machine without a GPU (and no
    stand-in library): it would run its pure-torch fallback, which bench does not time there."""
    if provenance.read(prep.text) is None or any(os.environ.get(v) for v in STAND_IN_LIBRARIES):
        return
    import torch

    if not torch.cuda.is_available():
        raise EvaluateError(
            f"bench {prep.path}: no GPU here, so this submitgen file would run its pure-torch fallback, "
            "which bench does not time on a CPU: nothing was run. Check it with `submitgen test "
            f"{prep.path}`, run bench where the leaderboard's GPU is, or pass --force to time the "
            "fallback on this CPU")


def run_bench(path: str | Path, *, problem: str | None = None, shapes: str = "benchmark",
              custom: Sequence[Mapping[str, Any] | str] = (), seed: int | None = None,
              iters: int | None = None, max_time_s: float = DEFAULT_MAX_TIME_S, mode: str = "benchmark",
              flush_mib: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, lint: bool = True,
              force: bool = False, progress: Callable[[BenchResult, int, int], None] | None = None,
              announce: Callable[[str], None] | None = None) -> BenchReport:
    """Lint, then time ``custom_kernel`` on every selected shape in a fresh process, as
    docs/evaluate.md says: eval.py's stop rule (``max_time_s`` its wall limit) or ``iters`` calls;
    ``flush_mib`` None: eval.py's flush, or on a GPU that cannot hold it the largest that fits
    (said through ``announce``); ``force`` times a pure-torch fallback on a CPU."""
    if mode not in BENCH_MODES:
        raise EvaluateError(f"bench --mode must be one of {', '.join(BENCH_MODES)}, got {mode!r}")
    if iters is not None and iters < 1:
        raise EvaluateError(f"--iters must be at least 1, got {iters}")
    fit = flush_mib is None
    flush_mib = DEFAULT_FLUSH_MIB if flush_mib is None else flush_mib
    if flush_mib < 0:
        raise EvaluateError(f"--flush-mib must be 0 or more, got {flush_mib}")
    if not math.isfinite(max_time_s) or max_time_s < 0:
        raise EvaluateError(f"--max-time must be a finite number of seconds, 0 or more, got {max_time_s}")
    timeout_s = check_timeout(timeout_s)
    prep = prepare(path, problem, lint=lint)
    selected = select_shapes(prep.problem, shapes, custom=custom, seed=seed)
    if not force:
        _refuse_untimed_fallback(prep)

    def result(shape: Shape, a: Assessment, ev: Mapping[str, Any]) -> BenchResult:
        message = str((a.fields or {}).get("message", ""))
        if a.mutated:
            message += "; " + "; ".join(f"input '{m}' was modified by custom_kernel" for m in a.mutated)
        skipped = ev.get("skipped") if a.error is None else None
        flush = Flush.from_event(ev) if a.error is None else None
        if announce and flush is not None and flush.memory_mib is not None and flush.mib not in told:
            told.add(flush.mib)
            announce(flush_line(flush_mib, flush))
        return BenchResult(shape=shape, timing=Timing.from_event(ev),
                           correct=bool(a.fields and a.fields["passed"]) and not a.mutated,
                           check_message=message, error=a.error, missing=a.missing,
                           skipped=skipped if isinstance(skipped, str) else None, flush=flush)

    told: set[int] = set()  # the shrunk flush sizes already said on stderr

    rule = rule_for(mode, iters, max_time_s)

    def report(results: tuple[BenchResult, ...], backend: Execution) -> BenchReport:
        return BenchReport(str(path), prep.problem.leaderboard, backend, results,
                           "device" if backend.gpu else "host", flush_mib, prep.lint_warnings,
                           mode=mode, stop=rule.describe())

    options = {"stop": rule.to_dict(), "warmup": warmup_rule(mode, max_time_s).to_dict(),
               "recheck": mode == "leaderboard",
               "flush_bytes": flush_mib * 1024 * 1024, "flush_fit": fit, "time_fallback": force}
    if announce:
        announce(plan_line("bench", prep, selected, rule=rule, force=force))
    return _run_shapes(prep, "bench", selected, options, timeout_s, result,
                       lambda s: BenchResult(s, error="not run"), report, progress, announce)
