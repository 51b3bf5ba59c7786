"""Deep and odd files: lint reads them without a traceback, and a file nested past what Python's
parser takes is a ``syntax`` finding, as it is an import failure for the evaluator."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from submitgen.errors import LintError
from submitgen.lint import lint_file, lint_report

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
KERNEL = "\n\ndef custom_kernel(data):\n    return data\n"
TOO_DEEP = ("sub.py:1: syntax [eval.py]: the file nests expressions or blocks too deeply for Python's parser "
            "({why}) (fix: split the deep expression into several statements)")


def _lint(body: str):
    return lint_report(HEADER + body + KERNEL)


@pytest.mark.parametrize("body, why", [
    ("x = " + " + ".join(['"a"'] * 3000) + "\n", "RecursionError: maximum recursion depth exceeded during "
     "ast construction"),
    ("x = " + "-" * 5000 + "1\n", "RecursionError: maximum recursion depth exceeded during ast construction"),
    ("x = " + "-" * 200_000 + "1\n", "MemoryError: the parser ran out of room"),
], ids=["3000-term-concat", "5000-deep-unary", "200000-deep-unary"])
def test_too_deep_for_the_parser_is_a_syntax_error(body, why):
    # KernelGuard's own parse gives up too: kernelbot refuses the file
    syntax, guard = _lint(body).errors
    assert syntax.render("sub.py") == TOO_DEEP.format(why=why)
    assert (guard.rule, guard.source) == ("kernelguard", "kernelguard")


def test_1100_elifs_bind_custom_kernel_in_the_last():
    body = "x = 3\nif x == 0:\n    y = 0\n" + "".join(
        f"elif x == {i}:\n    y = {i}\n" for i in range(1, 1101)
    )
    body += "else:\n    def custom_kernel(data):\n        return data\n"
    # lint's own rules find custom_kernel; KernelGuard's walk of 1,100 nested ifs passes its recursion
    # limit, and kernelbot refuses a file whose pre-check fails
    assert [(f.rule, f.source) for f in lint_report(HEADER + body).errors] == [("kernelguard", "kernelguard")]


def test_non_regular_files_are_refused(tmp_path: Path):
    fifo = tmp_path / "sub.py"
    os.mkfifo(fifo)
    with pytest.raises(LintError) as e:
        lint_file(fifo)
    assert str(e.value) == f"cannot read submission {str(fifo)!r}: not a regular file"
    with pytest.raises(LintError) as e:
        lint_file("/dev/zero")
    assert str(e.value) == "cannot read submission '/dev/zero': not a regular file"
