"""The timed loop of ``submitgen bench``, run in the worker process (it imports torch).

Each iteration: [leaderboard mode: the shape's seed += 13, fresh inputs, and their fingerprint
sent up before the call], synchronize, zero the flush buffer, record an event,
``custom_kernel(data)``, record an event, synchronize (host wall time without a GPU). In
leaderboard mode each output's raw bytes are written next to the first call's
(``out-<i>-r<j>.bin``), with the fingerprint of that call's inputs after it, for the parent to
judge, as eval.py's ranked run checks every timed call. The loop stops by
:mod:`submitgen.evaluate.stoprule`.

:func:`make_timer` binds everything the loop calls when it is called: the worker calls it before
importing the submission, so a submission that assigns to ``torch.cuda.Event``, ``time.perf_counter``
or a name of submitgen's changes neither the loop nor what it reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from submitgen.evaluate.recheck import recheck_path, recheck_spec
from submitgen.evaluate.stoprule import StopRule, stop_reason

Timer = Callable[[Any, Any, Mapping[str, Any], int, str], tuple[list[float], list[dict[str, Any]]]]


def make_timer(generate: Callable[..., Any], gpu: bool, device: str, cfg: Mapping[str, Any],
               write_output: Callable[[Any, str], dict[str, Any]], fingerprint: Callable[[Any], Any],
               emit: Callable[[dict[str, Any]], None]) -> Timer:
    """``time_calls(kernel, data, spec, index, out_path)``: (durations in ns, for each timed call in
    leaderboard mode ``{"output": what was written, "digests": its inputs' fingerprint after the
    call}``)."""
    rule = StopRule.from_dict(cfg["stop"])
    recheck = bool(cfg.get("recheck"))
    flush_bytes = int(cfg.get("flush_bytes", 0))
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    event_type, empty, float32 = torch.cuda.Event, torch.empty, torch.float32
    perf_counter, perf_counter_ns = time.perf_counter, time.perf_counter_ns
    stop, spec_of, path_of = stop_reason, recheck_spec, recheck_path
    float_, len_ = float, len

    def time_calls(kernel: Any, data: Any, spec: Mapping[str, Any], index: int,
                   out_path: str) -> tuple[list[float], list[dict[str, Any]]]:
        flush = empty(flush_bytes // 4, dtype=float32, device=device) if gpu and flush_bytes > 0 else None
        durations: list[float] = []
        written: list[dict[str, Any]] = []
        started = perf_counter()
        while True:
            j = len_(durations)
            if recheck:
                data = generate(spec_of(spec, j), device=device)
                sync()
                emit({"event": "inputs", "index": index, "call": j, "digests": fingerprint(data)})
            if gpu:
                sync()
                if flush is not None:
                    flush.zero_()  # evict the inputs from L2/MALL, like the leaderboard's fill
                start, end = event_type(enable_timing=True), event_type(enable_timing=True)
                start.record()
                output = kernel(data)
                end.record()
                sync()
                duration = start.elapsed_time(end) * 1e6
            else:
                t = perf_counter_ns()
                output = kernel(data)
                duration = float_(perf_counter_ns() - t)
            if recheck:
                written.append({"output": write_output(output, path_of(out_path, j)),
                                "digests": fingerprint(data)})
            del output
            durations.append(duration)
            if stop(rule, durations, perf_counter() - started):
                return durations, written

    return time_calls
