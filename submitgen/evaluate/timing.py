"""The timed loop of ``submitgen bench``, in the worker, as eval.py's ``_run_single_benchmark``:
[leaderboard mode: seed += 13, fresh inputs and their snapshot], synchronize, eval.py's cache
flush (a fresh ``torch.randn`` tensor of ``flush_bytes``, freed at once; with ``flush_fit`` shrunk
to what the GPU holds: :func:`fit_flush`), events around ``custom_kernel(data)`` (host wall time
without a GPU), [leaderboard mode: the call's check, outside the events], until
:mod:`.stoprule` stops it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from submitgen.evaluate.check import recheck_spec
from submitgen.evaluate.stoprule import StopRule, stop_reason

Timer = Callable[..., tuple[list[float], list[dict[str, Any]], dict[str, Any] | None]]


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


MIB = 1 << 20
FIT_SHARE = 0.9
"""A flush shrunk to fit takes at most this share of the device's free memory, leaving the rest to
the submission's own allocations between flushes."""


def fit_flush(nbytes: int, device: str, mem_info: Callable[[str], tuple[int, int]]
              ) -> tuple[Callable[[], None] | None, int, tuple[int, int] | None]:
    """(flush, bytes it fills, None) when ``nbytes`` fits on ``device``; otherwise the largest whole
    MiB up to FIT_SHARE of the free memory that ``mem_info(device)`` (``torch.cuda.mem_get_info``:
    free and total bytes) reports, halved until one allocates, with (free, total) as the third item.
    FlushDoesNotFit when not even 1 MiB does."""
    try:
        return make_flush(nbytes, device), nbytes, None
    except FlushDoesNotFit:
        pass
    free, total = (int(x) for x in mem_info(device))
    size = min(nbytes, int(free * FIT_SHARE)) // MIB * MIB
    while size >= MIB:
        try:
            return make_flush(size, device), size, (free, total)
        except FlushDoesNotFit:
            size = size // 2 // MIB * MIB
    raise FlushDoesNotFit(
        f"no cache flush of 1 MiB or more fits in the memory of {device} ({free // MIB:,} MiB free of "
        f"{total // MIB:,} MiB); pass --flush-mib 0 to time without one")


def make_timer(generate: Callable[..., Any], gpu: bool, device: str, cfg: Mapping[str, Any],
               recheck_call: Callable[[int, dict[str, Any], Any, Any, list[Any]], dict[str, Any]],
               snapshot: Callable[[Any], list[Any]]) -> Timer:
    """``time_calls(kernel, data, spec, warmup=False)``: (durations in ns, in leaderboard mode what
    ``recheck_call(j, the call's spec, output, inputs, their snapshot before the call)`` made of each
    timed call, the flush: ``{"flush_mib": MiB filled before each call, "memory_mib": [free,
    total] MiB of the device when the size asked for did not fit, else None}``, None without a GPU).
    With ``warmup``, the calls of eval.py's warm-up run instead (the mode's warm-up rule, the same
    inputs every call, nothing checked)."""
    rule = StopRule.from_dict(cfg["stop"])
    warmup_rule = StopRule.from_dict(cfg["warmup"]) if cfg.get("warmup") else None
    recheck = bool(cfg.get("recheck"))
    size = [int(cfg.get("flush_bytes", 0))]  # shrinks when a fitted flush had to
    memory: list[tuple[int, int] | None] = [None]
    fit = bool(cfg.get("flush_fit"))
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def flush_for_shape() -> Callable[[], None] | None:
        if not fit:
            return make_flush(size[0], device)
        flush, used, mem = fit_flush(size[0], device, torch.cuda.mem_get_info)
        if mem is not None:
            size[0], memory[0] = used, mem
        return flush

    def flush_info() -> dict[str, Any] | None:
        if not gpu:
            return None
        mem = memory[0]
        return {"flush_mib": size[0] // MIB, "memory_mib": None if mem is None else [m // MIB for m in mem]}

    def time_calls(kernel: Any, data: Any, spec: Mapping[str, Any], warmup: bool = False
                   ) -> tuple[list[float], list[dict[str, Any]], dict[str, Any] | None]:
        flush = flush_for_shape() if gpu else None
        limits = warmup_rule if warmup and warmup_rule is not None else rule
        checking = recheck and not warmup
        durations: list[float] = []
        written: list[dict[str, Any]] = []
        started = time.perf_counter()
        while True:
            j = len(durations)
            if checking:
                call_spec = recheck_spec(spec, j)
                data = generate(call_spec, device=device)
                sync()
                before = snapshot(data)
            if gpu:
                sync()
                if flush is not None:
                    flush()  # evict the inputs from L2/MALL, as eval.py's clear_l2_cache_large
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                output = kernel(data)
                end.record()
                sync()
                duration = start.elapsed_time(end) * 1e6
            else:
                t = time.perf_counter_ns()
                output = kernel(data)
                duration = float(time.perf_counter_ns() - t)
            if checking:
                written.append(recheck_call(j, call_spec, output, data, before))
            del output
            durations.append(duration)
            if stop_reason(limits, durations, time.perf_counter() - started):
                return durations, written, flush_info()

    return time_calls
