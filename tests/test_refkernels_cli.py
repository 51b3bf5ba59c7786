"""`submitgen test|bench FILE --reference-kernels DIR`: the problem folder's own eval.py runs, and
its `key: value` lines fill the table. The folder is tests/refkernels/toy_add (our own harness that
speaks eval.py's protocol on a CPU; see its README)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli

REPO = Path(__file__).resolve().parent.parent
REF = Path(__file__).parent / "refkernels"
TOY = REF / "toy_add"
HEADER = "#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n\n"
GOOD = HEADER + "def custom_kernel(data):\n    a, b = data\n    return [x + y for x, y in zip(a, b)]\n"
HARNESS = ("harness: eval.py of {dir} (reference-kernels), mode {mode}: its own inputs, reference, checks "
           "and timing")
ROW = re.compile(r"^(n=\d+ seed=\d+) +(\d+) +((?:[\d.]+ (?:ns|us|ms|s) +){5})(pass|FAIL|not run)$")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def submission(tmp_path: Path, body: str, name: str = "sub.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def reference():
    spec = importlib.util.spec_from_file_location("toy_reference", TOY / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_right_file_passes_eval_py_tests(tmp_path):
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    result = run("test", str(sub), "--reference-kernels", str(TOY))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"amd-mxfp4-mm: {sub}",
        HARNESS.format(dir=TOY, mode="test"),
        "shape         result",
        "------------  ------",
        "n=64 seed=1   pass",
        "n=200 seed=2  pass",
        "eval.py: check pass (exit code 0)",
        "all 2 shapes passed",
    ]


def test_a_wrong_file_shows_eval_py_error_text(tmp_path):
    sub = submission(tmp_path, "def custom_kernel(data):\n    a, b = data\n"
                               "    return [x - y for x, y in zip(a, b)]\n")
    result = run("test", str(sub), "--reference-kernels", str(TOY))
    assert result.exit_code == 1
    ref = reference()
    details = []
    for n, seed in ((64, 1), (200, 2)):
        a, b = ref.generate_input(n, seed)
        got, want = [x - y for x, y in zip(a, b)], ref.ref_kernel((a, b))
        bad = [i for i in range(n) if abs(got[i] - want[i]) > 1e-6]
        details += [f"n={n} seed={seed}: mismatch found! {len(bad)} of {n} elements differ",
                    f"  first at index {bad[0]}: {got[bad[0]]!r} against {want[bad[0]]!r}"]
    assert result.output.splitlines() == [
        f"amd-mxfp4-mm: {sub}",
        HARNESS.format(dir=TOY, mode="test"),
        "shape         result",
        "------------  ------",
        "n=64 seed=1   FAIL",
        "n=200 seed=2  FAIL",
        *details,
        "eval.py: check fail (exit code 112)",
        "FAILED: 2 of 2 shapes failed",
    ]


def test_benchmark_mode_fills_the_table_with_eval_py_figures(tmp_path):
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    result = run("test", str(sub), "--reference-kernels", str(TOY), "--mode", "benchmark")
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[:2] == [f"amd-mxfp4-mm: {sub}", HARNESS.format(dir=TOY, mode="benchmark")]
    assert out[2].split() == ["shape", "runs", "mean", "std", "err", "best", "worst", "result"]
    assert set(out[3]) == {"-", " "}
    rows = [ROW.match(ln) for ln in out[4:6]]
    assert [m.group(1) for m in rows] == ["n=1000 seed=3", "n=4000 seed=4"], out
    assert all(3 <= int(m.group(2)) <= 1000 and m.group(4) == "pass" for m in rows)
    assert re.fullmatch(r"geometric mean of the means: [\d.]+ (ns|us|ms|s) \(eval.py's timing\)", out[6])
    assert out[7:] == ["eval.py: check pass (exit code 0)", "all 2 shapes passed"]


def _teed_folder(tmp_path: Path) -> Path:
    """toy_add with ``config.main`` the tee (tests/refkernels/tee_eval.py) in front of eval.py."""
    import shutil

    root = tmp_path / "set"
    (root / "toy_add").mkdir(parents=True)
    for name in ("eval.py", "utils.py", "tee_eval.py"):
        shutil.copy(REF / name, root / name)
    for name in ("reference.py", "task.py"):
        shutil.copy(TOY / name, root / "toy_add" / name)
    line = '  - {"name": "eval.py", "source": "../eval.py"}'
    tee = '  - {"name": "tee_eval.py", "source": "../tee_eval.py"}'
    task = (TOY / "task.yml").read_text().replace(line, f"{line}\n{tee}")
    (root / "toy_add" / "task.yml").write_text(task.replace('main: "eval.py"', 'main: "tee_eval.py"'))
    return root / "toy_add"


@pytest.mark.parametrize("command", [("test", "--mode", "benchmark"), ("bench",)])
def test_the_table_is_eval_pys_own_lines_of_the_same_run(tmp_path, monkeypatch, command):
    """Every row holds the figures eval.py wrote in that run (runs exactly; mean, std, err, best and
    worst as format_ns prints them), in its order, and the geomean is theirs."""
    import math

    from submitgen.evaluate.popcorn import read_result
    from submitgen.evaluate.results import format_ns

    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    tee = tmp_path / "tee.txt"
    monkeypatch.setenv("TEE_FILE", str(tee))
    folder = _teed_folder(tmp_path)
    result = run(command[0], str(sub), "--reference-kernels", str(folder), *command[1:])
    assert result.exit_code == 0, result.output
    own = read_result(tee.read_text(), "benchmark")
    assert own.check == "pass" and own.count == 2
    rows = []
    for case, line in zip(own.cases, ("n: 1000; seed: 3", "n: 4000; seed: 4")):
        s = case.stats
        assert case.spec == line
        rows.append([line.replace(": ", "=").replace(";", ""), str(s.runs),
                     *(format_ns(x) for x in (s.mean, s.std, s.err, s.best, s.worst)), "pass"])
    out = result.output.splitlines()
    assert [[c.strip() for c in ln.split("  ") if c.strip()] for ln in out[4:6]] == rows
    geo = math.exp(sum(math.log(c.stats.mean) for c in own.cases) / 2)
    assert out[6] == f"geometric mean of the means: {format_ns(geo)} (eval.py's timing)"
    assert out[7:] == ["eval.py: check pass (exit code 0)", "all 2 shapes passed"]


RIGHT_ONCE = ("_first = {}\n\n\ndef custom_kernel(data):\n    a, b = data\n"
              "    # right on the first inputs of a shape, then that output again: wrong on new inputs\n"
              "    return _first.setdefault(len(a), [x + y for x, y in zip(a, b)])\n")


def test_leaderboard_mode_rechecks_every_timed_call(tmp_path):
    sub = submission(tmp_path, RIGHT_ONCE)
    result = run("bench", str(sub), "--reference-kernels", str(TOY), "--mode", "benchmark")
    assert result.exit_code == 0, result.output  # benchmark mode checks only the first call
    result = run("bench", str(sub), "--reference-kernels", str(TOY), "--mode", "leaderboard")
    assert result.exit_code == 1
    out = result.output.splitlines()
    assert out[1] == HARNESS.format(dir=TOY, mode="leaderboard")
    assert out[4].split()[:3] == ["n=1000", "seed=3", "0"] and out[4].endswith("  FAIL")
    assert out[5].split()[:3] == ["n=4000", "seed=4", "0"] and out[5].endswith("  not run")
    assert out[6].startswith("n=1000 seed=3: mismatch found! ")
    assert out[-2:] == ["eval.py: check fail (exit code 0)", "FAILED: 1 of 2 shapes failed, 1 not run"]


def test_the_reference_that_cannot_run_here_is_said_plainly_with_exit_3(tmp_path):
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    folder = REF / "needs_rocm"
    for command in ("test", "bench"):
        result = run(command, str(sub), "--reference-kernels", str(folder))
        assert result.exit_code == 3
        mode = "test" if command == "test" else "benchmark"
        assert result.output.splitlines() == [
            f"amd-mxfp4-mm: {sub}",
            HARNESS.format(dir=folder, mode=mode),
            "the reference cannot run here: importing reference.py failed: ModuleNotFoundError: No module "
            "named '_submitgen_test_rocm_only_module'",
            "  at reference.py line 5: import _submitgen_test_rocm_only_module  # noqa: F401",
            "nothing was run; no verdict (exit code 3)",
        ]


def test_a_submission_that_crashes_eval_py_shows_its_last_output(tmp_path):
    """... with its terminal escapes shown as text (issue 47: an OSC that sets the window title)."""
    sub = submission(tmp_path, "def custom_kernel(data):\n"
                               "    raise ValueError('no kernel \\x1b]0;pwned\\x07for this shape')\n")
    result = run("test", str(sub), "--reference-kernels", str(TOY))
    assert result.exit_code == 1
    out = result.output.splitlines()
    assert out[2:6] == ["shape         result", "------------  -------", "n=64 seed=1   not run",
                        "n=200 seed=2  not run"]
    assert out[6] == "eval.py ended with exit code 1 before its verdict"
    assert out[7] == "its last output:"
    assert out[-3] == "  ValueError: no kernel \\x1b]0;pwned\\x07for this shape"
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert out[-2:] == ["eval.py: check (none) (exit code 1)", "FAILED: 2 of 2 shapes not run"]


@pytest.mark.slow
def test_eval_py_past_its_limit_is_stopped(tmp_path):
    sub = submission(tmp_path, "import time\n\n\ndef custom_kernel(data):\n    time.sleep(120)\n")
    result = run("test", str(sub), "--reference-kernels", str(TOY), "--timeout", "8")
    assert result.exit_code == 1
    out = result.output.splitlines()
    assert out[2:] == ["shape         result", "------------  -------", "n=64 seed=1   not run",
                       "n=200 seed=2  not run", "eval.py ran past its limit of 8 s and was stopped",
                       "eval.py: check (none) (stopped)", "FAILED: 2 of 2 shapes not run"]


def test_seed_reaches_eval_py_as_popcorn_seed(tmp_path):
    sub = submission(tmp_path, "import os\n\n\ndef custom_kernel(data):\n    a, b = data\n"
                               "    assert os.environ['POPCORN_SEED'] == '7'\n"
                               "    return [x + y for x, y in zip(a, b)]\n")
    assert run("test", str(sub), "--reference-kernels", str(TOY), "--seed", "7").exit_code == 0
    assert run("test", str(sub), "--reference-kernels", str(TOY)).exit_code == 1


@pytest.mark.parametrize(("args", "message"), [
    (("test", "--reference-kernels", str(TOY), "--shapes", "test:0"),
     "Error: --shapes do(es) not apply with --reference-kernels: eval.py runs task.yml's cases of the "
     "mode, with its own timing"),
    (("bench", "--reference-kernels", str(TOY), "--iters", "3", "--flush-mib", "0"),
     "Error: --iters, --flush-mib do(es) not apply with --reference-kernels: eval.py runs task.yml's "
     "cases of the mode, with its own timing"),
    (("test", "--mode", "benchmark"),
     "Error: test --mode benchmark needs --reference-kernels DIR; the built-in harness times with "
     "`submitgen bench`"),
    (("test", "--mode", "leaderboard"),
     "Error: test --mode leaderboard needs --reference-kernels DIR; the built-in harness times with "
     "`submitgen bench --mode leaderboard`"),
    (("bench", "--mode", "test"),
     "Error: bench --mode test needs --reference-kernels DIR; the built-in harness checks with "
     "`submitgen test`"),
])
def test_options_that_do_not_apply_are_refused(tmp_path, args, message):
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    result = run(args[0], str(sub), *args[1:])
    assert result.exit_code == 1
    assert result.output.splitlines() == [message]


def test_progress_goes_to_stderr_on_a_terminal_only(tmp_path):
    import pty

    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "submitgen", "test", str(sub), "--reference-kernels",
                               str(TOY)], stdout=subprocess.PIPE, stderr=secondary, env=env, timeout=300)
        os.close(secondary)
        secondary = -1
        err = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert proc.returncode == 0
    lines = err.decode().replace("\r\n", "\n").splitlines()
    assert [re.sub(r"\(\d+ s\)$", "(N s)", ln) for ln in lines] == [
        "[1/2] n=64 seed=1: pass (N s)", "[2/2] n=200 seed=2: pass (N s)"]
    assert b"[1/2]" not in proc.stdout and proc.stdout.decode().splitlines()[-1] == "all 2 shapes passed"


def test_a_folder_of_another_leaderboard_is_refused(tmp_path):
    import shutil

    folder = tmp_path / "round" / "toy_add"
    shutil.copytree(TOY, folder)
    (tmp_path / "acme.yaml").write_text("problems:\n  - directory: round/toy_add\n    name: amd-mixed-mla\n"
                                        "    gpus:\n      - MI355X\n")
    sub = tmp_path / "good.py"
    sub.write_text(GOOD)
    result = run("test", str(sub), "--reference-kernels", str(folder))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {sub} is for amd-mxfp4-mm (its #!POPCORN leaderboard line, or --problem), but the round "
        f"file names {folder} as amd-mixed-mla's folder: pass amd-mxfp4-mm's folder"]
