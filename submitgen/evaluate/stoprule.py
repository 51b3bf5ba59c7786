"""When ``submitgen bench`` stops timing a shape: the rule of the leaderboard's ``eval.py``
(docs/reference-kernels.md gives its limits), or ``--iters N`` calls. Pure Python: the worker
imports it next to torch; the tests feed it synthetic timings."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

MIN_RUNS = 3
REL_ERR = 0.001
WALL_S = 120.0


@dataclass(frozen=True)
class StopRule:
    """``fixed``: a fixed count (``--iters``); otherwise eval.py's rule with these limits."""

    max_runs: int
    budget_ns: float  # summed device time (mean x runs) after which timing stops
    wall_s: float = WALL_S
    min_runs: int = MIN_RUNS
    rel_err: float = REL_ERR
    fixed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StopRule:
        return cls(**dict(d))

    def describe(self) -> str:
        """One line for the report."""
        if self.fixed is not None:
            return (f"stop: {self.fixed} timed calls per shape (--iters), fewer once {self.wall_s:g} s "
                    "have passed")
        return (f"stop: after at least {self.min_runs} runs, once the standard error is below "
                f"{self.rel_err:.1%} of the mean, {self.budget_ns / 1e9:g} s of summed time or "
                f"{self.wall_s:g} s of wall time have passed, or at {self.max_runs} runs (eval.py's rule)")


BENCHMARK = StopRule(max_runs=1000, budget_ns=50e9)
"""eval.py's benchmark mode: ``max_repeats=1000, max_time_ns=50e9``."""
LEADERBOARD = StopRule(max_runs=100, budget_ns=30e9)
"""eval.py's leaderboard mode (the ranked run): ``max_repeats=100, max_time_ns=30e9``."""
MODES = {"benchmark": BENCHMARK, "leaderboard": LEADERBOARD}
WARMUPS = {"benchmark": StopRule(max_runs=100, budget_ns=10e7),
           "leaderboard": StopRule(max_runs=100, budget_ns=1e7)}
"""eval.py's warm-up run on the first benchmark before the timed ones, discarded:
``run_single_benchmark(pool, tests[0], False, 100, 10e7)`` in benchmark mode, ``..., 1e7)`` in
leaderboard mode (no rechecks in either)."""


def warmup_rule(mode: str, wall_s: float = WALL_S) -> StopRule:
    """The rule of eval.py's warm-up run in ``mode``."""
    base = WARMUPS[mode]
    return StopRule(max_runs=base.max_runs, budget_ns=base.budget_ns, wall_s=float(wall_s))


def rule_for(mode: str, iters: int | None = None, wall_s: float = WALL_S) -> StopRule:
    """The rule of ``mode`` ('benchmark' or 'leaderboard'), with a fixed count when ``iters`` is
    given, and ``wall_s`` as the wall limit."""
    base = MODES[mode]
    return StopRule(max_runs=base.max_runs, budget_ns=base.budget_ns, wall_s=float(wall_s), fixed=iters)


@dataclass(frozen=True)
class Stats:
    """eval.py's figures of one benchmark, in ns: std is the sample standard deviation (0 for one
    run), err the standard error of the mean (std / sqrt(runs))."""

    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float


def stats(durations: Sequence[float]) -> Stats:
    n = len(durations)
    if n == 0:
        raise ValueError("no durations")
    mean = sum(durations) / n
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (n - 1)) if n > 1 else 0.0
    return Stats(n, mean, std, std / math.sqrt(n), float(min(durations)), float(max(durations)))


def stop_reason(rule: StopRule, durations: Sequence[float], wall_s: float) -> str | None:
    """Why timing stops after ``durations`` with ``wall_s`` seconds spent, or None to go on:
    'count' (the fixed count), 'error' (the standard error is small enough), 'budget' (summed
    time), 'wall' (wall time) or 'max-runs'."""
    runs = len(durations)
    if rule.fixed is not None:
        if runs >= rule.fixed:
            return "count"
        return "wall" if runs >= 1 and wall_s > rule.wall_s else None
    if runs >= rule.max_runs:
        return "max-runs"
    if runs < rule.min_runs:
        return None
    s = stats(durations)
    if s.mean <= 0 or s.err / s.mean < rule.rel_err:
        return "error"
    if s.mean * s.runs > rule.budget_ns:
        return "budget"
    if wall_s > rule.wall_s:
        return "wall"
    return None
