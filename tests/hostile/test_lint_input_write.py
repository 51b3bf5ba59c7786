"""input-write: for a problem whose evaluator passes the inputs uncloned, lint warns about visible
writes into them; the file still passes, and problems that clone get no such warning."""

from __future__ import annotations

import pytest
import toy_noclone_problem

from submitgen.lint import lint_report
from submitgen.problems import register, unregister

HEADER = "#!POPCORN leaderboard amd-toy-noclone\n#!POPCORN gpu MI355X\nimport torch\n\n\n"
FIX = "write results into a fresh tensor (torch.empty_like) and leave the inputs as they are"


@pytest.fixture(autouse=True)
def noclone():
    register(toy_noclone_problem.PROBLEM)
    yield
    unregister("toy-noclone")


def _msg(name: str, how: str, fn: str = "custom_kernel") -> str:
    return (f"{fn}() writes into its input '{name}' ({how}): this leaderboard's evaluator passes the "
            "inputs without cloning them, and its reference then reads the changed tensors")


def test_each_kind_of_visible_write_is_warned():
    body = ("def custom_kernel(data):\n"
            "    a, b = data\n"
            "    a.add_(1)\n"
            "    b[0] = 2\n"
            "    flat = a.view(-1)\n"
            "    flat.zero_()\n"
            "    torch.mul(a, 2, out=b)\n"
            "    a += b\n"
            "    data[0][1:] = 0\n"
            "    out = torch.empty_like(a)\n"
            "    out.copy_(a)\n"
            "    return out\n")
    report = lint_report(HEADER + body)
    assert report.errors == ()
    assert [(w.rule, w.line, w.message, w.fix) for w in report.warnings] == [
        ("input-write", 8, _msg("a", "calls the in-place add_() on it"), FIX),
        ("input-write", 9, _msg("b", "assigns into a slice of it"), FIX),
        ("input-write", 11, _msg("flat", "calls the in-place zero_() on it"), FIX),
        ("input-write", 12, _msg("b", "passes it as out= of torch.mul()"), FIX),
        ("input-write", 13, _msg("a", "updates it in place with an augmented assignment"), FIX),
        ("input-write", 14, _msg("data", "assigns into a slice of it"), FIX),
    ]
    assert (
        report.warnings[0]
        .render("sub.py")
        .startswith("sub.py:8: warning: input-write [eval.py]: custom_kernel() writes")
    )


def test_helpers_taking_data_are_checked_too():
    body = ("def _run(data):\n    x = data[0]\n    x.mul_(2)\n    return x\n\n\n"
            "def custom_kernel(data):\n    return _run(data)\n")
    [w] = lint_report(HEADER + body).warnings
    assert (w.line, w.message) == (8, _msg("x", "calls the in-place mul_() on it", "_run"))


def test_fresh_outputs_and_cloning_problems_are_not_warned():
    clean = ("def custom_kernel(data):\n    a, b = data\n    out = torch.empty_like(a)\n"
             "    torch.add(a, b, out=out)\n    out.mul_(1)\n    return out\n")
    assert lint_report(HEADER + clean).warnings == ()
    writes = "def custom_kernel(data):\n    data[0].add_(1)\n    return data[0]\n"
    mm = HEADER.replace("amd-toy-noclone", "amd-mxfp4-mm")
    assert lint_report(mm + writes).warnings == ()
    assert len(lint_report(HEADER + writes).warnings) == 1


def test_storing_the_inputs_in_a_container_does_not_make_it_an_input():
    """The emitted launcher remembers the last input tuple in a list (``_last[0] = data``) and
    then writes the list's other slot: that is no write into the inputs. Unpacking still binds."""
    body = ("def custom_kernel(data, _last=[None, None]):\n"
            "    _last[0] = data\n"
            "    _last[1] = None\n"
            "    box = {}\n"
            "    box['in'] = data\n"
            "    box['n'] = 1\n"
            "    [a, *rest] = data\n"
            "    rest[0][0] = 1\n"
            "    return a\n")
    assert [(w.line, w.message) for w in lint_report(HEADER + body).warnings] == [
        (13, _msg("rest", "assigns into a slice of it")),
    ]


# The default moe-mxfp4 build has no input-write warning: tests/test_rebuild_moe.py, on its build.
