"""`submitgen test` is not broken by the submission it runs: a malformed line on the result pipe
fails the shape, not the run, bad options are refused with one line, and what the submission leaves
running is ended with its worker. (A file that forges its own verdict is out of scope:
docs/evaluate.md, "Threat model".)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.errors import EvaluateError
from submitgen.evaluate import run_test
from submitgen.evaluate.fmt import format_test_report
from submitgen.problems import get_problem

TOY = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\nimport os\n\nimport torch\n\n"
SMALL = ("n=64,seed=1",)
TWO = ("n=64,seed=1", "n=96,seed=2")
MM_HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n"
MALFORMED = (
    "the result pipe carried a malformed event ({}): something in the submission's process wrote to it"
)


pytestmark = pytest.mark.usefixtures("toy_problems")


def _file(tmp_path: Path, body: str, header: str = TOY) -> Path:
    path = tmp_path / "sub.py"
    path.write_text(header + body)
    return path


def _first_lines(report) -> list[str | None]:
    return [r.error.splitlines()[0] if r.error else None for r in report.results]


@pytest.mark.slow
@pytest.mark.parametrize("line,why", [
    (b"not json", "not JSON: 'not json'"),
    (b"[1, 2]", "not an event: '[1, 2]'"),
    (b'{"event": "output", "index": 99}', "'output' event with index 99 (this worker runs 1 shapes)"),
])
def test_malformed_events_fail_the_shape_not_the_run(tmp_path, line, why):
    sub = _file(tmp_path, (
        "def custom_kernel(data):\n"
        f"    os.write(int(os.environ['SUBMITGEN_RESULT_FD']), {line!r} + b'\\n')\n"
        "    return data[0] + data[1]\n"))
    report = run_test(sub, custom=SMALL)
    assert _first_lines(report) == [MALFORMED.format(why)]


@pytest.mark.slow
def test_a_closed_result_pipe_reads_as_the_submission_dying(tmp_path):
    sub = _file(tmp_path, "os.close(int(os.environ['SUBMITGEN_RESULT_FD']))\n\n\n"
                          "def custom_kernel(data):\n    return data[0] + data[1]\n")
    report = run_test(sub, custom=TWO)
    died = ("the submission closed or replaced submitgen's result pipe, so its process could not report: "
            "treated as the submission dying")
    assert _first_lines(report) == [died, died]


@pytest.mark.slow
def test_what_the_submission_leaves_running_ends_with_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    sub = _file(tmp_path, (
        "import threading\nimport time\n\n"
        "_PID = os.fork()\n"
        "if _PID == 0:\n    time.sleep(600)\n    os._exit(0)\n"
        f"with open({str(pidfile)!r}, 'w') as _f:\n    _f.write(str(_PID))\n"
        "threading.Thread(target=time.sleep, args=(600,)).start()\n\n\n"
        "def custom_kernel(data):\n    return data[0] + data[1]\n"))
    start = time.monotonic()
    report = run_test(sub, custom=TWO, timeout_s=400)
    assert report.passed, format_test_report(report)
    assert time.monotonic() - start < 200  # not the 400 s timeout, nor the 600 s sleeps
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 60  # a hang catcher: the loop ends as soon as it holds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            state = "gone"
        if state in ("gone", "Z", "X"):
            break
        time.sleep(0.2)
    assert state in ("gone", "Z", "X"), f"the submission's child {pid} is still running ({state})"


@pytest.mark.slow
def test_inputs_changed_by_custom_kernel_fail_where_the_evaluator_does_not_clone(tmp_path):
    header = TOY.replace("amd-toy-add", "amd-toy-noclone")
    sub = _file(tmp_path, "def custom_kernel(data):\n    a, b = data\n    out = a + b\n    a.zero_()\n"
                          "    return out\n", header)
    report = run_test(sub, custom=SMALL)
    [r] = report.results
    assert not r.passed and r.error is None and r.mutated == ("a",) and r.figures.mismatches == 0
    assert r.summary().startswith("FAIL, max abs err 0, mismatches 0/64 (0.000%), rel L2 err 0, "
                                  "input 'a' was modified by custom_kernel")
    text = format_test_report(report)
    assert ("n=64: input 'a' was modified by custom_kernel (this leaderboard's evaluator passes the inputs "
            "uncloned, so its reference would read the changed tensors): write results into a fresh tensor "
            "instead") in text
    assert report.lint_warnings == (
        f"{sub}:10: warning: input-write [eval.py]: custom_kernel() writes into its input 'a' (calls the "
        f"in-place "
        "zero_() on it): this leaderboard's evaluator passes the inputs without cloning them, and its "
        "reference then reads the changed tensors (fix: write results into a fresh tensor "
        "(torch.empty_like) and leave the inputs as they are)",)
    assert f"lint warning: {report.lint_warnings[0]}" in text


@pytest.mark.slow
def test_wrong_dtype_fails_mxfp4_mm(tmp_path):
    fallback = get_problem("mxfp4-mm").fallback_source
    sub = _file(tmp_path, fallback + "\n\ndef custom_kernel(data):\n    return _sg_fallback(data).float()\n",
                MM_HEADER)
    report = run_test(sub, custom=("m=8,n=256,k=512,seed=3",))
    [r] = report.results
    assert not r.passed and r.message == "DTYPE MISMATCH: expected torch.bfloat16, got torch.float32"


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    "args,line",
    [
        (("--shape", "n=abc"), "Error: shape 'n=abc': n must be an integer, got 'abc'"),
        (
            ("--shapes", "test:1-0"),
            "Error: --shapes 'test:1-0': the range '1-0' is empty (write the lower index first)",
        ),
        (("--shapes", "test:,"), "Error: --shapes 'test:,' selects no shapes"),
        (("--shape", "n=-4"), "Error: shape {'n': -4, 'seed': 1}: toy-add: need n > 0, got n=-4"),
    ],
)
def test_bad_options_are_one_error_line(tmp_path, args, line):
    sub = _file(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    result = _cli("test", str(sub), *args)
    assert result.exit_code == 1
    assert result.output.splitlines() == [line]


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ("--shape", "m=abc,n=256,k=512"),
            "Error: shape 'm=abc,n=256,k=512': m must be an integer, got 'abc'",
        ),
        (
            ("--shapes", "test:3-0"),
            "Error: --shapes 'test:3-0': the range '3-0' is empty (write the lower index first)",
        ),
        (
            ("--shape", "m=8,n=256,k=96"),
            "Error: shape {'m': 8, 'n': 256, 'k': 96, 'seed': 1}: mxfp4-mm: need m, n, "
            "k > 0, k % 64 == 0 and n % 16 == 0, got m=8 n=256 k=96",
        ),
    ],
)
def test_bad_mxfp4_mm_selections_are_one_error_line(tmp_path, args, line):
    sub = _file(tmp_path, "import torch\n\n\ndef custom_kernel(data):\n    return data[0]\n", MM_HEADER)
    result = _cli("test", str(sub), *args)
    assert result.exit_code == 1
    assert result.output.splitlines() == [line]


def test_timeout_is_checked_before_anything_runs(tmp_path):
    sub = _file(tmp_path, "def custom_kernel(data):\n    return data[0] + data[1]\n")
    with pytest.raises(EvaluateError, match=r"^--timeout must be a number of seconds above 0 and at most "
                                            r"86,400, got 1e\+300$"):
        run_test(sub, timeout_s=1e300)
