"""The process that imports a submission and runs it, as the leaderboard's ``eval.py`` worker does.

Started by :mod:`submitgen.evaluate` as ``python -m submitgen.evaluate.worker CONFIG`` with its
working directory set to the run folder (``submission.py``, ``task.py``, ``reference.py``,
``utils.py``). It imports ``submission`` once, then runs every shape of the config, writing one
JSON object per line to the file descriptor named by ``SUBMITGEN_RESULT_FD`` (never to stdout,
which belongs to the submission):

- ``{"event": "compiled", "code": int|null, "seconds": float}`` (the compile pass, first worker only)
- ``{"event": "ready", "gpu": bool, "device": str, "backend": str|null, "import_s": float}``
- ``{"event": "import-error", "error": str, "missing": str|null}``
- ``{"event": "shape-start", "index": i}``
- ``{"event": "output", "index": i, "output": {"dtype": str, "shape": [int]} | {"type": str},
  "seconds": float, "mutated": [str], "backend": str|null}`` (test; the inputs the call changed)
- ``{"event": "bench", "index": i, "output": ..., "mutated": ..., "runs": int, "mean_ns": float,
  ..., "timed_mutated": [str]|null, "skipped": str|null, "rechecks": [{"output": ...,
  "mutated": [str]}]|null}`` (rechecks: in leaderboard mode, each timed call's output, written to
  ``out-<i>-r<j>.bin``, and the inputs that call changed)
- ``{"event": "error", "index": i, "error": str, "missing": str|null}``
- ``{"event": "done", "backend": str|null}``

The worker checks what eval.py checks in its own process: whether the call changed its inputs
(a snapshot before the call, compared after it: :func:`make_mutation_check`). It writes the raw
bytes of each output tensor to ``<outputs>/out-<i>.bin``; the parent regenerates the inputs,
computes the reference and applies the check. The file under test is trusted not to forge these
reports (docs/evaluate.md, "Threat model"). ``missing`` names the top-level module of a
``ModuleNotFoundError`` (``aiter``). If the submission closes or breaks the result pipe, the
worker exits with ``PIPE_LOST_EXIT``.

The worker dies with ``submitgen test``: it asks the kernel for SIGKILL when its parent exits
(``PR_SET_PDEATHSIG``), first thing, and the parent's watchdog kills its whole process group
(:mod:`submitgen.evaluate.process`).

Not part of the public API; its protocol is private to submitgen.evaluate."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when the process that started it exits (Linux ``prctl``), and exit now
    if that already happened (the parent's pid is in ``SUBMITGEN_PARENT_PID``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's watchdog still ends the group
        pass
    parent = os.environ.get("SUBMITGEN_PARENT_PID", "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(PARENT_GONE_EXIT)


PARENT_GONE_EXIT = 87
"""The worker's exit code when ``submitgen test`` was gone before it started."""

if __name__ == "__main__":
    die_with_parent()

import importlib  # noqa: E402 - after die_with_parent: torch's import takes seconds
import json  # noqa: E402
import runpy  # noqa: E402
import select  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

from submitgen.evaluate.stoprule import stats  # noqa: E402
from submitgen.evaluate.timing import FlushDoesNotFit, make_timer  # noqa: E402
from submitgen.problems.registry import load  # noqa: E402


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
    names of those whose dtype, shape or bytes differ now (the input-mutation check, made in this
    process as eval.py makes its checks; torch's methods bound now)."""
    base = torch._C.TensorBase
    detach, clone_, contiguous, reshape, view, equal = (
        base.detach, base.clone, base.contiguous, base.reshape, base.view, torch.equal)
    uint8, leaves, name = torch.uint8, problem.leaves, problem.input_name

    def flat(t: Any) -> Any:
        return view(reshape(contiguous(detach(t)), (-1,)), uint8)

    def snapshot(data: Any) -> list[Any]:
        return [clone_(detach(t)) for t in leaves(data)]

    def changed(before: list[Any], data: Any) -> list[str]:
        return [name(i) for i, (b, t) in enumerate(zip(before, leaves(data)))
                if b.dtype != t.dtype or b.shape != t.shape or not equal(flat(b), flat(t))]

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


def make_output_writer() -> Callable[[Any, str], dict[str, Any]]:
    """``write(output, path)``: the raw bytes of a tensor to ``path`` (written beside it and renamed
    over it), and what was written (or what came back instead of a tensor); torch's methods bound
    now."""
    base = torch._C.TensorBase
    tensor_type = torch.Tensor
    detach, contiguous, cpu, reshape, view, to_numpy = (
        base.detach, base.contiguous, base.cpu, base.reshape, base.view, base.numpy)
    get_dtype, get_shape = (base.__dict__[k].__get__ for k in ("dtype", "shape"))
    uint8 = torch.uint8
    isinstance_, open_, str_, list_, type_, replace_ = isinstance, open, str, list, type, os.replace

    def write(output: Any, path: str) -> dict[str, Any]:
        if not isinstance_(output, tensor_type):
            return {"type": type_(output).__name__}
        flat = view(reshape(cpu(contiguous(detach(output))), (-1,)), uint8)
        # whole or not at all: a file the parent reads is never one being rewritten (a submission
        # that writes the same path and forges the event must not make the parent read a truncated
        # file, which would hide the forgery behind a read-back error)
        with open_(path + ".part", "wb") as f:
            f.write(memoryview(to_numpy(flat)))
        replace_(path + ".part", path)
        return {"dtype": str_(get_dtype(output)).removeprefix("torch."), "shape": list_(get_shape(output))}

    return write


def make_runner(problem: Any, cfg: dict[str, Any], gpu: bool, device: str,
                emit: Callable[[dict[str, Any]], None]) -> Callable[[int, dict, Any, str | None], None]:
    """``run(index, spec, kernel, backend)``: one shape of ``cfg["mode"]``, its events emitted. Every
    function it calls is bound here, before the submission is imported."""
    snapshot, changed = make_mutation_check(problem)
    write_output = make_output_writer()
    ack_fd = int(os.environ.get("SUBMITGEN_ACK_FD", "-1"))
    read_, exit_ = os.read, os._exit

    def wait_ack() -> None:
        """Wait, the inputs freed, until the parent has judged the output (it regenerates the
        inputs: the two processes never hold a shape's inputs at once)."""
        if ack_fd >= 0:
            try:
                if read_(ack_fd, 1) != b"1":
                    exit_(PIPE_LOST_EXIT)
            except OSError:
                exit_(PIPE_LOST_EXIT)

    generate, clones = problem.generate_input, bool(problem.eval_clones_inputs)
    clone = clone_data
    # torch's C function itself: torch.cuda.synchronize looks it up when called (a torch without
    # CUDA has no such C function: torch.cuda's, as a stand-in GPU there provides it)
    sync = (getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize) if gpu else (lambda: None)
    perf_counter = time.perf_counter
    mode, outputs = cfg["mode"], cfg["outputs"]
    time_calls = (make_timer(generate, gpu, device, cfg, write_output, snapshot, changed)
                  if mode == "bench" else None)
    recheck = bool(cfg.get("recheck"))
    time_fallback = bool(cfg.get("time_fallback"))
    warm = [gpu and bool(cfg.get("warmup"))]  # eval.py's warm-up run, before the first timed shape
    flush_error = FlushDoesNotFit
    fmt_error, find_missing, stats_of = error_text, missing_module, stats

    def call(kernel: Any, data: Any) -> tuple[Any, Any, list[Any]]:
        """custom_kernel on a clone (or on the inputs themselves where the problem's evaluator
        does not clone), with a snapshot of what it receives taken first."""
        arg = clone(data) if clones else data
        before = snapshot(arg)
        output = kernel(arg)
        sync()
        return output, arg, before

    def failed(index: int, what: str, e: BaseException, **extra: Any) -> None:
        emit({"event": "error", "index": index, "error": f"{what}: {fmt_error(e)}",
              "missing": find_missing(e), **extra})

    def run(index: int, spec: dict, kernel: Any, backend: str | None) -> None:
        out_path = f"{outputs}/out-{index}.bin"
        try:
            data = generate(spec, device=device)
            sync()
        except Exception as e:  # noqa: BLE001 - input generation itself failed
            failed(index, "evaluating the shape failed", e)
            return
        t0 = perf_counter()
        try:
            output, arg, before = call(kernel, data)
        except Exception as e:  # noqa: BLE001 - the submission's failure is the result
            failed(index, "custom_kernel raised", e, seconds=perf_counter() - t0)
            return
        seconds = perf_counter() - t0
        try:
            written = write_output(output, out_path)
            mutated = changed(before, arg)
            sync()
        except Exception as e:  # noqa: BLE001 - e.g. an output on the meta device
            failed(index, "reading custom_kernel's output failed", e)
            return
        del output
        if mode == "test":
            emit({"event": "output", "index": index, "output": written, "seconds": seconds,
                  "mutated": mutated, "backend": backend})
            del data, arg
            wait_ack()
            return
        if backend == "fallback" and not gpu and not time_fallback:
            emit({"event": "bench", "index": index, "output": written, "mutated": mutated,
                  "timed_mutated": None, "skipped": "fallback-on-cpu", "seconds": seconds,
                  "backend": backend})
            del data, arg
            wait_ack()
            return
        try:
            if warm[0]:
                warm[0] = False
                time_calls(kernel, data, spec, index, out_path, True)
            before = None if recheck else snapshot(data)  # leaderboard mode: each call's, in rechecks
            durations, rechecks, flushed = time_calls(kernel, data, spec, index, out_path)
            timed = None if before is None else changed(before, data)
            sync()
        except flush_error as e:
            emit({"event": "error", "index": index, "error": f"timing failed: {e}", "missing": None})
            return
        except Exception as e:  # noqa: BLE001
            failed(index, "custom_kernel raised while timing", e)
            return
        s = stats_of(durations)
        emit({"event": "bench", "index": index, "output": written, "mutated": mutated, "runs": s.runs,
              "mean_ns": s.mean, "std_ns": s.std, "best_ns": s.best, "worst_ns": s.worst,
              "timed_mutated": timed, "skipped": None, "backend": backend,
              "rechecks": rechecks if recheck else None, **(flushed or {})})
        del data, arg
        wait_ack()

    return run


class _Pipe:
    """The result pipe. A write that fails (the submission closed or replaced the descriptor)
    ends the process with PIPE_LOST_EXIT: nothing more can be reported."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.file = os.fdopen(fd, "w", buffering=1, encoding="utf-8", closefd=False)

    def emitter(self) -> Callable[[dict[str, Any]], None]:
        """``emit(event)`` with the file, ``json.dumps`` and ``os._exit`` bound now."""
        file, dumps, exit_, stderr, fd = self.file, json.dumps, os._exit, sys.stderr, self.fd

        def emit(obj: dict[str, Any]) -> None:
            try:
                file.write(dumps(obj) + "\n")
                file.flush()
            except (OSError, ValueError) as e:
                stderr.write(f"submitgen worker: cannot write to the result pipe (descriptor {fd}): {e}\n")
                stderr.flush()
                exit_(PIPE_LOST_EXIT)

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


def _import_submission(emit: Callable[[dict[str, Any]], None]) -> tuple[Any, Any] | None:
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module("submission")
        return module, module.custom_kernel
    except BaseException as e:  # noqa: BLE001 - SystemExit from a submission counts too
        emit({"event": "import-error", "error": f"importing the submission failed: {error_text(e)}",
              "missing": missing_module(e)})
        return None


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    emit = _Pipe(int(os.environ["SUBMITGEN_RESULT_FD"])).emitter()


    problem = load(cfg["problem_module"], cfg["problem"], cfg.get("problem_root"))
    if cfg.get("compile_log"):  # before anything here touches the GPU: the pass is a fork
        code, seconds = compile_pass(cfg["compile_log"], cfg["compile_timeout_s"])
        emit({"event": "compiled", "code": code, "seconds": seconds})
    gpu = bool(torch.cuda.is_available())
    device = "cuda" if gpu else "cpu"
    device_name = torch.cuda.get_device_name(0) if gpu else "cpu"
    run = make_runner(problem, cfg, gpu, device, emit)
    shapes = [(item["index"], item["spec"]) for item in cfg["shapes"]]
    perf_counter = time.perf_counter
    t0 = perf_counter()
    imported = _import_submission(emit)
    if imported is None:
        return 0
    module, kernel = imported
    emit({"event": "ready", "gpu": gpu, "device": device_name, "backend": _backend(module),
          "import_s": perf_counter() - t0})
    for index, spec in shapes:
        emit({"event": "shape-start", "index": index})
        run(index, spec, kernel, _backend(module))
    emit({"event": "done", "backend": _backend(module)})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads the submission left running do not hold the process open
