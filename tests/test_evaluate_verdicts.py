"""What `submitgen test` and `bench` say and exit with, through the CLI: the fallback-only and dry-run
verdicts, --require-kernel, the leaderboard's layout (reference.py, utils.py, a private
TORCH_EXTENSIONS_DIR, the compile pass), a missing module reported once with exit code 3, the
user's frames in tracebacks and each distinct error once, the plan said up front, and a fallback
not timed on a CPU unless --force."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import toy_problem
from click.testing import CliRunner
from conftest import build_stub

from submitgen.cli import cli
from submitgen.evaluate.results import EXIT_CANNOT_RUN
from submitgen.problems import register, unregister

TOY = "#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\nimport os\n\nimport torch\n\n"
ONE = ("--shape", "n=64,seed=1")
TWO = ("--shape", "n=64,seed=1", "--shape", "n=96,seed=2")
FALLBACK = (TOY + "SUBMITGEN_BACKEND = 'fallback'\n\n\n"
            "def custom_kernel(data):\n    return data[0] + data[1]\n")
FALLBACK_PASSED = "kernel not run: fallback only (the pure-torch fallback passed all 1 shapes)"


@pytest.fixture(autouse=True, scope="module")
def toy():
    register(toy_problem.PROBLEM)
    yield
    unregister("toy-add")


@pytest.fixture(autouse=True)
def no_stand_in(monkeypatch):
    for name in ("SUBMITGEN_HIP_LIBRARY", "SUBMITGEN_CUDA_LIBRARY", "SUBMITGEN_HSA_LIBRARY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def terminal(monkeypatch):
    """stderr taken for a terminal: the progress lines are shown there (and only then)."""
    import submitgen.cli

    monkeypatch.setattr(submitgen.cli, "_stderr_is_terminal", lambda: True)


def _progress(result) -> list[str]:
    """The progress lines (on stderr only), after checking that none reached stdout."""
    assert not any(ln.startswith("[") for ln in result.stdout.splitlines())
    return [ln for ln in result.stderr.splitlines() if ln.startswith("[")]


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sub.py"
    path.write_text(text)
    return path


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_fallback_only_is_said_and_require_kernel_exits_1(tmp_path):
    sub = _file(tmp_path, FALLBACK)
    result = _run("test", str(sub), *ONE)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == FALLBACK_PASSED
    strict = _run("test", str(sub), *ONE, "--require-kernel")
    assert strict.exit_code == 1
    assert strict.stdout.splitlines()[-2:] == [
        FALLBACK_PASSED,
        "--require-kernel: the kernel did not run (only the pure-torch fallback ran)"]


@pytest.mark.slow
def test_a_hand_written_file_on_a_cpu_fails_require_kernel(tmp_path):
    sub = _file(tmp_path, TOY + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    result = _run("test", str(sub), *ONE, "--require-kernel")
    assert result.stdout.splitlines()[-2:] == ["all 1 shapes passed",
                                               "--require-kernel: the kernel did not run (no GPU here)"]
    assert result.exit_code == 1


@pytest.mark.slow
def test_dry_run_against_the_stand_in_library(tmp_path, tmp_path_factory, monkeypatch, terminal):
    built = tmp_path / "toy.py"
    assert _run("build", "toy-add", "-o", str(built)).exit_code == 0
    monkeypatch.setenv("SUBMITGEN_HIP_LIBRARY", str(build_stub(tmp_path_factory, "fakehip")))
    monkeypatch.setenv("SUBMITGEN_FAKEHIP_LOG", str(tmp_path / "hip.log"))
    result = _run("test", str(built), *TWO)
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert _progress(result) == ["[1/2] n=64: launched, output not checked",
                                 "[2/2] n=96: launched, output not checked"]
    assert out[-1] == ("launches checked, outputs not checked: all 2 shapes launched against the stand-in "
                       "library")
    assert '"call":"hipModuleLaunchKernel"' in (tmp_path / "hip.log").read_text()


@pytest.mark.slow
def test_a_file_that_only_claims_a_dry_run_is_judged(tmp_path):
    sub = _file(tmp_path, TOY + "SUBMITGEN_BACKEND = 'dry-run'\n\n\ndef custom_kernel(data):\n"
                               "    return torch.zeros_like(data[0])\n")
    result = _run("test", str(sub), *ONE)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "FAILED: 1 of 1 shapes failed"


@pytest.mark.slow
def test_a_missing_module_is_reported_once_with_its_exit_code(tmp_path):
    sub = _file(tmp_path, TOY + "import aiter\n\n\ndef custom_kernel(data):\n    return data[0] + data[1]\n")
    result = _run("test", str(sub), *TWO, "--no-lint")
    assert result.exit_code == EXIT_CANNOT_RUN == 3
    out = result.stdout.splitlines()
    assert out[-1] == "cannot run here: needs aiter"
    assert not any(ln.startswith("[") for ln in out)  # no per-shape progress lines
    errors = [ln for ln in out if "importing the submission failed" in ln]
    assert errors == ["n=64, n=96: importing the submission failed: Traceback (most recent call last):"]
    assert result.stdout.count("ModuleNotFoundError: No module named 'aiter'") == 1


@pytest.mark.slow
def test_a_module_missing_at_call_time_is_reported_once(tmp_path):
    sub = _file(tmp_path, TOY + "def custom_kernel(data):\n    import aiter\n    return aiter.add(*data)\n")
    result = _run("test", str(sub), *TWO)
    assert result.exit_code == 3
    assert result.stdout.splitlines()[-1] == "cannot run here: needs aiter"
    assert result.stdout.count("Traceback (most recent call last):") == 1


@pytest.mark.slow
def test_tracebacks_show_the_users_frames_once(tmp_path, terminal):
    sub = _file(tmp_path, TOY + "def _helper(a):\n    raise ValueError(f'bad size {a.shape[0] > 0}')\n\n\n"
                               "def custom_kernel(data):\n    return _helper(data[0])\n")
    result = _run("test", str(sub), *TWO)
    assert result.exit_code == 1
    text = result.stdout
    start = text.index("n=64, n=96: custom_kernel raised: ")
    block = text[start:].splitlines()
    assert block[:7] == [
        "n=64, n=96: custom_kernel raised: Traceback (most recent call last):",
        f'  File "{_run_folder_file(text)}", line 12, in custom_kernel',
        "    return _helper(data[0])",
        "           ^^^^^^^^^^^^^^^^",
        f'  File "{_run_folder_file(text)}", line 8, in _helper',
        "    raise ValueError(f'bad size {a.shape[0] > 0}')",
        "ValueError: bad size True",
    ]
    assert "evaluate_worker" not in text and text.count("ValueError: bad size True") == 1
    assert "evaluate_worker" not in result.stderr
    assert _progress(result) == ["[1/2] n=64: FAIL: ValueError: bad size True",
                                 "[2/2] n=96: FAIL: ValueError: bad size True"]
    assert text.splitlines()[-1] == "FAILED: 2 of 2 shapes failed"


def _run_folder_file(text: str) -> str:
    return re.search(r'File "([^"]*/run/submission\.py)"', text).group(1)


@pytest.mark.slow
def test_the_leaderboards_layout(tmp_path):
    marker = tmp_path / "compiled"
    sub = _file(tmp_path, TOY + (
        "from reference import check_implementation, generate_input, ref_kernel\n"
        "from utils import make_match_reference, set_seed\n\n"
        "_EXT = os.environ['TORCH_EXTENSIONS_DIR']\n"
        "assert os.path.dirname(_EXT) == os.path.dirname(os.getcwd()), (_EXT, os.getcwd())\n"
        "assert sorted(os.listdir('.'))[:4] == ['reference.py', 'submission.py', 'task.py', 'utils.py']\n"
        "if __name__ == '__main__':\n"
        f"    open({str(marker)!r}, 'w').write('compile pass')\n\n\n"
        "def custom_kernel(data):\n"
        "    set_seed(1)\n"
        "    same = generate_input(n=data[0].shape[0], seed=1)\n"
        "    out = ref_kernel(data)\n"
        "    assert check_implementation(data, out) == (True, '')\n"
        "    assert make_match_reference(ref_kernel)(data, out) == (True, '')\n"
        "    assert same[0].shape == data[0].shape\n"
        "    return out\n"))
    result = _run("test", str(sub), *ONE, "--no-lint")
    assert result.exit_code == 0, result.output
    assert marker.read_text() == "compile pass"
    assert re.search(r"^compile pass \(python submission\.py, as the leaderboard runs it first\): ok in "
                     r"[0-9.]+ s$", result.stdout, re.M)


@pytest.mark.slow
def test_what_runs_is_said_first(tmp_path, monkeypatch):
    from submitgen.evaluate import estimate

    sub = _file(tmp_path, TOY + "def custom_kernel(data):\n    return data[0] + data[1]\n")
    result = _run("test", str(sub), *TWO)
    assert result.exit_code == 0, result.output
    plan = ("submitgen test: 2 shape(s) of amd-toy-add; first the compile pass (python submission.py), "
            "then one worker process imports the file and runs every shape; no GPU here: a submitgen file "
            "runs its pure-torch fallback, which can take minutes a shape on a CPU")
    assert result.stderr.splitlines() == [plan]  # no estimate: the toy problem has no measured rate
    rate = estimate.Rate(cpu_s_per_gb=1e6, cpu_s_base=10.0, peak_per_gb=1e3, peak_base_gb=0.8, measured="X")
    monkeypatch.setattr(estimate, "RATES", {"amd-toy-add": rate})
    result = _run("test", str(sub), *TWO)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [plan, (
        "expected without a GPU: about 11 s of CPU time and 0.8 GB of memory at the peak, from the shapes' "
        "input sizes (0.00 GB in all; the default build's test shapes took X); a loaded machine stretches "
        "the wall time, not the CPU time that --timeout limits")]


@pytest.mark.slow
def test_bench_skips_timing_a_fallback_on_a_cpu_unless_forced(tmp_path, terminal):
    sub = _file(tmp_path, FALLBACK)
    result = _run("bench", str(sub), *ONE, "--iters", "3")
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert _progress(result) == [
        "[1/1] n=64: timing skipped: the pure-torch fallback on a CPU (--force times it)"]
    header = next(i for i, ln in enumerate(out) if ln.startswith("shape "))
    assert out[header].split() == ["shape", "runs", "mean", "std", "err", "best", "worst", "output"]
    assert out[header + 2].split() == ["n=64", "0", "-", "-", "-", "-", "-", "ok"]
    assert out[-2:] == ["timing skipped: the pure-torch fallback on a CPU (--force times it)",
                        FALLBACK_PASSED]
    forced = _run("bench", str(sub), *ONE, "--iters", "3", "--force")
    assert forced.exit_code == 0, forced.output
    row = next(ln for ln in forced.stdout.splitlines() if ln.startswith("n=64 "))
    assert row.split()[1] == "3"
