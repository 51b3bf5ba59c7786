"""`bench --mode leaderboard`: the parent reads every timed call's inputs back itself (from the
worker's memory, as it does the untimed call's), so a submission that writes into its inputs only
on timed calls and forges the worker's own after-call fingerprint there is still caught, naming
the input and the call. The protocol of those read-backs (an ``inputs`` event with regions before
each timed call, a ``timed-done`` event after it, answered with one byte) is validated like the
rest of the result pipe."""

from __future__ import annotations

import pytest

from submitgen.evaluate import format_bench_report, process, readback, run_bench
from submitgen.evaluate.check import device
from submitgen.evaluate.digest import make_fingerprint
from submitgen.evaluate.recheck import recheck_spec
from submitgen.problems import get_problem

TOY = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\nimport os\n\nimport torch\n\n"
SPEC = "n=64,seed=1"
MALFORMED = (
    "the result pipe carried a malformed event ({}): something in the submission's process wrote to it"
)
# a determined file: on a timed call only (its caller is the timed loop, checking: not eval.py's
# warm-up calls on a GPU), b written into after the
# output is computed, and the timed loop's own fingerprint (a closure cell of the function found
# through gc) replaced, once, by the clean fingerprint taken before the write; the untimed call is
# left alone, and so the worker reports every call's inputs unchanged
FORGE_TIMED = ("import gc\nimport sys\n\n\n"
               "def custom_kernel(data):\n"
               "    a, b = data\n"
               "    out = a + b\n"
               "    caller = sys._getframe(1)\n"
               "    if caller.f_code.co_name == 'time_calls' and caller.f_locals.get('checking'):\n"
               "        loop = next(f for f in gc.get_referrers(caller.f_code) if callable(f))\n"
               "        cell = dict(zip(loop.__code__.co_freevars, loop.__closure__))['fingerprint']\n"
               "        real = cell.cell_contents\n"
               "        clean = real(data)\n"
               "        b.mul_(2)\n\n"
               "        def once(d):\n"
               "            cell.cell_contents = real\n"
               "            return clean\n\n"
               "        cell.cell_contents = once\n"
               "    return out\n")

pytestmark = pytest.mark.usefixtures("toy_problems")


@pytest.fixture
def reads(monkeypatch):
    """Every read-back of the parent: (regions, digests or the ReadBackError)."""
    seen: list[tuple[list, object]] = []
    real = readback.read_regions

    def read(pid, regions, read_cuda=None):
        try:
            got = real(pid, regions, read_cuda)
        except readback.ReadBackError as e:
            seen.append((regions, e))
            raise
        seen.append((regions, got))
        return got

    monkeypatch.setattr(readback, "read_regions", read)
    return seen


def expected(calls: int) -> list[list[str]]:
    """The parent's own fingerprint of each timed call's regenerated inputs (seed + 13 a call), on
    the device the worker generates them (a GPU where there is one)."""
    p, fp = get_problem("toy-add"), make_fingerprint()
    spec = {"n": 64, "seed": 1}
    return [fp(p.generate_input(recheck_spec(spec, j), device=device()))["tensors"] for j in range(calls)]


def _bench(tmp_path, body: str, specs: tuple[str, ...] = (SPEC,)):
    sub = tmp_path / "sub.py"
    sub.write_text(TOY + body)
    return run_bench(sub, custom=specs, iters=3, mode="leaderboard", lint=False)


def test_an_honest_file_passes_with_every_timed_call_read_back_equal(tmp_path, reads):
    report = _bench(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    assert report.passed, format_bench_report(report)
    # one read a timed call, as it ends, then the untimed call's inputs with the bench event
    assert len(reads) == 4, reads
    assert all(isinstance(got, list) for _, got in reads), reads
    assert [got for _, got in reads[:3]] == expected(3)
    assert reads[3][1] == make_fingerprint()(get_problem("toy-add").generate_input(
        {"n": 64, "seed": 1}, device=device()))["tensors"]


def test_a_write_on_timed_calls_only_with_the_fingerprint_forged_is_mutated(tmp_path, reads):
    """The worker's own fingerprints say nothing changed (the forged cell), the untimed call is
    honest; the parent's read of the first timed call's inputs sees b doubled."""
    report = _bench(tmp_path, FORGE_TIMED)
    [r] = report.results
    assert r.error is None and r.correct is False, format_bench_report(report)
    assert r.check_message.endswith("; timed call 1 of 3 (seed 14): input 'b' was changed by the call "
                                    "(read back by submitgen); input 'b' was modified by custom_kernel"), \
        r.check_message
    a, b = expected(1)[0]
    assert reads[0][1][0] == a and reads[0][1][1] != b
    assert format_bench_report(report)[-1] == "FAILED: 1 of 1 shapes failed"


def test_a_timed_call_that_cannot_be_read_back_fails_the_shape(tmp_path, monkeypatch):
    real = readback.read_regions
    count = [0]

    def read(pid, regions, read_cuda=None):
        count[0] += 1
        if count[0] == 2:
            raise readback.ReadBackError("Input/output error (simulated)")
        return real(pid, regions, read_cuda)

    monkeypatch.setattr(readback, "read_regions", read)
    report = _bench(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    [r] = report.results
    assert r.error == ("timed call 2 of 3 (seed 27): the inputs could not be read back from the worker "
                       "after the call (Input/output error (simulated)), so whether custom_kernel changed "
                       "them is unknown"), format_bench_report(report)


# a timed-done event written by the submission itself: in the untimed call (no timed call's inputs
# yet), in timed call 0 for call 0 (the worker's own then comes twice), for call 1 (another call)
# and for the next shape
def _writes(cond: str, call: int, index: int = 0) -> str:
    return ("import json\nimport sys\n\n_FD = int(os.environ['SUBMITGEN_RESULT_FD'])\n\n\n"
            "def custom_kernel(data):\n"
            f"    if {cond}:\n"
            f"        event = {{'event': 'timed-done', 'index': {index}, 'call': {call}}}\n"
            "        line = json.dumps(event) + '\\n'\n"
            "        os.write(_FD, line.encode())\n"
            "    return data[0] + data[1]\n")


UNTIMED = "sys._getframe(1).f_code.co_name != 'time_calls'"
FIRST_TIMED = ("sys._getframe(1).f_code.co_name == 'time_calls' and sys._getframe(1).f_locals['checking'] "
               "and not sys._getframe(1).f_locals['durations']")


@pytest.mark.parametrize("body,fault", [
    (_writes(UNTIMED, 0), "a 'timed-done' event for timed call 0 of shape 0 with no timed call's inputs "
                          "pending"),
    (_writes(FIRST_TIMED, 0), "a 'timed-done' event for timed call 0 of shape 0 with no timed call's "
                              "inputs pending"),
    (_writes(FIRST_TIMED, 1), "a 'timed-done' event for timed call 1 of shape 0 while timed call 0 runs"),
    (_writes(FIRST_TIMED, 0, 1), "a 'timed-done' event for shape 1 while shape 0 runs"),
], ids=["untimed", "twice", "other-call", "other-shape"])
def test_a_forged_timed_done_event_is_malformed(tmp_path, body, fault):
    """Each fails the shape running as a malformed event (and a new worker runs the next shape,
    which the file's write fails too)."""
    report = _bench(tmp_path, body, (SPEC, "n=96,seed=2"))
    first = report.results[0]
    assert first.error is not None and first.error.splitlines()[0] == MALFORMED.format(fault), \
        format_bench_report(report)
    assert not report.passed and format_bench_report(report)[-1].startswith("FAILED: ")


def test_the_protocol_checks_of_timed_done(tmp_path):
    """parse_event: a timed-done needs its shape and a call number; call belongs to inputs and
    timed-done only."""
    with pytest.raises(process.Malformed, match="call"):
        process.parse_event('{"event": "timed-done", "index": 0}', 1)
    with pytest.raises(process.Malformed, match="index"):
        process.parse_event('{"event": "timed-done", "call": 0}', 1)
    with pytest.raises(process.Malformed, match="call"):
        process.parse_event('{"event": "shape-start", "index": 0, "call": 0}', 1)
    assert process.parse_event('{"event": "timed-done", "index": 0, "call": 2}', 1)["call"] == 2
