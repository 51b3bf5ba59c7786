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
by eval.py's Cantor pairing), ``custom_kernel`` is called on a clone, its output is checked against
the local reference at the leaderboard's tolerance, and the clone is compared with the original
byte for byte: an input the kernel mutated is a failure (moe-mxfp4's evaluator passes inputs
uncloned, and the timed loop never clones).

``bench`` times ``custom_kernel`` per shape after one untimed, checked call. With a GPU
(``torch.cuda.is_available()``, CUDA or ROCm) it records device events around each call and zeroes
a flush buffer (``flush_mib``, default 512 MiB, larger than MI355X's 256 MB MALL) before each
iteration; the leaderboard's 62.5 GiB fill also hides host launch overhead, which a smaller flush
may not. Without a GPU it measures host wall time and says so: those figures are not comparable
with the leaderboard's."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import EvaluateError, LintFailed, ProblemError
from .lint import lint_text, read_header, read_submission, render_findings, resolve_leaderboard

DEFAULT_TIMEOUT_S = 900.0
IMPORT_TIMEOUT_S = 300.0
"""Starting the worker and importing the submission may take at least this long, whatever
``timeout_s`` says (torch's own import is slow on a loaded machine)."""
DEFAULT_ITERS = 20
DEFAULT_MAX_TIME_S = 10.0
DEFAULT_FLUSH_MIB = 512
_TAIL_LINES = 12


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Shape:
    """One selected shape: where it comes from and the spec that is run (seed already combined)."""

    kind: str  # "test", "benchmark" or "custom"
    index: int  # index in its list
    spec: tuple[tuple[str, Any], ...]
    label: str

    @property
    def spec_dict(self) -> dict[str, Any]:
        return dict(self.spec)


@dataclass(frozen=True)
class Backend:
    """What ran: the file's ``SUBMITGEN_BACKEND`` (None for hand-written files) and the device."""

    value: str | None
    gpu: bool
    device: str
    output: tuple[str, ...] = ()  # first lines the file printed (a fallback notice, say)

    def describe(self) -> str:
        where = f"on {self.device}" if self.gpu else "on this machine without a GPU (CPU only)"
        if self.value == "hip":
            text = f"backend: hip - ran the kernel {where}"
        elif self.value == "cuda":
            text = f"backend: cuda - ran the CUDA build of the kernel {where}"
        elif self.value == "fallback":
            text = f"backend: fallback - ran the torch fallback, not the kernel, {where}"
        elif self.value == "dry-run":
            text = ("backend: dry-run - kernels were 'launched' against the stand-in HIP library "
                    "(SUBMITGEN_HIP_LIBRARY): no kernel ran, outputs are not meaningful")
        elif self.value is None:
            if self.gpu:
                text = f"backend: the file's own code, {where}"
            else:
                text = (f"backend: the file's own code, {where}: it ran whatever path the file "
                        "takes without a GPU, not a GPU kernel")
        else:
            text = f"backend: {self.value!r} (as the file reports it), {where}"
        return text


@dataclass(frozen=True)
class ShapeResult:
    shape: Shape
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    rel_l2_err: float | None = None
    mismatches: int | None = None
    total: int | None = None
    mismatch_ratio: float | None = None
    message: str = ""
    mutated: tuple[str, ...] = ()
    error: str | None = None
    seconds: float | None = None

    def summary(self) -> str:
        """One line: verdict and figures, or why it failed."""
        verdict = "pass" if self.passed else "FAIL"
        if self.error:
            return f"{verdict}: {self.error.splitlines()[-1] if self.error else ''}"
        parts = [verdict]
        if self.max_abs_err is not None:
            parts.append(f"max abs err {self.max_abs_err:.4g}")
        if self.mismatches is not None and self.total is not None:
            parts.append(f"mismatches {self.mismatches:,}/{self.total:,} ({self.mismatch_ratio or 0:.3%})")
        if self.rel_l2_err is not None:
            parts.append(f"rel L2 err {self.rel_l2_err:.3g}")
        if self.mutated:
            parts.append(f"INPUTS MUTATED: {', '.join(self.mutated)}")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        return ", ".join(parts)


@dataclass(frozen=True)
class BenchResult:
    shape: Shape
    runs: int = 0
    mean_ns: float | None = None
    std_ns: float | None = None
    best_ns: float | None = None
    worst_ns: float | None = None
    correct: bool | None = None
    check_message: str = ""
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.correct)

    def summary(self) -> str:
        if self.error:
            return f"FAIL: {self.error.splitlines()[-1]}"
        text = (f"mean {format_ns(self.mean_ns)}, best {format_ns(self.best_ns)}, "
                f"worst {format_ns(self.worst_ns)} over {self.runs} runs")
        if not self.correct:
            text += f" - WRONG OUTPUT: {self.check_message}"
        return text


@dataclass(frozen=True)
class TestReport:
    path: str
    problem: str
    backend: Backend
    results: tuple[ShapeResult, ...]

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)


@dataclass(frozen=True)
class BenchReport:
    path: str
    problem: str
    backend: Backend
    results: tuple[BenchResult, ...]
    timing: str  # "device" or "host"
    flush_mib: int

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    def timing_note(self) -> str:
        if self.timing == "device":
            return (f"timing: device time (GPU events around each call, {self.flush_mib} MiB cache "
                    "flush before each iteration, like the leaderboard)")
        return ("timing: host-only wall clock (no GPU here): not comparable with the leaderboard's "
                "device times")


# ---------------------------------------------------------------------------------------------
# shapes


def combine_seed(shape_seed: int, seed: int) -> int:
    """eval.py's mixing of ``--seed`` (POPCORN_SEED) into a case's seed (a Cantor pairing)."""
    return shape_seed + (shape_seed + seed) * (shape_seed + seed + 1) // 2


_SEL_RE = re.compile(r"^(test|tests|benchmark|benchmarks|all)(?::([0-9,\- ]+))?$")


def _indices(text: str, n: int, what: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if hi else a
        except ValueError:
            raise EvaluateError(f"shape selection {text!r}: {part!r} is not an index or a range") from None
        for i in range(a, b + 1):
            if not 0 <= i < n:
                raise EvaluateError(f"shape selection: {what} index {i} is out of range (0..{n - 1})")
            out.append(i)
    return out


def parse_shape(text: str, keys: Sequence[str]) -> dict[str, Any]:
    """'m=8,n=256,k=512,seed=1' -> spec dict; every key of ``keys`` must be given (seed defaults to 1)."""
    spec: dict[str, Any] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or not name:
            raise EvaluateError(f"shape {text!r}: expected key=value pairs like "
                                f"{','.join(f'{k}=...' for k in keys)}")
        try:
            spec[name.strip()] = int(value)
        except ValueError:
            spec[name.strip()] = value.strip()
    if "seed" in keys and "seed" not in spec:
        spec["seed"] = 1
    if set(spec) != set(keys):
        raise EvaluateError(f"shape {text!r}: keys are {sorted(spec)}, this problem takes {list(keys)}")
    return {k: spec[k] for k in keys}


def select_shapes(problem: Any, which: str = "test", *, custom: Sequence[Mapping[str, Any] | str] = (),
                  seed: int | None = None) -> list[Shape]:
    """The shapes to run. ``which``: 'test', 'benchmark', 'all', or a subset such as 'test:0,2' or
    'benchmark:0-2' (indices into the problem's lists); ``custom`` specs (dicts, or strings like
    'm=8,n=256,k=512,seed=1') replace the selection when given. ``seed`` is mixed into each shape's seed as eval.py does with POPCORN_SEED."""
    picked: list[tuple[str, int, Mapping[str, Any]]] = []
    if custom:
        keys = tuple(getattr(problem, "spec_keys", None) or tuple(problem.tests[0]))
        picked = [("custom", i, parse_shape(s, keys) if isinstance(s, str) else s)
                  for i, s in enumerate(custom)]
    else:
        m = _SEL_RE.match(which.strip())
        if not m:
            raise EvaluateError(f"--shapes {which!r}: expected test, benchmark, all, or a subset like "
                                "'test:0,1' or 'benchmark:0-2'")
        kind, subset = m.group(1), m.group(2)
        lists = {"test": list(problem.tests), "benchmark": list(problem.benchmarks)}
        kinds = ["test", "benchmark"] if kind == "all" else ["test" if kind.startswith("test") else "benchmark"]
        if subset and kind == "all":
            raise EvaluateError("--shapes all takes no indices; use 'test:...' or 'benchmark:...'")
        for k in kinds:
            specs = lists[k]
            idx = _indices(subset, len(specs), k) if subset else range(len(specs))
            picked += [(k, i, specs[i]) for i in idx]
    shapes = []
    for kind, i, spec in picked:
        spec = dict(spec)
        if seed is not None and "seed" in spec:
            spec["seed"] = combine_seed(int(spec["seed"]), seed)
        shapes.append(Shape(kind, i, tuple(spec.items()), problem.shape_label(spec)))
    return shapes


# ---------------------------------------------------------------------------------------------
# preparing a run


@dataclass(frozen=True)
class Prepared:
    path: str
    text: str
    problem: Any  # submitgen.problems.Problem


def prepare(path: str | Path, problem: str | None = None, *, lint: bool = True) -> Prepared:
    """Read the file, resolve its problem (header or ``problem``), lint it (LintFailed on any
    finding) and load the local problem (EvaluateError when submitgen has none for it)."""
    text, size = read_submission(path)
    canon = resolve_leaderboard(problem) if problem is not None else None
    if lint:
        findings = lint_text(text, path=str(path), problem=canon, size_bytes=size)
        if findings:
            raise LintFailed(str(path), findings, render_findings(list(findings), str(path)))
    name = canon or read_header(text).leaderboard
    if name is None:
        raise EvaluateError(f"{path}: no '#!POPCORN leaderboard' line and no --problem: which problem?")
    resolve_leaderboard(name)  # unknown leaderboards are refused here when lint is off
    from .problems import get_problem

    try:
        prob = get_problem(name)
    except ProblemError as e:
        raise EvaluateError(f"leaderboard {name!r} has no local problem to test against ({e})") from None
    return Prepared(str(path), text, prob)


# ---------------------------------------------------------------------------------------------
# the worker process


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def _tail(log: Path, n: int = _TAIL_LINES) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def _first_output(log: Path, n: int = 3) -> tuple[str, ...]:
    try:
        lines = [ln.rstrip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ()
    seen: list[str] = []
    for ln in lines:
        if ln not in seen:
            seen.append(ln)
        if len(seen) == n:
            break
    return tuple(seen)


@dataclass
class _RunState:
    ready: dict[str, Any] | None = None
    backend: str | None = None
    import_error: str | None = None


def _run_worker(prep: Prepared, mode: str, shapes: Sequence[Shape], options: dict[str, Any],
                timeout_s: float, on_result: Callable[[int, dict[str, Any]], None],
                workdir: Path, attempt: int, state: _RunState) -> list[int]:
    """Run one worker process on ``shapes``; return the positions (in ``shapes``) it left unrun
    because it died or timed out (empty when it finished, or when the import failed)."""
    from .problems.registry import import_root

    cfg = {"mode": mode, "problem": prep.problem.leaderboard, "problem_module": prep.problem.module,
           "problem_root": import_root(prep.problem),
           "shapes": [{"index": i, "spec": s.spec_dict} for i, s in enumerate(shapes)], **options}
    cfg_path = workdir / f"config-{attempt}.json"
    cfg_path.write_text(json.dumps(cfg))
    log = workdir / f"worker-{attempt}.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    rfd, wfd = os.pipe()
    env["SUBMITGEN_RESULT_FD"] = str(wfd)
    try:
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                [sys.executable, "-m", "submitgen.evaluate_worker", str(cfg_path)],
                cwd=workdir / "run", env=env, stdin=subprocess.DEVNULL, stdout=logf,
                stderr=subprocess.STDOUT, pass_fds=(wfd,))
    finally:
        os.close(wfd)
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def reader() -> None:
        with os.fdopen(rfd, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    events.put(json.loads(line))
                except json.JSONDecodeError:
                    continue
        events.put(None)

    threading.Thread(target=reader, daemon=True).start()
    reported: set[int] = set()
    current: int | None = None
    deadline = time.monotonic() + max(timeout_s, IMPORT_TIMEOUT_S)
    finished = False
    try:
        while True:
            try:
                ev = events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                proc.kill()
                what = f"shape {shapes[current].label}" if current is not None else "importing the submission"
                limit = timeout_s if state.ready is not None else max(timeout_s, IMPORT_TIMEOUT_S)
                err = f"timed out after {limit:g} s ({what})\n{_tail(log)}".rstrip()
                if current is None:
                    state.import_error = err
                else:
                    on_result(current, {"passed": False, "error": err})
                    reported.add(current)
                    current = None
                break
            if ev is None:
                break
            kind = ev.get("event")
            if kind == "ready":
                state.ready = ev
                state.backend = ev.get("backend")
                deadline = time.monotonic() + timeout_s
            elif kind == "import-error":
                state.import_error = ev["error"]
                out = _tail(log)
                if out:
                    state.import_error += f"\noutput of the file:\n{out}"
            elif kind == "shape-start":
                current = int(ev["index"])
                deadline = time.monotonic() + timeout_s
            elif kind == "result":
                if ev.get("backend") is not None:
                    state.backend = ev["backend"]
                on_result(int(ev["index"]), ev)
                reported.add(int(ev["index"]))
                current = None
            elif kind == "done":
                if ev.get("backend") is not None:
                    state.backend = ev["backend"]
                finished = True
    finally:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if current is not None:  # the process died inside a shape
        code = proc.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        on_result(current, {"passed": False,
                            "error": f"the worker process died ({how})\n{_tail(log)}".rstrip()})
        reported.add(current)
    if state.import_error is not None or finished:
        return []
    if state.ready is None:
        state.import_error = (f"the worker process ended before importing the submission "
                              f"(exit code {proc.returncode})\n{_tail(log)}").rstrip()
        return []
    return [i for i in range(len(shapes)) if i not in reported]


def _execute(prep: Prepared, mode: str, shapes: Sequence[Shape], options: dict[str, Any],
             timeout_s: float, on_result: Callable[[int, dict[str, Any]], None]) -> tuple[_RunState, Path]:
    """Run all ``shapes``, starting a new worker after one dies, until every shape has a result."""
    state = _RunState()
    # the pid in the name lets files.clean_stale remove it after a kill -9
    tmp = Path(tempfile.mkdtemp(prefix=f"submitgen-{os.getpid()}-run-"))
    run = tmp / "run"
    run.mkdir()
    (run / "submission.py").write_bytes(Path(prep.path).read_bytes())
    (run / "task.py").write_text(prep.problem.task_source)
    todo = list(range(len(shapes)))
    attempt = 0
    while todo:
        mapping = dict(enumerate(todo))

        def mapped(pos: int, ev: dict[str, Any], mapping: dict[int, int] = mapping) -> None:
            on_result(mapping[pos], ev)

        left = _run_worker(prep, mode, [shapes[i] for i in todo], options, timeout_s, mapped, tmp,
                           attempt, state)
        if state.import_error is not None:
            break
        todo = [mapping[i] for i in left]
        attempt += 1
    return state, tmp


def _backend_of(state: _RunState, tmp: Path) -> Backend:
    ready = state.ready or {}
    import torch

    gpu = bool(ready.get("gpu", torch.cuda.is_available()))
    device = str(ready.get("device", "cpu"))
    return Backend(state.backend, gpu, device, _first_output(tmp / "worker-0.log"))


def _cleanup(tmp: Path) -> None:
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def _f(ev: Mapping[str, Any], key: str) -> Any:
    return ev.get(key)


def run_test(path: str | Path, *, problem: str | None = None, shapes: str = "test",
             custom: Sequence[Mapping[str, Any] | str] = (), seed: int | None = None,
             timeout_s: float = DEFAULT_TIMEOUT_S, lint: bool = True,
             progress: Callable[[ShapeResult, int, int], None] | None = None) -> TestReport:
    """Lint, then run ``custom_kernel`` on every selected shape in a fresh process and check it.
    ``progress(result, finished, count)`` is called as each shape finishes."""
    prep = prepare(path, problem, lint=lint)
    selected = select_shapes(prep.problem, shapes, custom=custom, seed=seed)
    done: dict[int, ShapeResult] = {}

    def to_result(pos: int, ev: dict[str, Any]) -> ShapeResult:
        return ShapeResult(
            shape=selected[pos], passed=bool(ev.get("passed")) and not ev.get("error"),
            max_abs_err=_f(ev, "max_abs_err"), max_rel_err=_f(ev, "max_rel_err"),
            rel_l2_err=_f(ev, "rel_l2_err"), mismatches=_f(ev, "mismatches"), total=_f(ev, "total"),
            mismatch_ratio=_f(ev, "mismatch_ratio"), message=str(ev.get("message", "")),
            mutated=tuple(ev.get("mutated", ())), error=ev.get("error"), seconds=_f(ev, "seconds"))

    def on(pos: int, ev: dict[str, Any]) -> None:
        done[pos] = to_result(pos, ev)
        if progress:
            progress(done[pos], len(done), len(selected))

    state, tmp = _execute(prep, "test", selected, {}, timeout_s, on)
    try:
        if state.import_error is not None:
            for pos in range(len(selected)):
                if pos not in done:
                    on(pos, {"passed": False, "error": state.import_error})
        results = tuple(done.get(pos) or ShapeResult(s, False, error="not run") for pos, s in enumerate(selected))
        return TestReport(str(path), prep.problem.leaderboard, _backend_of(state, tmp), results)
    finally:
        _cleanup(tmp)


def run_bench(path: str | Path, *, problem: str | None = None, shapes: str = "benchmark",
              custom: Sequence[Mapping[str, Any] | str] = (), seed: int | None = None,
              iters: int = DEFAULT_ITERS, max_time_s: float = DEFAULT_MAX_TIME_S,
              flush_mib: int = DEFAULT_FLUSH_MIB, timeout_s: float = DEFAULT_TIMEOUT_S,
              lint: bool = True, progress: Callable[[BenchResult, int, int], None] | None = None) -> BenchReport:
    """Lint, then time ``custom_kernel`` on every selected shape in a fresh process: up to
    ``iters`` timed calls per shape, fewer once ``max_time_s`` of timing has passed."""
    if iters < 1:
        raise EvaluateError(f"--iters must be at least 1, got {iters}")
    if flush_mib < 0:
        raise EvaluateError(f"--flush-mib must be 0 or more, got {flush_mib}")
    prep = prepare(path, problem, lint=lint)
    selected = select_shapes(prep.problem, shapes, custom=custom, seed=seed)
    done: dict[int, BenchResult] = {}

    def on(pos: int, ev: dict[str, Any]) -> None:
        done[pos] = BenchResult(
            shape=selected[pos], runs=int(ev.get("runs", 0)), mean_ns=_f(ev, "mean_ns"),
            std_ns=_f(ev, "std_ns"), best_ns=_f(ev, "best_ns"), worst_ns=_f(ev, "worst_ns"),
            correct=_f(ev, "correct"), check_message=str(ev.get("check_message", "")),
            error=ev.get("error"))
        if progress:
            progress(done[pos], len(done), len(selected))

    options = {"iters": iters, "max_time_s": max_time_s, "flush_bytes": flush_mib * 1024 * 1024}
    state, tmp = _execute(prep, "bench", selected, options, timeout_s, on)
    try:
        if state.import_error is not None:
            for pos in range(len(selected)):
                if pos not in done:
                    on(pos, {"error": state.import_error})
        results = tuple(done.get(pos) or BenchResult(s, error="not run") for pos, s in enumerate(selected))
        backend = _backend_of(state, tmp)
        return BenchReport(str(path), prep.problem.leaderboard, backend, results,
                           "device" if backend.gpu else "host", flush_mib)
    finally:
        _cleanup(tmp)


# ---------------------------------------------------------------------------------------------
# formatting


def format_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


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
        ratio = "-" if r.mismatch_ratio is None else f"{r.mismatch_ratio:.3%}"
        mism = "-" if r.mismatches is None else f"{r.mismatches:,}/{r.total:,}"
        verdict = "pass" if r.passed else ("ERROR" if r.error else "FAIL")
        if r.mutated:
            verdict = "MUTATED"
        rows.append([r.shape.label, verdict, _num(r.max_abs_err), _num(r.max_rel_err), mism, ratio,
                     "-" if r.seconds is None else f"{r.seconds:.2f}s"])
    lines = [f"{report.problem}: {report.path}", report.backend.describe()]
    lines += [f"  the file printed: {ln}" for ln in report.backend.output]
    lines += _table(["shape", "result", "max abs err", "max rel err", "mismatches", "ratio", "time"], rows)
    for r in report.results:
        if r.passed:
            continue
        if r.error:
            lines.append(f"{r.shape.label}: {r.error}")
        elif r.mutated:
            lines.append(f"{r.shape.label}: custom_kernel changed its inputs ({', '.join(r.mutated)}); "
                         "the leaderboard does not always clone them: write to a fresh output instead")
        else:
            lines.append(f"{r.shape.label}: {r.message}")
    failed = sum(not r.passed for r in report.results)
    n = len(report.results)
    lines.append(f"all {n} shapes passed" if failed == 0 else f"FAILED: {failed} of {n} shapes failed")
    return lines


def format_bench_report(report: BenchReport) -> list[str]:
    rows = []
    for r in report.results:
        status = "error" if r.error else ("ok" if r.correct else "WRONG")
        rows.append([r.shape.label, str(r.runs), format_ns(r.mean_ns), format_ns(r.best_ns),
                     format_ns(r.worst_ns), format_ns(r.std_ns), status])
    lines = [f"{report.problem}: {report.path}", report.backend.describe()]
    lines += [f"  the file printed: {ln}" for ln in report.backend.output]
    lines.append(report.timing_note())
    lines += _table(["shape", "runs", "mean", "best", "worst", "std", "output"], rows)
    for r in report.results:
        if r.error:
            lines.append(f"{r.shape.label}: {r.error}")
        elif not r.correct:
            lines.append(f"{r.shape.label}: wrong output: {r.check_message}")
    means = [r.mean_ns for r in report.results if r.mean_ns]
    if means and len(means) == len(report.results):
        import math

        geo = math.exp(sum(math.log(m) for m in means) / len(means))
        lines.append(f"geometric mean of the means: {format_ns(geo)} ({report.timing} time)")
    return lines
