"""submitgen/evaluate/stoprule.py: eval.py's stopping rule on synthetic timings."""

from __future__ import annotations

import math

import pytest

from submitgen.evaluate.stoprule import BENCHMARK, LEADERBOARD, StopRule, rule_for, stats, stop_reason


def run_until_stop(rule: StopRule, timings, wall_per_call_s: float = 0.0) -> tuple[int, str]:
    """Feed ``timings`` one by one, as the timed loop does; (runs, reason) where it stops."""
    durations: list[float] = []
    for t in timings:
        durations.append(t)
        reason = stop_reason(rule, durations, wall_per_call_s * len(durations))
        if reason:
            return len(durations), reason
    raise AssertionError("the rule never stopped")


def noisy(mean: float, spread: float, n: int) -> list[float]:
    """Alternating mean +- spread: the standard error falls as 1/sqrt(runs)."""
    return [mean + (spread if i % 2 else -spread) for i in range(n)]


def test_stats_match_eval_py_formulas():
    s = stats([10.0, 12.0, 14.0, 16.0])
    assert (s.runs, s.mean, s.best, s.worst) == (4, 13.0, 10.0, 16.0)
    assert s.std == pytest.approx(math.sqrt(20 / 3))  # sample std, n - 1
    assert s.err == pytest.approx(s.std / 2)  # std / sqrt(runs)
    assert stats([5.0]).std == 0.0 and stats([5.0]).err == 0.0


def test_constant_timings_stop_at_the_third_run():
    # zero spread: the error is 0 < 0.1 % of the mean, but never before 3 runs
    assert run_until_stop(BENCHMARK, [1000.0] * 10) == (3, "error")


def test_never_before_three_runs_even_past_every_budget():
    rule = BENCHMARK
    assert stop_reason(rule, [1e12], 1e6) is None
    assert stop_reason(rule, [1e12, 1e12], 1e6) is None
    assert stop_reason(rule, [1e12, 1e12, 3e12], 1e6) == "budget"


def test_relative_error_threshold():
    # +-1 % alternating noise: for an even count n the mean is exact, std = 10 * sqrt(n / (n - 1))
    # and err = 10 / sqrt(n - 1), below 0.1 % of 1000 once n - 1 > 100: the first such n is 102
    runs, reason = run_until_stop(BENCHMARK, noisy(1000.0, 10.0, 2000))
    assert reason == "error"
    assert runs == 102
    s = stats(noisy(1000.0, 10.0, runs))
    assert s.err / s.mean < 0.001
    s = stats(noisy(1000.0, 10.0, runs - 1))
    assert s.err / s.mean >= 0.001


def test_device_time_budget_benchmark_and_leaderboard():
    # 10 s per call, 50 % noise: the error never gets small; mean * runs passes 50 s / 30 s
    slow = noisy(10e9, 5e9, 100)
    assert run_until_stop(BENCHMARK, slow) == (6, "budget")  # 6 * 10 s = 60 s > 50 s
    assert run_until_stop(LEADERBOARD, slow) == (4, "budget")  # 4 * 10 s = 40 s > 30 s


def test_wall_limit():
    # fast noisy calls that take 50 s of wall time each (slow input generation, say)
    assert run_until_stop(BENCHMARK, noisy(1000.0, 500.0, 100), wall_per_call_s=50.0) == (3, "wall")
    rule = rule_for("benchmark", wall_s=1000.0)
    assert run_until_stop(rule, noisy(1000.0, 500.0, 100), wall_per_call_s=50.0) == (21, "wall")


def test_capped_at_the_modes_run_count():
    very_noisy = noisy(1000.0, 900.0, 5000)
    assert run_until_stop(BENCHMARK, very_noisy) == (1000, "max-runs")
    assert run_until_stop(LEADERBOARD, very_noisy) == (100, "max-runs")


def test_fixed_count_ignores_the_error_rule_but_not_the_wall():
    rule = rule_for("benchmark", iters=7)
    assert run_until_stop(rule, [1000.0] * 20) == (7, "count")
    assert run_until_stop(rule_for("benchmark", iters=1), [1000.0]) == (1, "count")
    assert run_until_stop(rule_for("leaderboard", iters=500), [1.0] * 600) == (500, "count")
    assert run_until_stop(rule_for("benchmark", iters=50, wall_s=10.0), [1.0] * 60,
                          wall_per_call_s=4.0) == (3, "wall")


def test_zero_durations_stop_rather_than_divide_by_zero():
    assert run_until_stop(BENCHMARK, [0.0] * 5) == (3, "error")


def test_rule_round_trips_and_describes_itself():
    rule = rule_for("leaderboard", iters=None, wall_s=60.0)
    assert StopRule.from_dict(rule.to_dict()) == rule
    assert rule.describe() == (
        "stop: after at least 3 runs, once the standard error is below 0.1% of the mean, 30 s of summed "
        "time or 60 s of wall time have passed, or at 100 runs (eval.py's rule)")
    assert rule_for("benchmark", iters=5).describe() == (
        "stop: 5 timed calls per shape (--iters), fewer once 120 s have passed")
