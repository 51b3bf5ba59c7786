"""bench's timed loop follows eval.py's benchmark timing: its flush size and method, its warm-up; and
on a GPU whose memory cannot hold eval.py's flush, the default shrinks to what fits and says so
(stand-ins for the GPU's allocator and events, on the CPU)."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from submitgen.evaluate import DEFAULT_FLUSH_MIB
from submitgen.evaluate.stoprule import StopRule, warmup_rule
from submitgen.evaluate.timing import MIB, FlushDoesNotFit, fit_flush, make_flush, make_timer


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

    timer = make_timer(generate, False, "cpu", cfg, lambda *call: {}, lambda d: None)
    durations, written, flushed = timer(lambda d: d, 0, {"seed": 1}, True)
    assert (len(durations), written, generated, flushed) == (4, [], [], None)


class FakeGPU:
    """A GPU of ``capacity`` bytes for torch.randn's allocations (nothing is really allocated: a
    fill that fits returns an empty tensor, one that does not raises torch's OutOfMemoryError),
    ``mem_get_info`` reporting ``free`` of ``total``, and events that time nothing."""

    def __init__(self, capacity: int, free: int, total: int) -> None:
        self.capacity, self.free, self.total = capacity, free, total
        self.fills: list[int] = []
        self.refused: list[int] = []
        self.real_randn = torch.randn

    def randn(self, n, *args, dtype: torch.dtype | None = None, device: str = "cpu", **kw) -> torch.Tensor:
        if not isinstance(n, int) or args or kw:  # not the flush's fill: a problem's inputs
            return self.real_randn(n, *args, dtype=dtype, device=device, **kw)
        if n * 4 > self.capacity:
            self.refused.append(n * 4)
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {n * 4} bytes")
        self.fills.append(n * 4)
        return torch.empty(0, dtype=dtype)

    def mem_get_info(self, device: str) -> tuple[int, int]:
        return self.free, self.total

    def install(self, monkeypatch) -> None:
        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                pass

            def record(self) -> None:
                pass

            def elapsed_time(self, other: object) -> float:
                return 0.001  # ms

        monkeypatch.setattr(torch, "randn", self.randn)
        monkeypatch.setattr(torch.cuda, "mem_get_info", self.mem_get_info)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
        monkeypatch.setattr(torch.cuda, "Event", Event)


EVAL_PY = DEFAULT_FLUSH_MIB * MIB


def test_eval_pys_flush_is_kept_where_it_fits(monkeypatch) -> None:
    gpu = FakeGPU(capacity=80 << 30, free=100 << 30, total=141 << 30)  # an H200
    gpu.install(monkeypatch)
    flush, used, memory = fit_flush(EVAL_PY, "cuda", gpu.mem_get_info)
    assert (used, memory, gpu.fills, gpu.refused) == (EVAL_PY, None, [EVAL_PY], [])


def test_a_flush_that_does_not_fit_shrinks_to_nine_tenths_of_the_free_memory(monkeypatch) -> None:
    gpu = FakeGPU(capacity=22 << 30, free=22 << 30, total=24 << 30)  # a 24 GiB card
    gpu.install(monkeypatch)
    flush, used, memory = fit_flush(EVAL_PY, "cuda", gpu.mem_get_info)
    assert used == int((22 << 30) * 0.9) // MIB * MIB == 20275 * MIB
    assert memory == (22 << 30, 24 << 30) and gpu.refused == [EVAL_PY]
    assert flush is not None
    flush()
    assert gpu.fills == [used, used]  # the probe, then the call's fill


def test_a_shrunk_flush_halves_until_one_allocates(monkeypatch) -> None:
    gpu = FakeGPU(capacity=8 << 30, free=30 << 30, total=32 << 30)  # free memory in pieces
    gpu.install(monkeypatch)
    _, used, memory = fit_flush(EVAL_PY, "cuda", gpu.mem_get_info)
    first = int((30 << 30) * 0.9) // MIB * MIB
    assert gpu.refused == [EVAL_PY, first, first // 2 // MIB * MIB]
    assert used == first // 4 // MIB * MIB <= 8 << 30 and memory == (30 << 30, 32 << 30)


def test_no_flush_fits_is_one_error_naming_the_memory(monkeypatch) -> None:
    gpu = FakeGPU(capacity=0, free=3 << 20, total=4 << 30)
    gpu.install(monkeypatch)
    with pytest.raises(FlushDoesNotFit) as e:
        fit_flush(EVAL_PY, "cuda", gpu.mem_get_info)
    assert str(e.value) == ("no cache flush of 1 MiB or more fits in the memory of cuda (3 MiB free of "
                            "4,096 MiB); pass --flush-mib 0 to time without one")


def test_a_size_given_that_does_not_fit_fails_instead_of_shrinking(monkeypatch) -> None:
    gpu = FakeGPU(capacity=22 << 30, free=22 << 30, total=24 << 30)
    gpu.install(monkeypatch)
    cfg = {"stop": StopRule(max_runs=3, budget_ns=1e30, rel_err=0.0).to_dict(), "flush_bytes": EVAL_PY}
    timer = make_timer(lambda s, device: 0, True, "cpu", cfg, lambda *call: {}, lambda d: None)
    with pytest.raises(FlushDoesNotFit) as e:
        timer(lambda d: d, 0, {"seed": 1})
    assert str(e.value) == ("the 64000 MiB cache flush (eval.py's clear_l2_cache_large) does not fit in the "
                            "memory of cpu; pass a smaller --flush-mib")


def test_the_default_flush_shrinks_once_and_later_shapes_start_from_it(monkeypatch) -> None:
    gpu = FakeGPU(capacity=22 << 30, free=22 << 30, total=24 << 30)
    gpu.install(monkeypatch)
    cfg = {"stop": StopRule(max_runs=3, budget_ns=1e30, rel_err=0.0).to_dict(), "flush_bytes": EVAL_PY,
           "flush_fit": True}
    timer = make_timer(lambda s, device: 0, True, "cpu", cfg, lambda *call: {}, lambda d: None)
    for _ in range(2):
        durations, _, flushed = timer(lambda d: d, 0, {"seed": 1})
        assert durations == [1000.0] * 3
        assert flushed == {"flush_mib": 20275, "memory_mib": [22528, 24576]}
    assert gpu.refused == [EVAL_PY]  # the second shape did not try eval.py's size again
    assert gpu.fills == [20275 * MIB] * 8  # each shape: its probe and three calls' fills


def test_the_worker_sends_the_flush_with_the_shapes_figures(monkeypatch) -> None:
    import toy_problem

    from submitgen.evaluate.worker import make_runner

    gpu = FakeGPU(capacity=22 << 30, free=22 << 30, total=24 << 30)
    gpu.install(monkeypatch)
    events: list[dict] = []
    cfg = {"mode": "bench", "stop": StopRule(max_runs=3, budget_ns=1e30, rel_err=0.0).to_dict(),
           "flush_bytes": EVAL_PY, "flush_fit": True}
    run = make_runner(toy_problem.PROBLEM, cfg, True, "cpu", events.append)
    run(0, {"n": 8, "seed": 1}, lambda data: data[0] + data[1], None)
    bench = [e for e in events if e["event"] == "bench"]
    assert len(bench) == 1 and bench[0]["runs"] == 3
    assert (bench[0]["flush_mib"], bench[0]["memory_mib"]) == (20275, [22528, 24576])


def _stand_in_worker(events: list[dict], seen: dict):
    """_run_shapes without a worker: each shape gets the bench event in ``events`` (by position)."""
    from submitgen.evaluate import Assessment
    from submitgen.evaluate.results import Execution

    def run_shapes(prep, kind, selected, options, timeout_s, result, missing, report, progress,
                   announce=None, interpreted=False):
        seen.update(options)
        done = tuple(result(s, Assessment({"passed": True, "message": ""}, None),
                            {"event": "bench", "runs": 3, "mean_ns": 1e4, "std_ns": 10.0, "best_ns": 9e3,
                             "worst_ns": 1.1e4, **ev}) for s, ev in zip(selected, events))
        return report(done, Execution(None, True, "Stand-in GPU 24GB"))

    return run_shapes


SHRUNK = {"flush_mib": 20275, "memory_mib": [22528, 24576]}
LINE = ("bench: eval.py's 64,000 MiB cache flush does not fit in this GPU's memory (22,528 MiB free of "
        "24,576 MiB), so each timed call is flushed with 20,275 MiB instead: device times can differ from "
        "eval.py's on a GPU that holds its flush (--flush-mib N sets the size)")


def _bench(tmp_path, monkeypatch, events: list[dict], *args: str):
    from submitgen.cli import cli

    seen: dict = {}
    monkeypatch.setattr("submitgen.evaluate._run_shapes", _stand_in_worker(events, seen))
    sub = tmp_path / "s.py"
    sub.write_text("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n\n"
                   "def custom_kernel(data):\n    return data[0]\n")
    result = CliRunner().invoke(cli, ["bench", str(sub), "--shape", "m=4,n=64,k=64,seed=1",
                                      "--shape", "m=8,n=64,k=64,seed=2", *args])
    return result, seen


def test_bench_says_on_stderr_and_in_json_that_the_default_flush_was_shrunk(tmp_path, monkeypatch) -> None:
    result, seen = _bench(tmp_path, monkeypatch, [SHRUNK, SHRUNK], "--json")
    assert result.exit_code == 0, result.output
    assert (seen["flush_bytes"], seen["flush_fit"]) == (EVAL_PY, True)
    assert result.stderr.splitlines().count(LINE) == 1  # said once, not once a shape
    doc = json.loads(result.stdout)
    assert (doc["flush_mib"], doc["flush_note"]) == (64000, LINE)
    assert [s["flush_mib"] for s in doc["shapes"]] == [20275, 20275]

    result, _ = _bench(tmp_path, monkeypatch, [SHRUNK, SHRUNK])
    assert result.exit_code == 0 and LINE in result.stderr.splitlines()
    assert ("timing: device time (GPU events around each call, a randn cache flush before each iteration as "
            "eval.py, but of 20,275 MiB: eval.py's 64,000 MiB does not fit in this GPU's memory)"
            ) in result.stdout.splitlines()


def test_bench_is_quiet_about_the_flush_when_eval_pys_fits(tmp_path, monkeypatch) -> None:
    full = {"flush_mib": 64000, "memory_mib": None}
    result, seen = _bench(tmp_path, monkeypatch, [full, full], "--json")
    assert result.exit_code == 0 and "flush" not in result.stderr
    doc = json.loads(result.stdout)
    assert (doc["flush_mib"], doc["flush_note"], [s["flush_mib"] for s in doc["shapes"]]) == (
        64000, None, [64000, 64000])


def test_an_explicit_flush_mib_is_not_fitted(tmp_path, monkeypatch) -> None:
    result, seen = _bench(tmp_path, monkeypatch, [{"flush_mib": 512}] * 2, "--flush-mib", "512", "--json")
    assert result.exit_code == 0, result.output
    assert (seen["flush_bytes"], seen["flush_fit"]) == (512 * MIB, False)
    assert json.loads(result.stdout)["flush_note"] is None
