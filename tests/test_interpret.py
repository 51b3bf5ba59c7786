"""`submitgen test --interpret PROJECT_DIR`: a Triton project's own plan and kernels run on the CPU
under Triton's interpreter and checked against the reference (submitgen/evaluate/interpret.py):
a tiny project for the toy problem passes, the same project with a wrong kernel fails with the
reference's mismatch text, and each default Triton project passes on its default shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import toy_problem
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.problems import register, unregister

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parent.parent
TOY_TRITON = ROOT / "tests" / "projects" / "toy_triton"


@pytest.fixture
def toy():
    register(toy_problem.PROBLEM)
    yield
    unregister("toy-add")


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _announce(root: Path) -> str:
    return ("submitgen test --interpret: 1 shape(s) of amd-toy-add (the smallest test shape: n=256); one "
            f"worker process runs {root}'s own plan and Triton kernels under Triton's interpreter on the "
            "CPU, every program instance in Python: seconds to minutes a shape; at most 300 s a shape "
            "(--timeout)")


def test_a_triton_project_passes_under_the_interpreter(toy):
    result = _run("test", "--interpret", str(TOY_TRITON), "--problem", "toy-add", "--require-kernel")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == _announce(TOY_TRITON)
    out = result.stdout.splitlines()
    assert out[:2] == [f"amd-toy-add: {TOY_TRITON}",
                       "backend: triton-interpreter - ran the project's own plan and Triton kernels under "
                       "Triton's interpreter (TRITON_INTERPRET=1) on the CPU"]
    assert out[4].split()[:6] == ["n=256", "pass", "0", "0", "0/256", "0.000%"]
    assert out[5:] == ["kernel checked under the Triton interpreter: all 1 shapes passed"]


def test_a_wrong_kernel_fails_with_the_references_mismatch_text(toy, tmp_path):
    wrong = tmp_path / "toy_triton"
    shutil.copytree(TOY_TRITON, wrong)
    kernel = wrong / "add.py"
    kernel.write_text(kernel.read_text().replace("a + b, mask=mask", "a - b, mask=mask"))
    result = _run("test", "--interpret", str(wrong), "--problem", "toy-add")
    assert result.exit_code == 1, result.output
    data = toy_problem.generate_input({"n": 256, "seed": 1})
    message = toy_problem.PROBLEM.check(data[0] - data[1], data).message
    assert message.startswith("FAIL (rtol=1e-05 atol=1e-05, every element): ")
    out = result.stdout.splitlines()
    assert out[4].split()[:2] == ["n=256", "FAIL"]
    assert out[5:] == [f"n=256: {message}",
                       "FAILED: 1 of 1 shapes failed (kernel checked under the Triton interpreter)"]


def test_interpret_refuses_what_it_cannot_run(tmp_path):
    result = _run("test", "--interpret", str(TOY_TRITON))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {TOY_TRITON}: which problem is this kernel project for? pass --problem NAME (a project has "
        "no #!POPCORN header to say)"]
    hip_only = ROOT / "tests" / "projects" / "toy_add"
    result = _run("test", "--interpret", str(hip_only), "--problem", "mxfp4-mm")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: kernel project {hip_only} has no TRITON kernels: --interpret "
        "runs Triton kernels only"]
    result = _run("test", str(tmp_path / "x.py"), "--interpret", str(TOY_TRITON))
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "Error: give FILE or --interpret PROJECT_DIR, not both"
    result = _run("test")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "Error: Missing argument 'FILE'."


@pytest.mark.slow
@pytest.mark.parametrize("project", ["mixed_mla", "mxfp4_mm", "moe_mxfp4"])
def test_each_default_triton_project_passes_under_the_interpreter(project):
    result = _run("test", "--interpret", str(ROOT / "kernels" / project))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == ("kernel checked under the Triton interpreter: all 1 shapes "
                                               "passed")


def test_interpret_json_is_the_documented_envelope(toy):
    import json

    from test_json_output import valid

    result = _run("test", "--interpret", str(TOY_TRITON), "--problem", "toy-add", "--json")
    doc = json.loads(result.stdout)
    assert valid(doc) == [], doc
    assert result.exit_code == 0 and doc["ok"] is True and doc["exit_code"] == 0
    assert (doc["file"], doc["backend"]["kernel"], doc["backend"]["value"]) == (
        str(TOY_TRITON), "interpreted", "triton-interpreter")
    assert doc["verdict"] == "kernel checked under the Triton interpreter: all 1 shapes passed"
    assert [(s["label"], s["result"]) for s in doc["shapes"]] == [("n=256", "pass")]


BF16_DOT = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * 256 + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    ones = tl.full((16, 32), 1.0, tl.bfloat16)
    k = tl.dot(ones, tl.trans(ones))  # 32.0 everywhere, in float32
    tl.store(out_ptr + offs, a + b + (k - 32.0), mask=mask)
'''


def test_a_bf16_dot_is_exact_under_the_interpreter(toy, tmp_path):
    """Triton's interpreter multiplies bf16 operands' raw bits (triton-lang/triton#11584): submitgen's
    workaround makes this correct kernel pass instead of failing by ~1e10."""
    project = tmp_path / "toy_dot"
    shutil.copytree(TOY_TRITON, project)
    (project / "add.py").write_text(BF16_DOT)
    launch = project / "launch.py"
    launch.write_text(launch.read_text().replace("BLOCK = 128", "BLOCK = 256"))
    result = _run("test", "--interpret", str(project), "--problem", "toy-add")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == ("kernel checked under the Triton interpreter: all 1 shapes "
                                               "passed")


def test_a_timed_out_interpreted_shape_is_not_called_checked(toy, tmp_path):
    project = tmp_path / "toy_slow"
    shutil.copytree(TOY_TRITON, project)
    launch = project / "launch.py"
    launch.write_text(launch.read_text().replace("def plan(data):\n", "def plan(data):\n    while True:\n"
                                                 "        pass\n"))
    result = _run("test", "--interpret", str(project), "--problem", "toy-add", "--timeout", "2")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-2:] == [
        "n=256: timed out after 2 s of CPU time (shape n=256); --timeout SECONDS sets the limit",
        "FAILED: 1 of 1 shapes failed (not checked: 1 timed out under the Triton interpreter; a smaller "
        "shape (--shape K=V,...) or a longer --timeout may finish)"]
