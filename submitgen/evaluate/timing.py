"""The timed loop of ``submitgen bench``, run in the worker process (it imports torch).

Each iteration: [leaderboard mode: the shape's seed += 13 and fresh inputs], synchronize, zero the
flush buffer, record an event, ``custom_kernel(data)``, record an event, synchronize (host wall
time without a GPU). In leaderboard mode each output's raw bytes are written next to the first
call's (``out-<i>-r<j>.bin``) for the parent to check, as eval.py's ranked run checks every timed
call. The loop stops by :mod:`submitgen.evaluate.stoprule`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from .recheck import recheck_path, recheck_spec
from .stoprule import StopRule, stop_reason


def time_calls(problem: Any, kernel: Any, data: Any, spec: Mapping[str, Any], gpu: bool, device: str,
               cfg: Mapping[str, Any], out_path: str,
               write_output: Callable[[Any, str], dict[str, Any]]
               ) -> tuple[list[float], list[dict[str, Any]]]:
    """(durations in ns, the description of each timed call's output in leaderboard mode)."""
    rule = StopRule.from_dict(cfg["stop"])
    recheck = bool(cfg.get("recheck"))
    flush = None
    if gpu and cfg["flush_bytes"] > 0:
        flush = torch.empty(cfg["flush_bytes"] // 4, dtype=torch.float32, device=device)
    durations: list[float] = []
    written: list[dict[str, Any]] = []
    started = time.perf_counter()
    while True:
        if recheck:
            data = problem.generate_input(recheck_spec(spec, len(durations)), device=device)
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
            duration = start.elapsed_time(end) * 1e6
        else:
            t = time.perf_counter_ns()
            output = kernel(data)
            duration = float(time.perf_counter_ns() - t)
        if recheck:
            written.append(write_output(output, recheck_path(out_path, len(durations))))
        del output
        durations.append(duration)
        if stop_reason(rule, durations, time.perf_counter() - started):
            return durations, written
