"""Deep and large files: lint reads them without RecursionError or MemoryError, in time linear in
their size, and past the parser's own bound says so as a finding."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from submitgen.errors import LintError
from submitgen.lint import lint_file, lint_report

HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
KERNEL = "\n\ndef custom_kernel(data):\n    return data\n"
NESTING = ("nesting", 3, "an expression nests deeper than Python's default recursion limit (1000): this "
           "Python cannot compile the file as it stands (RecursionError), so the evaluator may fail to "
           "import it")


def _lint(body: str):
    return lint_report(HEADER + body + KERNEL)


@pytest.mark.parametrize("body", [
    "x = " + " + ".join(['"a"'] * 3000) + "\n",
    "x = " + "-" * 5000 + "1\n",
], ids=["3000-term-concat", "5000-deep-unary"])
def test_deep_expressions_are_read_with_a_warning(body):
    report = _lint(body)
    # KernelGuard's own parse gives up at the default recursion limit: kernelbot refuses the file
    assert [(f.rule, f.source) for f in report.errors] == [("kernelguard", "kernelguard")]
    [w] = report.warnings
    assert (w.rule, w.line, w.message) == (NESTING[0], 1, NESTING[2])


def test_deep_chain_still_gets_its_rules_checked():
    body = "import base64\ns = base64.b64decode(b'eD0x')\nexec(s + " + " + ".join(['"a"'] * 3000) + ")\n"
    report = _lint(body)
    assert [(f.rule, f.line) for f in report.warnings if f.rule != "nesting"] == [("exec-decoded", 5)]


def test_1100_elifs_bind_custom_kernel_in_the_last():
    body = "x = 3\nif x == 0:\n    y = 0\n" + "".join(
        f"elif x == {i}:\n    y = {i}\n" for i in range(1, 1101)
    )
    body += "else:\n    def custom_kernel(data):\n        return data\n"
    # lint's own rules find custom_kernel; KernelGuard's walk of 1,100 nested ifs passes its recursion
    # limit, and kernelbot refuses a file whose pre-check fails
    assert [(f.rule, f.source) for f in lint_report(HEADER + body).errors] == [("kernelguard", "kernelguard")]


def test_990_long_attribute_chain_in_a_sink():
    chain = "a" + ".b" * 990
    report = _lint(f"exec({chain})\n")
    [f] = report.warnings
    assert (f.rule, f.line, f.source) == ("exec-dynamic", 3, "policy")
    assert f.message == ("exec() of a computed argument: the checker cannot tell it from decoded code, and "
                         "kernelguard records it as DYNAMIC_EXECUTION")
    report = _lint(f"x = {chain}.c.d\n{chain}(x)\n")
    assert [f.rule for f in report.errors] == ["kernelguard"]  # its parse's recursion limit: refused


def test_past_the_parsers_bound_is_a_finding():
    f, guard = _lint("x = " + "-" * 200_000 + "1\n").errors
    assert guard.rule == "kernelguard"
    assert f.render("sub.py") == (
        "sub.py:1: syntax [eval.py]: the file nests expressions or blocks too deeply for Python's parser "
        "(MemoryError: the parser ran out of room) (fix: split the deep "
        "expression into several statements)")


def test_taint_propagation_is_linear():
    """x_i = x_(i+1) + 1 with the decoder last: a fixed-point iteration needs one round per name.
    4,000 names took minutes before; linear work is well under a second of CPU."""
    lines = [f"x{i} = x{i + 1} + 1\n" for i in range(12_000)]
    body = "import base64\n" + "".join(lines) + "x12000 = base64.b64decode(b'eD0x')\nexec(x0)\n"
    start = time.process_time()
    report = _lint(body)
    spent = time.process_time() - start
    assert [f.line for f in report.warnings if f.rule == "exec-decoded"] == [12_005]
    assert spent < 20, f"lint of {len(body):,} bytes took {spent:.1f} s of CPU"


def test_non_regular_files_are_refused(tmp_path: Path):
    fifo = tmp_path / "sub.py"
    os.mkfifo(fifo)
    with pytest.raises(LintError) as e:
        lint_file(fifo)
    assert str(e.value) == f"cannot read submission {str(fifo)!r}: not a regular file"
    with pytest.raises(LintError) as e:
        lint_file("/dev/zero")
    assert str(e.value) == "cannot read submission '/dev/zero': not a regular file"


def _built_lines(report) -> list[int]:
    return [f.line for f in report.warnings if f.rule == "banned-word"]


def test_folding_follows_12000_names_without_recursion():
    """s_i = s_(i-1) + '' down a chain of names: the fold runs on a stack of its own."""
    lines = ["s0 = chr(83)\n"] + [f"s{i} = s{i - 1} + ''\n" for i in range(1, 12_000)]
    body = "".join(lines) + "t = s11999 + 'tream'\n"
    start = time.process_time()
    report = _lint(body)
    spent = time.process_time() - start
    assert _built_lines(report) == [12_003]
    assert spent < 20, f"lint took {spent:.1f} s of CPU"


def test_folding_a_3000_term_chain_of_chr():
    body = "x = " + " + ".join(["'a'"] * 3000) + " + chr(83) + 'tream'\n"
    report = _lint(body)
    assert _built_lines(report) == [3]
    assert [w.rule for w in report.warnings] == ["nesting", "banned-word"]


@pytest.mark.parametrize("expr", [
    "'a' * 10**9", "'ab' * 999_999_999", "'%0999999999d' % 1", "'%*d' % (999999999, 1)",
    "'{:>999999999}'.format('a')", "f\"{'a':>999999999}\"", "''.join(map(chr, range(10**12)))",
    "'{0.__class__}'.format('a')", "x = x + 'a'", "(1 << 4000) * 'a'",
], ids=["repeat", "repeat2", "percent-width", "percent-star", "format-width", "fstring-width", "range",
        "format-attr", "self-reference", "big-int"])
def test_folding_refuses_what_would_blow_up(expr):
    report = _lint(f"y = {expr}\n")
    assert report.errors == () and report.warnings == ()


def test_folding_stops_at_its_budget_and_says_so():
    body = "big = 'a' * 1_000_000\n" + "".join(f"y{i} = big.upper()\n" for i in range(20))
    report = _lint(body + "z = chr(83) + 'tream'\n")
    assert report.errors == ()
    [w] = report.warnings
    assert (w.rule, w.line) == ("banned-word", 10)
    assert w.message == ("the file's constant expressions make more than 8,000,000 characters: those "
                         "from here on were not checked for words built from pieces")
