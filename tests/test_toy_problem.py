"""A problem defined outside submitgen (tests/toy_problem.py) plugs into the registry, and the CLI
then builds, lints, tests and benches it like a shipped problem: adding a problem is one module, its
fallback module and one kernel project (tests/projects/toy_add, compiled here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import toy_problem
from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.errors import ProblemError
from submitgen.problems import PROBLEMS, ProblemSpec, get_problem, register, unregister
from submitgen.problems.registry import leaderboards


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def toy():
    register(toy_problem.PROBLEM)
    yield toy_problem.PROBLEM
    unregister(toy_problem.PROBLEM.name)


@pytest.fixture(scope="module")
def built(toy, tmp_path_factory):
    out = tmp_path_factory.mktemp("toy") / "toy_submission.py"
    result = run("build", "toy-add", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out, result.output


def test_registered_toy_is_listed(toy):
    assert get_problem("toy-add") is toy and get_problem("amd-toy-add") is toy
    assert list(PROBLEMS)[-1] == "toy-add"
    assert leaderboards()["amd-toy-add"].gpus == ("MI355X",)
    usage = run("build", "--help").output
    assert "{mxfp4-mm|mixed-mla|moe-mxfp4|toy-add}" in usage


@pytest.mark.slow
def test_toy_builds_from_its_default_project(built):
    out, summary = built
    text = out.read_text()
    assert text.splitlines()[:2] == ["#!POPCORN leaderboard amd-toy-add", "#!POPCORN gpu MI355X"]
    assert "def _sg_fallback(data):" in text and "return torch.add(a, b)" in text
    assert "def _sg_leaves(data):\n    return (data[0], data[1])" in text
    assert f"wrote {out} for amd-toy-add" in summary
    assert "problem files 2,000" in summary


def test_toy_lints(built):
    out, _ = built
    result = run("lint", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{kernelguard_line(out)}\n{out}: lint passed; estimated payload ")
    assert "for amd-toy-add (problem files ≈2,000" in result.output


@pytest.mark.slow
def test_toy_tests_and_benches(built):
    out, _ = built
    result = run("test", str(out), "--shapes", "all")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] in (  # the kernel on an AMD GPU, else the fallback
        "all 3 shapes passed", "kernel not run: fallback only (the pure-torch fallback passed all 3 shapes)")
    assert "n=256" in result.output and "n=1000" in result.output and "n=4096" in result.output
    import torch

    if not torch.cuda.is_available():  # issue 48: bench stops at once for the untimed fallback
        result = run("bench", str(out), "--iters", "2")
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr == (
            f"Error: bench {out}: no GPU here, so this submitgen file would run its pure-torch fallback, "
            "which bench does not time on a CPU: nothing was run. Check it with `submitgen test "
            f"{out}`, run bench where the leaderboard's GPU is, or pass --force to time the fallback on "
            "this CPU\n")
    result = run("bench", str(out), "--iters", "2", "--force")  # on a CPU: times the fallback
    assert result.exit_code == 0, result.output
    assert "n=4096  2     " in result.output and "ok" in result.output


@pytest.mark.slow
def test_toy_wrong_output_fails_its_check(toy, tmp_path):
    sub = tmp_path / "wrong.py"
    sub.write_text("#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\n\nimport torch\n\n\n"
                   "def custom_kernel(data):\n    a, b = data\n    return a - b\n")
    result = run("test", str(sub), "--shapes", "test:0")
    assert result.exit_code == 1
    assert "FAILED: 1 of 1 shapes failed" in result.output


def test_a_second_spec_under_a_taken_name_is_refused(toy):
    from dataclasses import replace

    clash = replace(toy, leaderboard="amd-toy-other")
    with pytest.raises(
        ProblemError,
        match=r"^problem 'toy-add' \(amd-toy-other\) clashes with the registered "
        r"problem 'toy-add' \(amd-toy-add\), registered by toy_problem$",
    ):
        register(clash)
    assert isinstance(get_problem("toy-add"), ProblemSpec)


def test_the_pasted_functions_must_carry_the_template_names(toy):
    from dataclasses import replace

    def leaves(data):
        return data

    with pytest.raises(
        ProblemError,
        match="^problem 'toy-add': the pasted function must be named '_sg_leaves', got 'leaves'$",
    ):
        replace(toy, leaves=leaves)


def test_unregistered_toy_is_unknown_again(tmp_path):
    unregister("toy-add")
    try:
        result = run("build", "toy-add", "-o", str(tmp_path / "x.py"))
        assert result.exit_code == 1
        assert result.output.startswith("Error: unknown problem 'toy-add': known problems are mxfp4-mm "
                                        "(amd-mxfp4-mm), mixed-mla (amd-mixed-mla)")
    finally:
        register(toy_problem.PROBLEM)


def test_project_folder_is_the_specs(toy):
    assert toy.kernel_project == Path(__file__).resolve().parent / "projects" / "toy_add"
    assert toy.kernel_project.name == "toy_add"
