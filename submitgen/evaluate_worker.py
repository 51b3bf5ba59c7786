"""The process that imports a submission and runs it, as the leaderboard's ``eval.py`` worker does.

Started by :mod:`submitgen.evaluate` as ``python -m submitgen.evaluate_worker CONFIG`` with its
working directory set to a temporary folder holding ``submission.py`` and ``task.py``. It imports
``submission`` once, then runs every shape of the config, writing one JSON object per line to the
file descriptor named by ``SUBMITGEN_RESULT_FD`` (never to stdout, which belongs to the submission):

- ``{"event": "ready", "gpu": bool, "device": str, "backend": str|null, "import_s": float}``
- ``{"event": "import-error", "error": str}``
- ``{"event": "shape-start", "index": i}``
- ``{"event": "output", "index": i, "output": {"dtype": str, "shape": [int]} | {"type": str},
  "seconds": float, "mutated": [str], "backend": str|null}`` (test)
- ``{"event": "bench", "index": i, "output": ..., "runs": int, "mean_ns": float, ..., "mutated": [str],
  "rechecks": [output]}`` (rechecks: each timed call's output, ``out-<i>-r<j>.bin``, in leaderboard mode)
- ``{"event": "error", "index": i, "error": str}``
- ``{"event": "done", "backend": str|null}``

The worker never judges an output. It writes the raw bytes of each output tensor to
``<outputs>/out-<i>.bin``; the parent process generates the inputs itself, computes the reference
and applies the check, so nothing the submission does inside this process can forge a pass.
If the submission closes or breaks the result pipe, the worker exits with ``PIPE_LOST_EXIT``.

Not part of the public API; its protocol is private to submitgen.evaluate."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from typing import Any

import torch


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


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    # Compare bytes: works for every dtype (fp4x2, e8m0 have no equal kernel) and treats NaN == NaN.
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def mutations(after: Any, before: Any, where: str = "data") -> list[str]:
    """Paths (``data[1]['fp8'][0]``) whose value differs between ``after`` and ``before``."""
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor):
            return [f"{where} (replaced by {type(after).__name__})"]
        if not _same_tensor(after, before):
            return [where]
        return []
    if isinstance(before, (tuple, list)):
        if type(after) is not type(before) or len(after) != len(before):
            return [f"{where} (container changed)"]
        out: list[str] = []
        for i, (x, y) in enumerate(zip(after, before)):
            out += mutations(x, y, f"{where}[{i}]")
        return out
    if isinstance(before, dict):
        if not isinstance(after, dict) or set(after) != set(before):
            return [f"{where} (keys changed)"]
        out = []
        for k in before:
            out += mutations(after[k], before[k], f"{where}[{k!r}]")
        return out
    try:
        same = bool(after == before)
    except Exception:  # noqa: BLE001 - exotic objects: identity is the best we can say
        same = after is before
    return [] if same else [where]


def _sync(gpu: bool) -> None:
    if gpu:
        torch.cuda.synchronize()


def _error_text(exc: BaseException) -> str:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(tb[-6:]).rstrip()


def _backend(module: Any) -> str | None:
    value = getattr(module, "SUBMITGEN_BACKEND", None)
    return value if isinstance(value, str) else None


PIPE_LOST_EXIT = 86
"""The worker's exit code when it can no longer write to the result pipe."""


def input_mutations(problem: Any, after: Any, before: Any) -> list[str]:
    """The names of the input tensors whose bytes differ between ``after`` and ``before`` (or the
    paths that changed, when the structure itself was changed)."""
    changed = mutations(after, before)
    if not changed:
        return []
    try:
        pairs = list(zip(problem.leaves(after), problem.leaves(before)))
    except Exception:  # noqa: BLE001 - a replaced container: report the paths
        return changed
    names = [problem.input_name(i) for i, (a, b) in enumerate(pairs)
             if not isinstance(a, torch.Tensor) or not _same_tensor(a, b)]
    return names or changed


def write_output(output: Any, path: str) -> dict[str, Any]:
    """Write a tensor's raw bytes to ``path``; describe what was written (or what came back)."""
    if not isinstance(output, torch.Tensor):
        return {"type": type(output).__name__}
    flat = output.detach().contiguous().cpu().reshape(-1)
    raw = flat.view(torch.uint8)
    with open(path, "wb") as f:
        f.write(raw.numpy().tobytes())
    return {"dtype": str(output.dtype).removeprefix("torch."), "shape": list(output.shape)}


def _call(problem: Any, kernel: Any, data: Any, gpu: bool) -> tuple[Any, Any]:
    """Call ``kernel`` as the leaderboard's eval.py does: on a clone, or on the inputs themselves
    when the problem's evaluator does not clone. Returns (output, the tensors it received)."""
    arg = clone_data(data) if problem.eval_clones_inputs else data
    pristine = data if problem.eval_clones_inputs else clone_data(data)
    output = kernel(arg)
    _sync(gpu)
    return output, (arg, pristine)


def run_test_shape(
    problem: Any, kernel: Any, spec: dict, device: str, gpu: bool, out_path: str
) -> dict[str, Any]:
    data = problem.generate_input(spec, device=device)
    _sync(gpu)
    t0 = time.perf_counter()
    try:
        output, (arg, pristine) = _call(problem, kernel, data, gpu)
    except Exception as e:  # noqa: BLE001 - the submission's failure is the result
        return {"event": "error", "error": f"custom_kernel raised: {_error_text(e)}",
                "seconds": time.perf_counter() - t0}
    seconds = time.perf_counter() - t0
    return {"event": "output", "output": write_output(output, out_path), "seconds": seconds,
            "mutated": input_mutations(problem, arg, pristine)}


def run_bench_shape(problem: Any, kernel: Any, spec: dict, device: str, gpu: bool,
                    cfg: dict[str, Any], out_path: str) -> dict[str, Any]:
    data = problem.generate_input(spec, device=device)
    _sync(gpu)
    try:
        output, (arg, pristine) = _call(problem, kernel, data, gpu)
    except Exception as e:  # noqa: BLE001
        return {"event": "error", "error": f"custom_kernel raised: {_error_text(e)}"}
    written = write_output(output, out_path)  # checked by the parent; timing does not change the verdict
    del output
    from submitgen.evaluate.stoprule import stats
    from submitgen.evaluate.timing import time_calls

    try:
        durations, rechecks = time_calls(problem, kernel, data, spec, gpu, device, cfg, out_path,
                                         write_output)
    except Exception as e:  # noqa: BLE001
        return {"event": "error", "error": f"custom_kernel raised while timing: {_error_text(e)}"}
    changed = input_mutations(problem, arg, pristine) or \
        input_mutations(problem, data, problem.generate_input(spec, device=device))
    s = stats(durations)
    return {"event": "bench", "output": written, "runs": s.runs, "mean_ns": s.mean, "std_ns": s.std,
            "best_ns": s.best, "worst_ns": s.worst, "mutated": changed, "rechecks": rechecks}


class _Pipe:
    """The result pipe. A write that fails (the submission closed or replaced the descriptor)
    ends the process with PIPE_LOST_EXIT: nothing more can be reported."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.file = os.fdopen(fd, "w", buffering=1, encoding="utf-8", closefd=False)

    def emit(self, obj: dict[str, Any]) -> None:
        try:
            self.file.write(json.dumps(obj) + "\n")
            self.file.flush()
        except (OSError, ValueError) as e:
            sys.stderr.write(
                f"submitgen worker: cannot write to the result pipe (descriptor {self.fd}): {e}\n"
            )
            sys.stderr.flush()
            os._exit(PIPE_LOST_EXIT)


def _import_submission(pipe: _Pipe) -> tuple[Any, Any] | None:
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module("submission")
        return module, module.custom_kernel
    except BaseException as e:  # noqa: BLE001 - SystemExit from a submission counts too
        pipe.emit({"event": "import-error", "error": f"importing the submission failed: {_error_text(e)}"})
        return None


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    pipe = _Pipe(int(os.environ["SUBMITGEN_RESULT_FD"]))

    from submitgen.problems.registry import load

    problem = load(cfg["problem_module"], cfg["problem"], cfg.get("problem_root"))
    gpu = bool(torch.cuda.is_available())
    device = "cuda" if gpu else "cpu"
    device_name = torch.cuda.get_device_name(0) if gpu else "cpu"
    t0 = time.perf_counter()
    imported = _import_submission(pipe)
    if imported is None:
        return 0
    module, kernel = imported
    pipe.emit({"event": "ready", "gpu": gpu, "device": device_name, "backend": _backend(module),
               "import_s": time.perf_counter() - t0})
    for item in cfg["shapes"]:
        index, spec = item["index"], item["spec"]
        out_path = os.path.join(cfg["outputs"], f"out-{index}.bin")
        pipe.emit({"event": "shape-start", "index": index})
        try:
            if cfg["mode"] == "test":
                fields = run_test_shape(problem, kernel, spec, device, gpu, out_path)
            else:
                fields = run_bench_shape(problem, kernel, spec, device, gpu, cfg, out_path)
        except Exception as e:  # noqa: BLE001 - input generation itself failed
            fields = {"event": "error", "error": f"evaluating the shape failed: {_error_text(e)}"}
        fields.update(index=index, backend=_backend(module))
        pipe.emit(fields)
    pipe.emit({"event": "done", "backend": _backend(module)})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads the submission left running do not hold the process open
