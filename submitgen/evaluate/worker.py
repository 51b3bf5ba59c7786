"""The process that imports a submission and runs it, as the leaderboard's ``eval.py`` worker does.

Started by :mod:`submitgen.evaluate` as ``python -m submitgen.evaluate.worker CONFIG`` with its
working directory set to the run folder (``submission.py``, ``task.py``, ``reference.py``,
``utils.py``). It imports ``submission`` once, then runs every shape of the config, writing one
JSON object per line to the file descriptor named by ``SUBMITGEN_RESULT_FD`` (never to stdout,
which belongs to the submission):

- ``{"event": "ready", "gpu": bool, "device": str, "backend": str|null, "import_s": float}``
- ``{"event": "import-error", "error": str, "missing": str|null}``
- ``{"event": "shape-start", "index": i}``
- ``{"event": "inputs", "index": i, "digests": FINGERPRINT, "regions": [REGION]}``: the inputs
  custom_kernel is about to receive, sent BEFORE the call, and where each tensor's bytes lie
  (:data:`submitgen.evaluate.readback.Region`: ``[address, nbytes]`` of a contiguous CPU tensor;
  for a CUDA tensor, contiguous or not, its storage's CUDA IPC export by torch's ``_share_cuda_``
  with the tensor's byte offset, shape and strides in it (:mod:`submitgen.evaluate.cudaipc`);
  null for any other); with ``"call": j`` the inputs of timed call ``j`` (from 0) in leaderboard
  mode, with their regions too. Before an ``output`` or ``bench`` event the worker synchronizes
  the device; after it, it keeps those inputs alive until the parent, having read their bytes
  itself (from ``/proc/PID/mem``, through CUDA IPC), writes one byte to ``SUBMITGEN_ACK_FD``; then
  it frees them and waits for a second byte, written once the parent has judged the output (which
  regenerates the inputs: the two processes never hold a shape's inputs at once)
- ``{"event": "timed-done", "index": i, "call": j}``: in leaderboard mode, timed call ``j`` has
  ended (after its end event, the device synchronized, its output written); the timed loop keeps
  that call's inputs alive until the parent has read them back and written its one byte
- ``{"event": "output", "index": i, "output": {"dtype": str, "shape": [int]} | {"type": str},
  "seconds": float, "digests": FINGERPRINT, "backend": str|null}`` (test; digests after the call)
- ``{"event": "bench", "index": i, "output": ..., "digests": ..., "runs": int, "mean_ns": float,
  ..., "timed_digests": FINGERPRINT|null, "skipped": str|null, "rechecks": [{"output": ...,
  "digests": FINGERPRINT}]|null}`` (rechecks: in leaderboard mode, each timed call's output,
  written to ``out-<i>-r<j>.bin``, and its inputs' fingerprint after the call)
- ``{"event": "error", "index": i, "error": str, "missing": str|null}``
- ``{"event": "done", "backend": str|null}``

FINGERPRINT is :mod:`submitgen.evaluate.digest`'s. The worker judges nothing: it writes the raw
bytes of each output tensor to ``<outputs>/out-<i>.bin`` and the inputs' fingerprints to the
pipe; the parent regenerates the inputs, computes the reference, applies the check and compares
the fingerprints with its own. Everything the worker calls after the submission is imported
(the shape runner, the timed loop with its stop rule, the fingerprint, the pipe writer, torch's
C methods) is bound before the import, so a submission that assigns to ``torch.equal``, to a
name of this module or of submitgen's changes neither what is hashed nor what is reported.
``missing`` names the top-level module of a ``ModuleNotFoundError`` (``aiter``). If the
submission closes or breaks the result pipe, the worker exits with ``PIPE_LOST_EXIT``.

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
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

from submitgen.evaluate.digest import make_fingerprint  # noqa: E402
from submitgen.evaluate.readback import make_regions  # noqa: E402
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
    fingerprint = make_fingerprint()
    regions = make_regions()
    write_output = make_output_writer()
    ack_fd = int(os.environ.get("SUBMITGEN_ACK_FD", "-1"))
    read_, exit_ = os.read, os._exit

    def wait_ack() -> None:
        """Keep the inputs alive until the parent has read them back (:func:`readback.read_regions`)."""
        if ack_fd >= 0:
            try:
                if read_(ack_fd, 1) != b"1":
                    exit_(PIPE_LOST_EXIT)
            except OSError:
                exit_(PIPE_LOST_EXIT)

    generate, clones = problem.generate_input, bool(problem.eval_clones_inputs)
    clone = clone_data
    # torch's C function itself: torch.cuda.synchronize looks it up when called. The device is
    # synchronized after the call and before each output or bench event, so the memory the parent
    # reads back through CUDA IPC is what the submission's kernels left, finished
    # (a torch without CUDA has no such C function: torch.cuda's, as a stand-in GPU there provides it)
    sync = (getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize) if gpu else (lambda: None)
    perf_counter = time.perf_counter
    mode, outputs = cfg["mode"], cfg["outputs"]
    time_calls = make_timer(generate, gpu, device, cfg, write_output, fingerprint, emit, regions,
                            wait_ack) if mode == "bench" else None
    recheck = bool(cfg.get("recheck"))
    time_fallback = bool(cfg.get("time_fallback"))
    warm = [gpu and bool(cfg.get("warmup"))]  # eval.py's warm-up run, before the first timed shape
    flush_error = FlushDoesNotFit
    fmt_error, find_missing, stats_of = error_text, missing_module, stats

    def call(kernel: Any, data: Any, index: int) -> tuple[Any, Any]:
        """custom_kernel on a clone (or on the inputs themselves where the problem's evaluator
        does not clone), the fingerprint of what it receives sent up first."""
        arg = clone(data) if clones else data
        emit({"event": "inputs", "index": index, "digests": fingerprint(arg), "regions": regions(arg)})
        output = kernel(arg)
        sync()
        return output, arg

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
            output, arg = call(kernel, data, index)
        except Exception as e:  # noqa: BLE001 - the submission's failure is the result
            failed(index, "custom_kernel raised", e, seconds=perf_counter() - t0)
            return
        seconds = perf_counter() - t0
        try:
            written = write_output(output, out_path)
            after = fingerprint(arg)
            sync()
        except Exception as e:  # noqa: BLE001 - e.g. an output on the meta device
            failed(index, "reading custom_kernel's output failed", e)
            return
        del output
        if mode == "test":
            emit({"event": "output", "index": index, "output": written, "seconds": seconds,
                  "digests": after, "backend": backend})
            wait_ack()
            del data, arg
            wait_ack()
            return
        if backend == "fallback" and not gpu and not time_fallback:
            emit({"event": "bench", "index": index, "output": written, "digests": after,
                  "timed_digests": None, "skipped": "fallback-on-cpu", "seconds": seconds,
                  "backend": backend})
            wait_ack()
            del data, arg
            wait_ack()
            return
        try:
            if warm[0]:
                warm[0] = False
                time_calls(kernel, data, spec, index, out_path, True)
            durations, rechecks, flushed = time_calls(kernel, data, spec, index, out_path)
            timed = None if recheck else fingerprint(data)  # leaderboard mode: each call's, in rechecks
            sync()
        except flush_error as e:
            emit({"event": "error", "index": index, "error": f"timing failed: {e}", "missing": None})
            return
        except Exception as e:  # noqa: BLE001
            failed(index, "custom_kernel raised while timing", e)
            return
        s = stats_of(durations)
        emit({"event": "bench", "index": index, "output": written, "digests": after, "runs": s.runs,
              "mean_ns": s.mean, "std_ns": s.std, "best_ns": s.best, "worst_ns": s.worst,
              "timed_digests": timed, "skipped": None, "backend": backend,
              "rechecks": rechecks if recheck else None, **(flushed or {})})
        wait_ack()
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
