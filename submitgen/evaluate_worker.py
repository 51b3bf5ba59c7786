"""The process that imports a submission and runs it, as the leaderboard's ``eval.py`` worker does.

Started by :mod:`submitgen.evaluate` as ``python -m submitgen.evaluate_worker CONFIG`` with its
working directory set to a temporary folder holding ``submission.py`` and ``task.py``. It imports
``submission`` once, then runs every shape of the config, writing one JSON object per line to the
file descriptor named by ``SUBMITGEN_RESULT_FD`` (never to stdout, which belongs to the submission):

- ``{"event": "ready", "gpu": bool, "device": str, "backend": str|null, "import_s": float}``
- ``{"event": "import-error", "error": str}``
- ``{"event": "shape-start", "index": i}``
- ``{"event": "result", "index": i, ...}`` (fields of ShapeResult / BenchResult)
- ``{"event": "done", "backend": str|null}``

Not part of the public API; its protocol is private to evaluate.py."""

from __future__ import annotations

import importlib
import json
import math
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


def _finite(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _check_fields(res: Any) -> dict[str, Any]:
    return {
        "passed": bool(res.passed),
        "max_abs_err": _finite(float(res.max_abs_err)),
        "max_rel_err": _finite(float(res.max_rel_err)),
        "mismatches": int(res.mismatches),
        "total": int(res.total),
        "mismatch_ratio": float(res.mismatch_ratio),
        "message": str(res.message),
        "rel_l2_err": _finite(float(getattr(res, "rel_l2_err", math.nan))),
    }


def _backend(module: Any) -> str | None:
    value = getattr(module, "SUBMITGEN_BACKEND", None)
    return value if isinstance(value, str) else None


def run_test_shape(problem: Any, kernel: Any, spec: dict, device: str, gpu: bool) -> dict[str, Any]:
    data = problem.generate_input(spec, device=device)
    _sync(gpu)
    arg = clone_data(data)
    t0 = time.perf_counter()
    try:
        output = kernel(arg)
        _sync(gpu)
    except Exception as e:  # noqa: BLE001 - the submission's failure is the result
        return {"passed": False, "error": f"custom_kernel raised: {_error_text(e)}",
                "seconds": time.perf_counter() - t0}
    seconds = time.perf_counter() - t0
    changed = mutations(arg, data)
    fields = _check_fields(problem.check(output, data))
    fields["seconds"] = seconds
    if changed:
        fields["passed"] = False
        fields["mutated"] = changed
    return fields


def run_bench_shape(problem: Any, kernel: Any, spec: dict, device: str, gpu: bool,
                    cfg: dict[str, Any]) -> dict[str, Any]:
    data = problem.generate_input(spec, device=device)
    _sync(gpu)
    try:
        output = kernel(clone_data(data))
        _sync(gpu)
    except Exception as e:  # noqa: BLE001
        return {"error": f"custom_kernel raised: {_error_text(e)}"}
    first_output = output  # checked after the timing loop; the order does not change the verdict
    flush = None
    if gpu and cfg["flush_bytes"] > 0:
        flush = torch.empty(cfg["flush_bytes"] // 4, dtype=torch.float32, device=device)
    durations: list[float] = []
    started = time.perf_counter()
    try:
        for _ in range(cfg["iters"]):
            if gpu:
                torch.cuda.synchronize()
                if flush is not None:
                    flush.zero_()  # evict the inputs from L2/MALL, like the leaderboard's fill
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                output = kernel(data)
                end.record()
                torch.cuda.synchronize()
                durations.append(start.elapsed_time(end) * 1e6)
            else:
                t = time.perf_counter_ns()
                output = kernel(data)
                durations.append(float(time.perf_counter_ns() - t))
            del output
            if time.perf_counter() - started > cfg["max_time_s"]:
                break
    except Exception as e:  # noqa: BLE001
        return {"error": f"custom_kernel raised while timing: {_error_text(e)}"}
    check = problem.check(first_output, data)
    changed = mutations(data, problem.generate_input(spec, device=device))
    n = len(durations)
    mean = sum(durations) / n
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (n - 1)) if n > 1 else 0.0
    return {
        "runs": n, "mean_ns": mean, "std_ns": std, "best_ns": min(durations),
        "worst_ns": max(durations), "correct": bool(check.passed) and not changed,
        "check_message": str(check.message) + (f"; inputs mutated: {', '.join(changed)}" if changed else ""),
    }


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    out = os.fdopen(int(os.environ["SUBMITGEN_RESULT_FD"]), "w", buffering=1, encoding="utf-8")

    def emit(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    from submitgen.problems.registry import load

    problem = load(cfg["problem_module"], cfg["problem"], cfg.get("problem_root"))
    gpu = bool(torch.cuda.is_available())
    device = "cuda" if gpu else "cpu"
    device_name = torch.cuda.get_device_name(0) if gpu else "cpu"
    sys.path.insert(0, os.getcwd())
    t0 = time.perf_counter()
    try:
        module = importlib.import_module("submission")
        kernel = module.custom_kernel
    except BaseException as e:  # noqa: BLE001 - SystemExit from a submission counts too
        emit({"event": "import-error", "error": f"importing the submission failed: {_error_text(e)}"})
        return 0
    emit({"event": "ready", "gpu": gpu, "device": device_name, "backend": _backend(module),
          "import_s": time.perf_counter() - t0})
    for item in cfg["shapes"]:
        index, spec = item["index"], item["spec"]
        emit({"event": "shape-start", "index": index})
        try:
            if cfg["mode"] == "test":
                fields = run_test_shape(problem, kernel, spec, device, gpu)
            else:
                fields = run_bench_shape(problem, kernel, spec, device, gpu, cfg)
        except Exception as e:  # noqa: BLE001 - input generation or the check itself failed
            fields = {"passed": False, "error": f"evaluating the shape failed: {_error_text(e)}"}
        fields.update(event="result", index=index, backend=_backend(module))
        emit(fields)
    emit({"event": "done", "backend": _backend(module)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
