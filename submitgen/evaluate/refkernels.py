"""``submitgen test|bench FILE --reference-kernels DIR``: the leaderboard's own harness, run here:
DIR's files laid out with the submission, the problem's modules imported first in a process of
their own (the reference cannot run here: exit :data:`REFERENCE_UNAVAILABLE_EXIT`), then
``python <config.main> <mode> <cases>`` with ``POPCORN_FD`` as kernelbot starts it, its lines read
back by :mod:`.popcorn` (docs/reference-kernels.md). Nothing of the built-in harness takes part."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import EvaluateError, LintFailed
from submitgen.evaluate import check_timeout, group
from submitgen.evaluate.group import signals_end_the_run
from submitgen.evaluate.popcorn import PopcornResult, key_of, read_result
from submitgen.lint import lint_report, read_header, read_submission, render_findings, resolve_problem
from submitgen.problems.folder import round_entry
from submitgen.problems.reftask import MODES, RefTask, cases_text, read_bytes, read_task

REFERENCE_UNAVAILABLE_EXIT = 3
"""Exit code of ``test``/``bench --reference-kernels`` when the problem's reference cannot run on
this machine (its modules fail to import); 1 is a failed or unfinished run, 0 eval.py's pass."""
PREFLIGHT_MIN_S = 60.0
"""The import check of the problem's modules gets at least this long, whatever --timeout says."""
_TAIL_LINES = 12
MAX_PIPE_BYTES = 16 << 20


@dataclass(frozen=True)
class RefReport:
    path: str
    problem: str  # the file's leaderboard (header), else the folder's name
    folder: str
    mode: str
    cases: tuple[str, ...]  # the lines of the cases file
    result: PopcornResult | None  # None when eval.py never ran
    returncode: int | None
    unavailable: str | None = None  # why the reference cannot run here
    timed_out: float | None = None  # the limit eval.py ran past
    output_tail: str = ""  # the last lines eval.py (and the submission) printed
    lint_warnings: tuple[str, ...] = ()
    ranking_by: str = "last"

    @property
    def passed(self) -> bool:
        return (self.unavailable is None and self.timed_out is None and self.result is not None
                and self.result.check == "pass" and self.returncode in (0, 112))

    @property
    def exit_code(self) -> int:
        if self.passed:
            return 0
        return REFERENCE_UNAVAILABLE_EXIT if self.unavailable is not None else 1


def _tail(text: str, n: int = _TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def read_and_lint(
    path: str, problem: str | None, lint: bool
) -> tuple[str, str | None, tuple[str, ...]]:
    """(text, the header's leaderboard, lint warnings); LintFailed on a failed rule."""
    text, size = read_submission(path)
    canon, baseline, gpus = resolve_problem(problem) if problem is not None else (None, None, ())
    warnings: tuple[str, ...] = ()
    if lint:
        report = lint_report(text, problem=canon, size_bytes=size, baseline=baseline, gpus=gpus)
        if report.errors:
            raise LintFailed(str(path), report.errors, render_findings(report.errors, str(path)))
        warnings = tuple(render_findings(report.warnings, str(path)))
    return text, canon or read_header(text).leaderboard, warnings


def lay_out(task: RefTask, text: str, run: Path) -> None:
    """Write the run folder: every file task.yml lists, the submission as ``text``."""
    for f in task.files:
        dest = run / f.name
        data = text.encode("utf-8", "surrogateescape") if f.source is None else \
            read_bytes(f.source, f"{task.folder / 'task.yml'}: the file")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        except OSError as e:
            raise EvaluateError(f"{task.folder / 'task.yml'}: the file {f.name!r} cannot be written in the "
                                f"run folder: {e.strerror or e}") from None


def _env(fd: int | None = None, seed: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("POPCORN_SEED", None)
    env.pop("POPCORN_FD", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if fd is not None:
        env["POPCORN_FD"] = str(fd)
    if seed is not None:
        env["POPCORN_SEED"] = str(seed)
    return env


_PREFLIGHT = """\
import importlib, json, os, sys, traceback
here = os.getcwd() + os.sep
case = json.loads(sys.argv[2])
for name in sys.argv[3:]:
    try:
        module = importlib.import_module(name)
        if name == "reference" and case is not None and hasattr(module, "generate_input"):
            module.generate_input(**case)
    except BaseException as e:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(here)]
        at = frames[-1] if frames else None
        with open(sys.argv[1], "w") as out:
            json.dump({"module": name, "error": f"{type(e).__name__}: {e}", "call": name in sys.modules,
                       "file": at.filename[len(here):] if at else None, "line": at.lineno if at else None,
                       "source": (at.line or "") if at else ""}, out)
        sys.exit(1)
"""
_NEEDS_GPU = re.compile(r"cuda|hip|rocm|nvidia|gpu", re.IGNORECASE)
"""Words of an error that says generate_input wanted a GPU runtime this machine lacks."""


def preflight(task: RefTask, run: Path, timeout_s: float) -> str | None:
    """None when the problem's modules import in a fresh process and reference.py's generate_input
    runs on the first test; else why not (the error, then where in the problem's files it was
    raised): a generate_input that needs a GPU this machine lacks says so."""
    import json

    modules = task.modules()
    if not modules:
        return None
    report = run.parent / "preflight.json"
    case = json.dumps(dict(task.tests[0]) if task.tests else None)
    with open(run.parent / "preflight.log", "w+b") as log:
        g = group.start([sys.executable, "-c", _PREFLIGHT, str(report), case, *modules], cwd=run, env=_env(),
                        stdout=log)
        proc = g.proc
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"importing the problem's modules ({', '.join(modules)}) took more than {timeout_s:g} s"
        finally:
            group.end(g)
        log.seek(0)
        out = log.read(1 << 20).decode(errors="replace")
    if proc.returncode == 0:
        return None
    try:
        info = json.loads(report.read_text())
    except (OSError, ValueError):
        return (f"importing the problem's modules ({', '.join(modules)}) ended with exit code "
                f"{proc.returncode}\n{_tail(out)}").rstrip()
    if info.get("call"):
        gpu = _NEEDS_GPU.search(info["error"]) is not None
        text = (f"{info['module']}.py's generate_input " + ("needs a CUDA/ROCm GPU" if gpu else "failed")
                + f" ({info['error'].split('. ')[0]})")
    else:
        text = f"importing {info['module']}.py failed: {info['error']}"
    if info.get("file"):
        text += f"\nat {info['file']} line {info['line']}: {str(info.get('source', '')).strip()}"
    return text


def _run_eval(task: RefTask, run: Path, cases: Path, mode: str, seed: int | None, timeout_s: float,
              on_line: Callable[[str, str], None]) -> tuple[str, int | None, bool, str]:
    """(what eval.py wrote to POPCORN_FD, its exit code, whether it ran past ``timeout_s``, the
    tail of its stdout and stderr)."""
    rfd, wfd = os.pipe()
    chunks: list[bytes] = []

    def reader() -> None:
        size = 0
        pending = b""
        with os.fdopen(rfd, "rb") as f:
            while True:
                data = f.read1(65536)
                if not data:
                    break
                if size < MAX_PIPE_BYTES:
                    chunks.append(data)
                size += len(data)
                pending += data
                *lines, pending = pending.split(b"\n")
                pending = pending[-65536:]
                for raw in lines:
                    kv = key_of(raw.decode(errors="replace"))
                    if kv is not None:
                        on_line(*kv)

    log_path = run.parent / "eval.log"
    try:
        with open(log_path, "w+b") as log:
            g = group.start([sys.executable, task.main, mode, str(cases)], cwd=run, env=_env(wfd, seed),
                            stdout=log, pass_fds=(wfd,))
    finally:
        os.close(wfd)
    proc = g.proc
    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        group.end(g)
    thread.join(timeout=30)
    with open(log_path, "rb") as log:
        log.seek(max(0, os.fstat(log.fileno()).st_size - 64 * 1024))
        tail = _tail(log.read().decode(errors="replace"))
    return b"".join(chunks).decode(errors="replace"), proc.returncode, timed_out, tail


def label(spec: str) -> str:
    """A case's line as a shape label: 'm: 8; n: 2112; seed: 124' -> 'm=8 n=2112 seed=124'."""
    out = []
    for part in spec.split(";"):
        k, sep, v = part.partition(":")
        out.append(f"{k.strip()}={v.strip()}" if sep else part.strip())
    return " ".join(out)


def _same_leaderboard(path: str | Path, leaderboard: str | None, folder: Path) -> None:
    """EvaluateError when the round file names ``folder`` for another leaderboard than the file's."""
    board, _ = round_entry(folder)
    if leaderboard is not None and board is not None and board != leaderboard:
        raise EvaluateError(f"{path} is for {leaderboard} (its #!POPCORN leaderboard line, or --problem), "
                            f"but the round file names {folder} as {board}'s folder: pass {leaderboard}'s "
                            "folder")


def run_reference(path: str | Path, folder: str | Path, *, mode: str, problem: str | None = None,
                  seed: int | None = None, timeout_s: float | None = None, lint: bool = True,
                  progress: Callable[[str], None] | None = None) -> RefReport:
    """Lint FILE, lay out DIR's files with it, and run DIR's eval.py in ``mode`` on the mode's
    cases. ``timeout_s`` limits the eval.py run (default: task.yml's timeout of the mode).
    ``progress(line)`` is called as each case finishes."""
    if mode not in MODES:
        raise EvaluateError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    given = check_timeout(timeout_s) if timeout_s is not None else None
    text, leaderboard, warnings = read_and_lint(str(path), problem, lint)
    _same_leaderboard(path, leaderboard, Path(folder))
    task = read_task(folder)
    cases = task.cases(mode)
    if not cases:
        listed = "tests" if mode == "test" else "benchmarks"
        raise EvaluateError(f"{Path(folder) / 'task.yml'}: lists no {listed}, which mode {mode} runs")
    limit = given if given is not None else float(task.timeout(mode))
    lines = tuple(cases_text(cases).splitlines())
    name = leaderboard or Path(folder).resolve().name
    report = dict(path=str(path), problem=name, folder=str(folder), mode=mode, cases=lines,
                  lint_warnings=warnings, ranking_by=task.ranking_by)
    kind = "test" if mode == "test" else "benchmark"
    with signals_end_the_run():  # SIGTERM/SIGHUP end eval.py's group too, by the finally blocks
        tmp = Path(tempfile.mkdtemp(prefix=f"submitgen-{os.getpid()}-ref-"))
        try:
            run = tmp / "run"
            run.mkdir()
            lay_out(task, text, run)
            cases_file = tmp / "cases.txt"
            cases_file.write_text("\n".join(lines) + "\n")
            why = preflight(task, run, max(limit, PREFLIGHT_MIN_S))
            if why is not None:
                return RefReport(**report, result=None, returncode=None, unavailable=why)
            started = time.monotonic()
            done: set[int] = set()

            def on_line(key: str, value: str) -> None:
                parts = key.split(".")
                if progress is None or len(parts) != 3 or parts[0] != kind:
                    return
                i = int(parts[1])
                if i in done or parts[2] not in ("status", "worst"):
                    return
                done.add(i)
                name = label(lines[i]) if i < len(lines) else f"case {i}"
                what = "FAIL" if value == "fail" else ("pass" if parts[2] == "status" else "timed")
                progress(f"[{len(done)}/{len(lines)}] {name}: {what} ({time.monotonic() - started:.0f} s)")

            out, code, timed_out, tail = _run_eval(task, run, cases_file, mode, seed, limit, on_line)
            return RefReport(**report, result=read_result(out, kind), returncode=code,
                             timed_out=limit if timed_out else None, output_tail=tail)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
