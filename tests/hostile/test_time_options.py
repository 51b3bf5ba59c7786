"""Every time option of every command refuses nan, infinity and a negative number with one line
before anything runs (issue 47: `test --reference-kernels DIR --timeout nan` removed the limit).
The options are found by their click type, so a new one is covered or this test fails."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from submitgen.cli import cli

REF = Path(__file__).resolve().parent.parent / "refkernels" / "toy_add"
HEADER = ("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n\n\n"
          "def custom_kernel(data):\n    return data\n")
EVAL_TIMEOUT = "Error: --timeout must be a number of seconds above 0 and at most 86,400, got {}"
# (command, option): the arguments it runs with, the line a value in its click range gives, and
# that range (outside it: click's usage error, exit 2)
RUNS = {
    ("build", "--plan-timeout"): (["mxfp4-mm", "-o", "{tmp}/s.py"],
                                  "Error: --plan-timeout must be a positive number of seconds, got {}",
                                  "0<x<=86400"),
    ("test", "--timeout"): (["{sub}"], EVAL_TIMEOUT, "x>=1"),
    ("bench", "--timeout"): (["{sub}"], EVAL_TIMEOUT, "x>=1"),
    ("bench", "--max-time"): (["{sub}"], "Error: --max-time must be a finite number of seconds, 0 or more, "
                              "got {}", "x>=0"),
}
REFERENCE = [("test", "--timeout"), ("bench", "--timeout")]


def test_every_time_option_is_listed_here():
    found = {(name, opt) for name, command in cli.commands.items() for p in command.params
             if isinstance(p.type, click.FloatRange) for opt in p.opts if opt.startswith("--")}
    assert found == set(RUNS)


def _run(tmp_path: Path, command: str, option: str, value: str, *extra: str):
    sub = tmp_path / "sub.py"
    sub.write_text(HEADER)
    args, line, _ = RUNS[command, option]
    args = [a.format(tmp=tmp_path, sub=sub) for a in args]
    return CliRunner().invoke(cli, [command, *args, *extra, option, value]), line


@pytest.mark.parametrize(("command", "option"), list(RUNS))
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_time_that_is_not_finite_is_one_error_line(tmp_path, command, option, value):
    r, line = _run(tmp_path, command, option, value)
    bound = RUNS[command, option][2]
    if value == "-inf" or (value == "inf" and "<=" in bound):  # outside the click range
        assert r.exit_code == 2
        assert r.output.splitlines()[-1] == \
            f"Error: Invalid value for '{option}': {value} is not in the range {bound}."
    else:
        assert (r.exit_code, r.output.splitlines()) == (1, [line.format(value)])
    assert not (tmp_path / "s.py").exists()


@pytest.mark.parametrize(("command", "option"), REFERENCE)
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_with_reference_kernels_too(tmp_path, command, option, value):
    r, line = _run(tmp_path, command, option, value, "--reference-kernels", str(REF))
    assert (r.exit_code, r.output.splitlines()) == (1, [line.format(value)])
