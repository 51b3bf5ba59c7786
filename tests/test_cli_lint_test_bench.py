"""`submitgen lint`, `submitgen test`, `submitgen bench` through click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.rules import BANNED_WORD

SUBMISSIONS = Path(__file__).parent / "submissions"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_lint_word_in_comment_fails_at_its_line(tmp_path: Path):
    sub = tmp_path / "submission.py"
    body = (SUBMISSIONS / "mm_zeros.py").read_text().replace(
        "import torch\n", f"import torch\n# {BANNED_WORD.capitalize()} 0 is the default\n", 1)
    sub.write_text(body)
    result = run("lint", str(sub))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{sub}:5: banned-word [kernelbot]: '{BANNED_WORD.capitalize()}' at column 3: the server rejects any "
        "file containing this word in any case (fix: reword or rename it (say 'queue'); pass 0 as the HIP "
        "queue argument instead of naming the default one)", kernelguard_line(sub)]


def test_lint_clean_file_prints_payload():
    result = run("lint", str(SUBMISSIONS / "mla_torch.py"))
    assert result.exit_code == 0, result.output
    path = SUBMISSIONS / "mla_torch.py"
    out = result.output.splitlines()
    assert out[0].startswith(f"{path}:1: warning: kernelguard [KernelGuard]: PRECISION_DOWNGRADE (medium): ")
    assert out[1] == kernelguard_line(path, "low_confidence (not filtered: PRECISION_DOWNGRADE)")
    assert out[2].startswith(f"{path}: lint passed; estimated payload ")
    assert "of 65,535 chars for amd-mixed-mla" in result.output


def test_lint_unknown_problem_option():
    result = run("lint", str(SUBMISSIONS / "mla_torch.py"), "--problem", "mla")
    assert result.exit_code == 1
    assert "Error: unknown leaderboard 'mla'" in result.output


def test_test_refuses_unknown_leaderboard(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text((SUBMISSIONS / "mm_zeros.py").read_text().replace("amd-mxfp4-mm", "amd-mxfp4-gemm"))
    result = run("test", str(sub))
    assert result.exit_code == 1
    assert result.output.splitlines() == [  # lint only warns: a new round's leaderboard may be one
        "Error: leaderboard 'amd-mxfp4-gemm' is not one submitgen knows, so the built-in harness has no "
        "problem to test against; pass --problem with its problem folder (its eval.py runs) or "
        "--reference-kernels DIR"]


@pytest.mark.slow
def test_test_zeros_fail_every_shape():
    result = run("test", str(SUBMISSIONS / "mm_zeros.py"))
    assert result.exit_code == 1
    out = result.output.splitlines()
    assert not [ln for ln in out if ln.startswith("[")]  # no progress: stderr is not a terminal
    header = out.index(next(ln for ln in out if ln.startswith("shape ")))
    rows = out[header + 2:header + 6]
    assert [" ".join(r.split()[:3]) for r in rows] == [
        "m=8 n=2112 k=7168", "m=16 n=3072 k=1536", "m=64 n=3072 k=1536", "m=256 n=2880 k=512"]
    assert all(r.split()[3] == "FAIL" for r in rows)
    assert out[-1] == "FAILED: 4 of 4 shapes failed"
    assert "backend: the file's own code" in result.output


@pytest.mark.slow
def test_test_correct_submission_passes():
    result = run("test", str(SUBMISSIONS / "mla_torch.py"), "--shapes", "test:0", "--seed", "11")
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0] == f"amd-mixed-mla: {SUBMISSIONS / 'mla_torch.py'}"
    header = out.index(next(ln for ln in out if ln.startswith("shape ")))
    assert out[header + 2].split()[:4] == ["batchsize=4", "qseqlen=1", "kvseqlen=1024", "pass"]
    assert out[-1] == "all 1 shapes passed"


@pytest.mark.slow
def test_test_custom_shape_and_problem_option(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text((SUBMISSIONS / "mla_torch.py").read_text().split("\n", 2)[2])  # no header
    result = run("test", str(sub), "--problem", "mixed-mla", "--shape", "batchsize=2,qseqlen=1,kvseqlen=64")
    assert result.exit_code == 0, result.output
    assert any(ln.split()[:4] == ["batchsize=2", "qseqlen=1", "kvseqlen=64", "pass"]
               for ln in result.stdout.splitlines())


@pytest.mark.slow
def test_bench_prints_a_table():
    result = run("bench", str(SUBMISSIONS / "mla_torch.py"), "--shapes", "benchmark:0", "--iters", "2")
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    header = out.index(next(ln for ln in out if ln.startswith("shape ")))
    assert out[header].split() == ["shape", "runs", "mean", "std", "err", "best", "worst", "output"]
    row = out[header + 2].split()
    assert row[:4] == ["batchsize=4", "qseqlen=1", "kvseqlen=1024", "2"] and row[-1] == "ok"
    assert any(ln.startswith("timing: ") for ln in out)
    assert "mode: benchmark (the first call's output checked, the timed calls reuse its inputs)" in out
    assert "stop: 2 timed calls per shape (--iters), fewer once 120 s have passed" in out
    assert out[-1] == "all 1 shapes passed"
