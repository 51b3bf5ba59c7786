"""The process that imports a submission and runs it, as the leaderboard's ``eval.py`` worker does
(docs/evaluate.md). Started as ``python -m submitgen.evaluate.worker CONFIG`` in the run folder, it
runs the compile pass (first worker only), imports ``submission`` once, and runs every shape of
the config, making eval.py's checks in its own process (:mod:`.check`). It writes one JSON event
a line to the descriptor ``SUBMITGEN_RESULT_FD`` (stdout is the submission's): ``compiled``
(code, seconds), ``ready`` (gpu, device, backend), ``import-error`` (error, missing),
``shape-start``, ``output`` (test) or ``bench`` (the check's fields, the inputs the call changed,
bench's figures), ``error`` (error, missing: the module a ``ModuleNotFoundError`` names), ``done``.
If the result pipe breaks, it exits with ``PIPE_LOST_EXIT``. Private to submitgen.evaluate."""

from __future__ import annotations

import importlib
import json
import os
import runpy
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from submitgen.evaluate.check import judge, with_timed_calls
from submitgen.evaluate.stoprule import stats
from submitgen.evaluate.timing import FlushDoesNotFit, make_timer
from submitgen.problems.registry import load


def clone_data(data: Any) -> Any:
    """A deep copy of nested tuples/lists/dicts of tensors (tensors cloned, scalars shared)."""
    if isinstance(data, tuple):
        return tuple(clone_data(x) for x in data)
    if isinstance(data, list):
        return [clone_data(x) for x in data]
    if isinstance(data, dict):
        return {k: clone_data(v) for k, v in data.items()}
    if isinstance(data, torch.Tensor):
        return data.clone()
    return data


def make_mutation_check(problem: Any) -> tuple[Callable[[Any], list[Any]],
                                               Callable[[list[Any], Any], list[str]]]:
    """``snapshot(data)``: a copy of the problem's input tensors; ``changed(snapshot, data)``: the
    names of those whose dtype, shape or bytes differ now (the input-mutation check)."""
    leaves, name = problem.leaves, problem.input_name

    def flat(t: Any) -> Any:
        return t.detach().contiguous().reshape(-1).view(torch.uint8)

    def snapshot(data: Any) -> list[Any]:
        return [t.detach().clone() for t in leaves(data)]

    def changed(before: list[Any], data: Any) -> list[str]:
        return [name(i) for i, (b, t) in enumerate(zip(before, leaves(data)))
                if b.dtype != t.dtype or b.shape != t.shape or not torch.equal(flat(b), flat(t))]

    return snapshot, changed


_OURS = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the evaluate package, this worker included
_MAX_TRACEBACK_LINES = 40


def _user_frames(te: traceback.TracebackException) -> None:
    """Drop this worker's frames from ``te`` and the exceptions chained to it: what is left starts
    at the submission's own code."""
    seen: set[int] = set()
    todo = [te]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        frames = [f for f in t.stack if not f.filename.startswith(_OURS)]
        t.stack = traceback.StackSummary.from_list(frames)
        todo += [c for c in (t.__cause__, t.__context__) if c is not None]


def error_text(exc: BaseException) -> str:
    """The traceback of ``exc`` from the submission's frames on (at most the last 40 lines)."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    _user_frames(te)
    lines = "".join(te.format()).rstrip().splitlines()
    if len(lines) > _MAX_TRACEBACK_LINES:
        lines = ["...", *lines[-_MAX_TRACEBACK_LINES:]]
    return "\n".join(lines)


def missing_module(exc: BaseException) -> str | None:
    """The top-level module a ``ModuleNotFoundError`` in ``exc``'s chain names (``aiter``)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ModuleNotFoundError) and isinstance(e.name, str) and e.name:
            return e.name.split(".")[0]
        e = e.__cause__ or e.__context__
    return None


def _backend(module: Any) -> str | None:
    value = getattr(module, "SUBMITGEN_BACKEND", None)
    return value if isinstance(value, str) else None


PIPE_LOST_EXIT = 86
"""The worker's exit code when it can no longer write to the result pipe."""


def make_runner(problem: Any, cfg: dict[str, Any], gpu: bool, device: str,
                emit: Callable[[dict[str, Any]], None]) -> Callable[[int, dict, Any, str | None], None]:
    """``run(index, spec, kernel, backend)``: one shape of ``cfg["mode"]``, checked here as eval.py
    checks in its own process (:mod:`.check`), its events emitted."""
    snapshot, changed = make_mutation_check(problem)
    generate, clones = problem.generate_input, bool(problem.eval_clones_inputs)
    stand_in = any(os.environ.get(v) for v in cfg.get("stand_in_vars", ()))
    # torch's C function itself (a torch without CUDA has no such C function: torch.cuda's, as a
    # stand-in GPU there provides it)
    sync = (getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize) if gpu else (lambda: None)
    mode, recheck = cfg["mode"], bool(cfg.get("recheck"))
    time_fallback = bool(cfg.get("time_fallback"))
    warm = [gpu and bool(cfg.get("warmup"))]  # eval.py's warm-up run, before the first timed shape
    checking = [True]

    def judge_call(spec: dict, output: Any, data: Any, mutated: list[str]) -> dict[str, Any]:
        """The check of ``output``; the inputs regenerated for the reference where the call
        changed the ones it was given (eval.py's clone)."""
        ref_data = generate(dict(spec), device=device) if mutated else data
        return judge(problem, spec, output, ref_data, checking[0])

    def recheck_call(j: int, spec: dict, output: Any, data: Any, before: list[Any]) -> dict[str, Any]:
        mutated = changed(before, data)
        call: dict[str, Any] = {"mutated": mutated, "fields": None}
        if not failed_call:
            try:
                call["fields"] = judge_call(spec, output, data, mutated)
            except Exception as e:  # noqa: BLE001 - e.g. the reference ran out of memory: named
                call["error"] = f"{type(e).__name__}: {e}"
            if call.get("error") or not call["fields"]["passed"]:
                failed_call.append(j)
        return call

    failed_call: list[int] = []
    time_calls = make_timer(generate, gpu, device, cfg, recheck_call, snapshot) if mode == "bench" else None

    def failed(index: int, what: str, e: BaseException, **extra: Any) -> None:
        emit({"event": "error", "index": index, "error": f"{what}: {error_text(e)}",
              "missing": missing_module(e), **extra})

    def run(index: int, spec: dict, kernel: Any, backend: str | None) -> None:
        checking[0] = not (stand_in and backend == "dry-run")
        try:
            data = generate(spec, device=device)
            sync()
        except Exception as e:  # noqa: BLE001 - input generation itself failed
            failed(index, "evaluating the shape failed", e)
            return
        t0 = time.perf_counter()
        try:  # on a clone (or on the inputs themselves where the problem's evaluator does not clone)
            arg = clone_data(data) if clones else data
            before = [t.detach() for t in problem.leaves(data)] if clones else snapshot(data)
            output = kernel(arg)
            sync()
        except Exception as e:  # noqa: BLE001 - the submission's failure is the result
            failed(index, "custom_kernel raised", e, seconds=time.perf_counter() - t0)
            return
        seconds = time.perf_counter() - t0
        mutated = changed(before, arg)
        del before
        try:
            fields = judge_call(spec, output, data, mutated if not clones else [])
        except Exception as e:  # noqa: BLE001 - e.g. the reference ran out of memory: the shape fails, named
            emit({"event": "error", "index": index, "mutated": mutated, "missing": None,
                  "error": f"checking the output failed: {type(e).__name__}: {e}"})
            return
        del output, arg
        if mode == "test":
            emit({"event": "output", "index": index, "fields": fields, "seconds": seconds,
                  "mutated": mutated, "backend": backend})
            return
        if backend == "fallback" and not gpu and not time_fallback:
            emit({"event": "bench", "index": index, "fields": fields, "mutated": mutated,
                  "skipped": "fallback-on-cpu", "seconds": seconds, "backend": backend})
            return
        try:
            if warm[0]:
                warm[0] = False
                time_calls(kernel, data, spec, True)
            before = None if recheck else snapshot(data)  # leaderboard mode: each call's, in rechecks
            failed_call.clear()
            if not fields["passed"]:
                failed_call.append(-1)
            durations, calls, flushed = time_calls(kernel, data, spec)
            sync()
        except FlushDoesNotFit as e:
            emit({"event": "error", "index": index, "error": f"timing failed: {e}", "missing": None})
            return
        except Exception as e:  # noqa: BLE001
            failed(index, "custom_kernel raised while timing", e)
            return
        mutated += [m for m in (changed(before, data) if before is not None else []) if m not in mutated]
        error = None
        if recheck:
            fields, error = with_timed_calls(fields, mutated, spec, calls)
        if error is not None:
            emit({"event": "error", "index": index, "error": error, "mutated": mutated, "missing": None})
            return
        st = stats(durations)
        emit({"event": "bench", "index": index, "fields": fields, "mutated": mutated, "runs": st.runs,
              "mean_ns": st.mean, "std_ns": st.std, "best_ns": st.best, "worst_ns": st.worst,
              "skipped": None, "backend": backend, **(flushed or {})})

    return run


def emitter(fd: int) -> Callable[[dict[str, Any]], None]:
    """``emit(event)`` on the result pipe. A write that fails (the submission closed or replaced
    the descriptor) ends the process with PIPE_LOST_EXIT: nothing more can be reported."""
    file = os.fdopen(fd, "w", buffering=1, encoding="utf-8", closefd=False)

    def emit(obj: dict[str, Any]) -> None:
        try:
            file.write(json.dumps(obj) + "\n")
            file.flush()
        except (OSError, ValueError) as e:
            sys.stderr.write(f"submitgen worker: cannot write to the result pipe (descriptor {fd}): {e}\n")
            sys.stderr.flush()
            os._exit(PIPE_LOST_EXIT)

    return emit


def compile_pass(log: str, timeout_s: float) -> tuple[int | None, float]:
    """``python submission.py``, as kernelbot runs it before eval.py (it warms the ``load_inline``
    and Triton caches): a fork of this worker, which imported torch once for both, runs the file as
    ``__main__``, its output in ``log``. Its exit code (None: stopped after ``timeout_s``), seconds."""
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the compile pass
        code = 1
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.argv[:] = ["submission.py"]
            sys.path.insert(0, os.getcwd())
            runpy.run_path("submission.py", run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - printed as python prints it; the exit code is the result
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code & 0xFF)
    pidfd = os.pidfd_open(pid)
    done = select.select([pidfd], [], [], timeout_s)[0]
    os.close(pidfd)
    if not done:
        os.kill(pid, signal.SIGKILL)
    code: int | None = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return (code if done else None), time.monotonic() - started


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    emit = emitter(int(os.environ["SUBMITGEN_RESULT_FD"]))
    problem = load(cfg["problem_module"], cfg["problem"], cfg.get("problem_root"))
    if cfg.get("compile_log"):  # before anything here touches the GPU: the pass is a fork
        code, seconds = compile_pass(cfg["compile_log"], cfg["compile_timeout_s"])
        emit({"event": "compiled", "code": code, "seconds": seconds})
    gpu = bool(torch.cuda.is_available())
    device = "cuda" if gpu else "cpu"
    device_name = torch.cuda.get_device_name(0) if gpu else "cpu"
    run = make_runner(problem, cfg, gpu, device, emit)
    t0 = time.perf_counter()
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module("submission")
        kernel = module.custom_kernel
    except BaseException as e:  # noqa: BLE001 - SystemExit from a submission counts too
        emit({"event": "import-error", "error": f"importing the submission failed: {error_text(e)}",
              "missing": missing_module(e)})
        return 0
    emit({"event": "ready", "gpu": gpu, "device": device_name, "backend": _backend(module),
          "import_s": time.perf_counter() - t0})
    for item in cfg["shapes"]:
        emit({"event": "shape-start", "index": item["index"]})
        run(item["index"], item["spec"], kernel, _backend(module))
    emit({"event": "done", "backend": _backend(module)})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads the submission left running do not hold the process open
