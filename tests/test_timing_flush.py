"""bench's timed loop follows eval.py's benchmark timing: its flush size and method, its warm-up."""

from __future__ import annotations

import torch

from submitgen.evaluate import DEFAULT_FLUSH_MIB
from submitgen.evaluate.stoprule import StopRule, warmup_rule
from submitgen.evaluate.timing import make_flush, make_timer


def test_default_flush_is_eval_pys_randn_of_16000_mib_float32() -> None:
    assert DEFAULT_FLUSH_MIB * 2**20 == 16000 * 1024 * 1024 * 4


def test_flush_fills_a_fresh_randn_tensor_of_the_size_each_call(monkeypatch) -> None:
    made: list[tuple[int, torch.dtype]] = []
    real = torch.randn

    def spy(n: int, dtype: torch.dtype, device: str) -> torch.Tensor:
        made.append((n, dtype))
        return real(n, dtype=dtype, device=device)

    monkeypatch.setattr(torch, "randn", spy)
    flush = make_flush(4096, "cpu")
    assert flush is not None
    flush()
    flush()
    assert made == [(1024, torch.float32)] * 3  # the probe at set-up, then one per call


def test_no_flush_for_zero_bytes() -> None:
    assert make_flush(0, "cpu") is None


def test_warmup_rules_are_eval_pys() -> None:
    assert warmup_rule("benchmark") == StopRule(max_runs=100, budget_ns=1e8)
    assert warmup_rule("leaderboard") == StopRule(max_runs=100, budget_ns=1e7)


def test_the_warmup_run_stops_by_the_warmup_rule_and_rechecks_nothing() -> None:
    cfg = {"stop": StopRule(max_runs=7, budget_ns=1e30, rel_err=0.0).to_dict(),
           "warmup": StopRule(max_runs=4, budget_ns=1e30, rel_err=0.0).to_dict(), "recheck": True}
    generated: list[dict] = []

    def generate(spec: dict, device: str) -> int:
        generated.append(spec)
        return 0

    timer = make_timer(generate, False, "cpu", cfg, lambda o, p: {}, lambda d: None, lambda e: None)
    durations, written = timer(lambda d: d, 0, {"seed": 1}, 0, "/nonexistent", True)
    assert (len(durations), written, generated) == (4, [], [])
