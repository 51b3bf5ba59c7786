"""What ``submitgen test`` expects a run without a GPU to take, said before it starts: CPU time and
peak memory from the shapes' input sizes (read from the problem's meta inputs: no tensor is made)
times rates measured for the problem's default build on the 2-core machine. Never from a shape's
pace: the first shape is the smallest, and a loaded machine stretches wall time, not CPU time. A
problem without a measured rate (a plug-in, a problem folder) gets no estimate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rate:
    """A problem's cost on a CPU per GB of a shape's inputs, measured for its default build."""

    cpu_s_per_gb: float
    """CPU seconds of the whole run (every process) per GB of the shapes' inputs."""
    cpu_s_base: float
    """CPU seconds of the run beside the shapes (imports, the compile pass)."""
    peak_per_gb: float
    """Peak memory of the run (its process tree) per GB of the largest shape's inputs."""
    peak_base_gb: float
    measured: str


_MEASURED = "2-core x86, 2026-12-07"
# Fitted to `submitgen test` of each default gfx950 build, its test shapes, on the idle 2-core machine
# (benchmarks/bench_test_load.py; benchmarks/results/cpu-2026-12-07-test-idle/): CPU = 6 s (the
# imports and the compile pass: most of mxfp4-mm's 6.2 s) + rate x the inputs' GB; peak = 0.7 GB
# (both processes' imports) + rate x the largest shape's GB.
RATES: Mapping[str, Rate] = {
    "amd-mxfp4-mm": Rate(cpu_s_per_gb=2.5, cpu_s_base=6.0, peak_per_gb=1.7, peak_base_gb=0.7,
                         measured=f"6.2 s of CPU and 0.78 GB, {_MEASURED}"),
    "amd-mixed-mla": Rate(cpu_s_per_gb=15.3, cpu_s_base=6.0, peak_per_gb=2.1, peak_base_gb=0.7,
                          measured=f"89 s of CPU and 9.7 GB, {_MEASURED}"),
    "amd-moe-mxfp4": Rate(cpu_s_per_gb=47.4, cpu_s_base=6.0, peak_per_gb=2.0, peak_base_gb=0.7,
                          measured=f"304 s of CPU and 7.5 GB, {_MEASURED}"),
}


def input_gb(problem: Any, spec: Mapping[str, Any]) -> float:
    """GB of the tensors among the problem's input leaves for ``spec``, from its meta inputs."""
    import torch

    data = problem.meta_input(dict(spec))
    return sum(t.numel() * t.element_size() for t in problem.leaves(data)
               if isinstance(t, torch.Tensor)) / 1e9


def _time(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def estimate_line(problem: Any, specs: Sequence[Mapping[str, Any]]) -> str | None:
    """One line: the CPU time and peak memory expected, or None without a measured rate."""
    rate = RATES.get(problem.leaderboard)
    if rate is None or not specs:
        return None
    sizes = [input_gb(problem, s) for s in specs]
    cpu = rate.cpu_s_base + rate.cpu_s_per_gb * sum(sizes)
    peak = rate.peak_base_gb + rate.peak_per_gb * max(sizes)
    return (f"expected without a GPU: about {_time(cpu)} of CPU time and {peak:.1f} GB of memory at the "
            f"peak, from the shapes' input sizes ({sum(sizes):.2f} GB in all; the default build's test "
            f"shapes took {rate.measured}); a loaded machine stretches the wall time, not the CPU time that "
            "--timeout limits")
