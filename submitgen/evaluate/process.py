"""Running the worker process of ``submitgen test``/``bench`` (:mod:`.worker`): its events become
the shapes' results; a worker that dies or runs past the limit fails its shape and a new one
carries on (docs/evaluate.md). A line on the result pipe that is not an event fails the shape,
never ``test`` itself."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from submitgen.evaluate import cpulimit, group
from submitgen.evaluate.results import Shape

IMPORT_TIMEOUT_S = 300.0
"""Starting the worker and importing the submission may take at least this long, whatever
``timeout_s`` says (torch's own import is slow on a loaded machine)."""
_TAIL_LINES = 12
_POLL_S = 0.5
PIPE_LOST_EXIT = 86  # worker.PIPE_LOST_EXIT (that module imports torch; this one must not)

_EVENTS = frozenset({"compiled", "ready", "import-error", "shape-start", "output", "bench", "error", "done"})


class Malformed(Exception):
    """A line on the result pipe that is not an event of the protocol."""


@dataclass
class RunState:
    ready: dict[str, Any] | None = None
    backend: str | None = None
    import_error: str | None = None
    import_missing: str | None = None  # the module a failed import needed (ModuleNotFoundError)
    compile: str | None = None  # how the compile pass ended, as the report says it


@dataclass
class _Worker:
    group: group.Group
    events: queue.Queue
    log: Path
    shapes: Sequence[Shape]
    reported: set[int] = field(default_factory=set)
    current: int | None = None
    finished: bool = False

    @property
    def proc(self) -> subprocess.Popen:
        return self.group.proc


def package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def tail(log: Path, n: int = _TAIL_LINES) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def parse_event(line: str, count: int) -> dict[str, Any]:
    """One event; Malformed names what is wrong."""
    line = line.rstrip("\n")
    try:
        ev = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise Malformed(f"not JSON: {line[:120]!r}") from None
    if not isinstance(ev, dict) or ev.get("event") not in _EVENTS:
        raise Malformed(f"not an event: {line[:120]!r}")
    if "index" in ev or ev["event"] in ("shape-start", "output", "bench", "error"):
        index = ev.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise Malformed(f"{ev['event']!r} event with index {index!r} (this worker runs {count} shapes)")
    return ev


def _start(cfg: dict[str, Any], workdir: Path, attempt: int, shapes: Sequence[Shape]) -> _Worker:
    cfg_path = workdir / f"config-{attempt}.json"
    cfg = {
        **cfg,
        "stand_in_vars": STAND_IN_LIBRARIES,
        "compile_log": str(workdir / "compile.log") if cfg.get("compile") and attempt == 0 else None,
        "compile_timeout_s": COMPILE_TIMEOUT_S,
        "shapes": [{"index": i, "spec": s.spec_dict} for i, s in enumerate(shapes)],
    }
    cfg_path.write_text(json.dumps(cfg))
    log = workdir / f"worker-{attempt}.log"
    env = run_env(workdir)
    rfd, wfd = os.pipe()
    env["SUBMITGEN_RESULT_FD"] = str(wfd)
    try:
        with open(log, "wb") as logf:
            g = group.start([sys.executable, "-m", "submitgen.evaluate.worker", str(cfg_path)],
                            cwd=workdir / "run", env=env, stdout=logf, pass_fds=(wfd,))
    except BaseException:
        os.close(rfd)
        raise
    finally:
        os.close(wfd)
    events: queue.Queue = queue.Queue()

    def reader() -> None:
        with os.fdopen(rfd, encoding="utf-8", errors="replace") as f:
            for line in f:
                events.put(line)
        events.put(None)

    threading.Thread(target=reader, daemon=True).start()
    return _Worker(g, events, log, shapes)


def run_env(workdir: Path) -> dict[str, str]:
    """The worker's environment: submitgen importable, unbuffered output, a torch extensions cache
    of the run's own (docs/evaluate.md) and :data:`PASSIVE_THREADS`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TORCH_EXTENSIONS_DIR"] = str(workdir / "torch_extensions")
    env.setdefault(*PASSIVE_THREADS)
    return env


STAND_IN_LIBRARIES = ("SUBMITGEN_HIP_LIBRARY", "SUBMITGEN_CUDA_LIBRARY", "SUBMITGEN_HSA_LIBRARY")
"""Variables naming a stand-in GPU library: with one set, an emitted file makes a dry run."""

PASSIVE_THREADS = ("OMP_WAIT_POLICY", "PASSIVE")
"""OpenMP threads that sleep while they wait (docs/evaluate.md says why), unless the environment
says otherwise: for the worker, and for submitgen's own process before it imports torch."""


COMPILE_TIMEOUT_S = 120.0
"""kernelbot's ``Timeout.COMPILE`` for the compile pass (run by the worker: ``worker.compile_pass``)."""


def compile_note(code: int | None, seconds: float) -> str:
    """How ``python submission.py`` ended (``code`` None: it ran past the limit)."""
    head = "compile pass (python submission.py, as the leaderboard runs it first): "
    if code is None:
        return head + f"stopped after {COMPILE_TIMEOUT_S:g} s (ignored, as on the leaderboard)"
    if code == 0:
        return head + f"ok in {seconds:.1f} s"
    return head + f"exit code {code} in {seconds:.1f} s (ignored, as on the leaderboard)"


def _next_line(w: _Worker, budget: cpulimit.Budget) -> str | None | bool:
    """The next line; None at the end of the pipe or when the worker has exited; False when the
    budget ran out."""
    while True:
        if budget.over() is not None:
            return False
        try:
            return w.events.get(timeout=_POLL_S)
        except queue.Empty:
            if w.proc.poll() is not None:
                try:  # the worker is gone; a child of the submission may hold the pipe open
                    return w.events.get(timeout=_POLL_S)
                except queue.Empty:
                    return None


def _died(w: _Worker, state: RunState | None = None) -> str:
    code = w.proc.returncode
    if code == PIPE_LOST_EXIT:
        return ("the submission closed or replaced submitgen's result pipe, so its process could not "
                f"report: treated as the submission dying\n{tail(w.log)}").rstrip()
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return f"the worker process died ({how})\n{tail(w.log)}".rstrip()


Judge = Callable[[int, dict[str, Any]], None]
"""Called with (position in this worker's shapes, the result event)."""


def _fail_next(w: _Worker, state: RunState, message: str, on_result: Judge) -> None:
    """Charge ``message`` to the shape running, or to the next one (a worker that fails between
    shapes must not be restarted forever), or to the import."""
    target = w.current
    if target is None and state.ready is not None:
        target = next((i for i in range(len(w.shapes)) if i not in w.reported), None)
    if target is None:
        state.import_error = message
        return
    on_result(target, {"event": "error", "error": message})
    w.reported.add(target)
    w.current = None


def _handle(w: _Worker, state: RunState, ev: dict[str, Any], on_result: Judge) -> bool:
    """Apply one event; True when the worker is done with."""
    kind = ev["event"]
    if ev.get("backend") is not None:
        state.backend = ev["backend"]
    if kind == "compiled":
        state.compile = compile_note(ev["code"], ev["seconds"])
        return False
    if kind == "ready":
        state.ready = ev
        return False
    if kind == "import-error":
        out = tail(w.log)
        state.import_error = ev["error"] + (f"\noutput of the file:\n{out}" if out else "")
        state.import_missing = ev.get("missing")
        return True
    if kind == "done":
        w.finished = True
        return True
    index = ev["index"]
    if kind == "shape-start":
        w.current = index
        return False
    on_result(index, ev)
    w.reported.add(index)
    w.current = None
    return False


def _loop(w: _Worker, state: RunState, timeout_s: float, on_result: Judge) -> None:
    budget = cpulimit.Budget(w.proc.pid, max(timeout_s, IMPORT_TIMEOUT_S))
    while True:
        line = _next_line(w, budget)
        if line is False:
            what = (
                f"shape {w.shapes[w.current].label}" if w.current is not None else "importing the submission"
            )
            if w.current is None and state.ready is not None:
                what = "between shapes"
            why = f"{budget.reason} ({what}); --timeout SECONDS sets the limit"
            _fail_next(w, state, f"{why}\n{tail(w.log)}".rstrip(), on_result)
            return
        if line is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.proc.wait(timeout=5)
            return
        try:
            ev = parse_event(line, len(w.shapes))
            stop = _handle(w, state, ev, on_result)
        except Malformed as e:
            message = (f"the result pipe carried a malformed event ({e}): something in the "
                       f"submission's process wrote to it")
            _fail_next(w, state, f"{message}\n{tail(w.log)}".rstrip(), on_result)
            return
        if stop:
            return
        if ev["event"] == "compiled":
            budget = cpulimit.Budget(w.proc.pid, max(timeout_s, IMPORT_TIMEOUT_S))
        elif ev["event"] in ("ready", "shape-start"):
            budget = cpulimit.Budget(w.proc.pid, timeout_s)


def run_worker(cfg: dict[str, Any], shapes: Sequence[Shape], timeout_s: float, on_result: Judge,
               workdir: Path, attempt: int, state: RunState) -> list[int]:
    """Run one worker on ``shapes`` (the first, where ``cfg["compile"]``, runs the compile pass
    first); return the positions it left unrun because it died, timed out or broke the protocol
    (empty when it finished, or when the import failed)."""
    w = _start(cfg, workdir, attempt, shapes)
    try:
        _loop(w, state, timeout_s, on_result)
    finally:
        group.end(w.group)  # the worker and everything it started
    if w.current is not None:  # the process died inside a shape
        _fail_next(w, state, _died(w, state), on_result)
    if state.import_error is not None or w.finished:
        return []
    if state.ready is None:
        if w.proc.returncode == PIPE_LOST_EXIT:
            state.import_error = _died(w, state)
        else:
            state.import_error = (f"the worker process ended before importing the submission "
                                  f"(exit code {w.proc.returncode})\n{tail(w.log)}").rstrip()
        return []
    left = [i for i in range(len(shapes)) if i not in w.reported]
    if left and not w.reported:  # no progress: charge the next shape, or a new worker would loop
        _fail_next(w, state, _died(w, state), on_result)
        left = [i for i in range(len(shapes)) if i not in w.reported]
    return left
