"""`submitgen bench --mode leaderboard` (the built-in harness): as the ranked run, every timed call
gets fresh inputs (seed += 13) and every output is judged in the parent. A file that is right on
the first inputs of a shape and returns that output again afterwards passes --mode benchmark (its
timed calls reuse the first inputs) and must fail --mode leaderboard."""

from __future__ import annotations

import pytest
import toy_problem
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.problems import register, unregister

HEADER = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\n\nimport torch\n\n"
HONEST = HEADER + "\ndef custom_kernel(data):\n    a, b = data\n    return a + b\n"
RIGHT_ONCE = HEADER + ("_first = {}\n\n\ndef custom_kernel(data):\n    a, b = data\n"
                       "    return _first.setdefault(tuple(a.shape), a + b)\n")


@pytest.fixture(scope="module")
def toy():
    register(toy_problem.PROBLEM)
    yield toy_problem.PROBLEM
    unregister(toy_problem.PROBLEM.name)


def bench(path, *args: str):
    return CliRunner().invoke(cli, ["bench", str(path), "--iters", "3", *args], catch_exceptions=False)


def table_row(out: list[str]) -> list[str]:
    header = out.index(next(ln for ln in out if ln.startswith("shape ")))
    return out[header + 2].split()


@pytest.mark.slow
def test_right_once_passes_benchmark_mode_and_fails_leaderboard_mode(toy, tmp_path):
    sub = tmp_path / "right_once.py"
    sub.write_text(RIGHT_ONCE)
    result = bench(sub)
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert "mode: benchmark (the first call's output checked, the timed calls reuse its inputs)" in out
    assert table_row(out)[0] == "n=4096" and table_row(out)[-1] == "ok"

    result = bench(sub, "--mode", "leaderboard")
    assert result.exit_code == 1, result.output
    out = result.output.splitlines()
    assert ("mode: leaderboard (as the ranked run: fresh inputs with seed += 13 for every timed call, "
            "every output checked)") in out
    row = table_row(out)
    assert row[:2] == ["n=4096", "3"] and row[-1] == "WRONG"
    wrong = next(ln for ln in out if ln.startswith("n=4096: wrong output: "))
    assert wrong.startswith("n=4096: wrong output: timed call 1 of 3 (seed 16): ")
    assert out[-1] == "FAILED: 1 of 1 shapes failed"


@pytest.mark.slow
def test_an_honest_file_passes_leaderboard_mode(toy, tmp_path):
    sub = tmp_path / "honest.py"
    sub.write_text(HONEST)
    result = bench(sub, "--mode", "leaderboard")
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert table_row(out)[:2] == ["n=4096", "3"] and table_row(out)[-1] == "ok"
    assert "stop: 3 timed calls per shape (--iters), fewer once 120 s have passed" in out
    assert out[-1] == "all 1 shapes passed"


@pytest.mark.slow
def test_default_stop_is_eval_py_rule(toy, tmp_path):
    sub = tmp_path / "honest.py"
    sub.write_text(HONEST)
    result = CliRunner().invoke(cli, ["bench", str(sub), "--mode", "leaderboard"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert ("stop: after at least 3 runs, once the standard error is below 0.1% of the mean, 30 s of "
            "summed time or 120 s of wall time have passed, or at 100 runs (eval.py's rule)") in out
    runs = int(table_row(out)[1])
    assert 3 <= runs <= 100


# writes into b from the second call on (a timed call): the output stays right
WRITES_LATER = HEADER + ("_calls = [0]\n\n\ndef custom_kernel(data):\n    a, b = data\n    out = a + b\n"
                         "    _calls[0] += 1\n    if _calls[0] > 1:\n        b.zero_()\n    return out\n")


@pytest.mark.slow
def test_a_write_into_a_timed_calls_inputs_fails_leaderboard_mode(toy, tmp_path):
    sub = tmp_path / "writes_later.py"
    sub.write_text(WRITES_LATER)
    result = bench(sub, "--mode", "leaderboard")
    assert result.exit_code == 1, result.output
    out = result.stdout.splitlines()
    row = table_row(out)
    assert row[:2] == ["n=4096", "3"] and row[-1] == "WRONG"
    wrong = next(ln for ln in out if ln.startswith("n=4096: wrong output: "))
    assert wrong.endswith("; input 'b' was modified by custom_kernel")
    assert out[-1] == "FAILED: 1 of 1 shapes failed"
