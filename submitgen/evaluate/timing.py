"""The timed loop of ``submitgen bench``, run in the worker process (it imports torch).

Each iteration, as eval.py's ``_run_single_benchmark``: [leaderboard mode: the shape's seed += 13,
fresh inputs, and their fingerprint sent up before the call], synchronize, flush the caches the
way eval.py's ``clear_l2_cache_large`` does (a fresh ``torch.randn`` tensor of ``flush_bytes``,
62.5 GiB by default, freed again at once, so the caching allocator hands the same block back
each time), record an event, ``custom_kernel(data)``, record an event, synchronize (host wall
time without a GPU). The flush keeps the GPU busy long enough for the host to queue the whole
call behind it, so launch overhead stays out of the events, as on the leaderboard. In
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

Timer = Callable[..., tuple[list[float], list[dict[str, Any]]]]


class FlushDoesNotFit(RuntimeError):
    """The cache flush of ``flush_bytes`` cannot be allocated on the GPU."""


def make_flush(nbytes: int, device: str) -> Callable[[], None] | None:
    """``flush()``: eval.py's cache flush, ``torch.randn`` into a fresh float32 tensor of ``nbytes``
    (rounded down to whole elements) that is freed at once; None for 0 bytes. Allocates it once
    now: FlushDoesNotFit when the device's memory cannot hold it."""
    count = nbytes // 4
    if count <= 0:
        return None
    randn, float32 = torch.randn, torch.float32
    try:
        probe = randn(count, dtype=float32, device=device)
    except torch.OutOfMemoryError:
        raise FlushDoesNotFit(
            f"the {nbytes / 2**20:g} MiB cache flush (eval.py's clear_l2_cache_large) does not fit in "
            f"the memory of {device}; pass a smaller --flush-mib") from None
    del probe

    def flush() -> None:
        dummy = randn(count, dtype=float32, device=device)
        del dummy

    return flush


def make_timer(generate: Callable[..., Any], gpu: bool, device: str, cfg: Mapping[str, Any],
               write_output: Callable[[Any, str], dict[str, Any]], fingerprint: Callable[[Any], Any],
               emit: Callable[[dict[str, Any]], None]) -> Timer:
    """``time_calls(kernel, data, spec, index, out_path, warmup=False)``: (durations in ns, for each
    timed call in leaderboard mode ``{"output": what was written, "digests": its inputs' fingerprint
    after the call}``). With ``warmup``, the calls of eval.py's warm-up run instead (the mode's
    warm-up rule, the same inputs every call, nothing checked or written)."""
    rule = StopRule.from_dict(cfg["stop"])
    warmup_rule = StopRule.from_dict(cfg["warmup"]) if cfg.get("warmup") else None
    recheck = bool(cfg.get("recheck"))
    flush_bytes = int(cfg.get("flush_bytes", 0))
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    event_type = torch.cuda.Event
    perf_counter, perf_counter_ns = time.perf_counter, time.perf_counter_ns
    stop, spec_of, path_of = stop_reason, recheck_spec, recheck_path
    float_, len_ = float, len

    flush_of = make_flush

    def time_calls(kernel: Any, data: Any, spec: Mapping[str, Any], index: int,
                   out_path: str, warmup: bool = False) -> tuple[list[float], list[dict[str, Any]]]:
        flush = flush_of(flush_bytes, device) if gpu else None
        limits = warmup_rule if warmup and warmup_rule is not None else rule
        checking = recheck and not warmup
        durations: list[float] = []
        written: list[dict[str, Any]] = []
        started = perf_counter()
        while True:
            j = len_(durations)
            if checking:
                data = generate(spec_of(spec, j), device=device)
                sync()
                emit({"event": "inputs", "index": index, "call": j, "digests": fingerprint(data)})
            if gpu:
                sync()
                if flush is not None:
                    flush()  # evict the inputs from L2/MALL, as eval.py's clear_l2_cache_large
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
            if checking:
                written.append({"output": write_output(output, path_of(out_path, j)),
                                "digests": fingerprint(data)})
            del output
            durations.append(duration)
            if stop(limits, durations, perf_counter() - started):
                return durations, written

    return time_calls
