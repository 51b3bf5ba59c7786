"""A new round's problem folder is a problem: `build`, `lint`, `test`, `bench` take a path to a folder
holding task.yml (submitgen/problems/folder.py). The tests write their own round: a round file
`acme.yaml` beside `acme/`, whose folder `vecmul` (leaderboard `acme-vecmul-next`, a name that exists
nowhere in submitgen) hands in its output `c` as amd-fp8-mm does, and a small eval.py of our own
that speaks eval.py's protocol."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import kernelguard_line

from submitgen.cli import cli
from submitgen.problems.folder import _sg_key, _sg_leaves, leaf_names, payload_baseline

REPO = Path(__file__).resolve().parent.parent
TOY_KERNELS = REPO / "examples" / "plugin_toy_mul" / "submitgen_toy_mul" / "kernels"
BOARD = "acme-vecmul-next"

TASK_YML = """\
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "task.py", "source": "task.py"}
  - {"name": "utils.py", "source": "../utils.py"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "../eval.py"}
lang: "py"
description: "c = a * b on float32 vectors; c is pre-allocated."
config:
  main: "eval.py"
tests:
  - {"n": 256, "seed": 1}
  - {"n": 1000, "seed": 2}
benchmarks:
  - {"n": 4096, "seed": 3}
ranking_by: "geom"
"""
TASK_PY = "import torch\ninput_t = tuple\noutput_t = torch.Tensor\n"
REFERENCE = """\
import torch
from task import input_t, output_t
from utils import DEVICE


def generate_input(n: int, seed: int) -> input_t:
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    a = torch.randn((n,), dtype=torch.float32, device=DEVICE, generator=gen)
    b = torch.randn((n,), dtype=torch.float32, device=DEVICE, generator=gen)
    return a, b, torch.zeros((n,), dtype=torch.float32, device=DEVICE)


def ref_kernel(data: input_t) -> output_t:
    a, b, c = data
    c[...] = a * b
    return c


def check_implementation(data, output):
    want = ref_kernel(tuple(t.clone() for t in data))
    if not torch.allclose(output, want):
        return False, "mismatch found"
    return True, ""
"""
SUBMISSION = """\
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    c[...] = a * b
    return c
"""
EVAL = """\
import os
import sys
import time

from reference import check_implementation, generate_input

out = os.fdopen(int(os.environ["POPCORN_FD"]), "w")
lines = open(sys.argv[2]).read().splitlines()
kind = "test" if sys.argv[1] == "test" else "benchmark"
from submission import custom_kernel
print(f"{kind}-count: {len(lines)}", file=out)
ok = True
for i, line in enumerate(lines):
    args = {k.strip(): int(v) for k, v in (p.split(":") for p in line.split(";"))}
    print(f"{kind}.{i}.spec: {line}", file=out)
    data = generate_input(**args)
    start = time.perf_counter_ns()
    good, message = check_implementation(data, custom_kernel(data))
    ns = time.perf_counter_ns() - start
    ok = ok and good
    if kind == "test" or not good:
        print(f"{kind}.{i}.status: {'pass' if good else 'fail'}", file=out)
    else:
        stats = (("runs", 1), ("mean", ns), ("std", 0.0), ("err", 0.0), ("best", ns), ("worst", ns))
        for key, value in stats:
            print(f"{kind}.{i}.{key}: {value}", file=out)
print(f"check: {'pass' if ok else 'fail'}", file=out)
sys.exit(0 if ok else 112)
"""
ROUND = "problems:\n  - directory: acme/vecmul\n    name: {board}\n    gpus: [{gpus}]\n"
PLAN = """\
import torch

SOURCES = ("mul.hip",)
KERNELS = ("toy_mul",)


def plan(data):
    a, b, c = data
    n = a.shape[0]
    return c, [("toy_mul", ((n + 255) // 256, 1, 1), (256, 1, 1), 0, (a, b, c, n))]
"""


def write_round(
    root: Path,
    *,
    device: str = '"cuda"',
    gpus: str = "MI300",
    task: str = TASK_YML,
    eval_py: str = EVAL,
    round_file: bool = True,
    reference: str = REFERENCE,
) -> Path:
    """The round `root/acme.yaml` + `root/acme/{eval.py,utils.py,vecmul/}`; the folder's path."""
    folder = root / "acme" / "vecmul"
    folder.mkdir(parents=True)
    if round_file:
        (root / "acme.yaml").write_text(ROUND.format(board=BOARD, gpus=gpus))
    (root / "acme" / "eval.py").write_text(eval_py)
    (root / "acme" / "utils.py").write_text(f"import torch\nDEVICE = {device}\n")
    for name, text in (
        ("task.yml", task),
        ("task.py", TASK_PY),
        ("reference.py", reference),
        ("submission.py", SUBMISSION),
    ):
        (folder / name).write_text(text)
    return folder


def kernels(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(TOY_KERNELS / "mul.hip", proj / "mul.hip")
    (proj / "launch.py").write_text(PLAN)
    return proj


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_leaves_and_key_walk_nested_inputs_in_the_documented_order():
    import torch

    @dataclasses.dataclass
    class Cfg:
        scale: torch.Tensor
        steps: int

    x, y, z, w = (torch.zeros(i + 1) for i in range(4))
    data = {"q": x, "kv": (y, [z]), "cfg": Cfg(w, 3)}
    assert _sg_leaves(data) == (x, y, z, w)
    assert leaf_names(data) == ("data['q']", "data['kv'][0]", "data['kv'][1][0]", "data['cfg'].scale")
    assert _sg_key(data) == (
        ("q", ((1,), (1,), torch.float32)),
        ("kv", (((2,), (1,), torch.float32), (((3,), (1,), torch.float32),))),
        ("cfg", (((4,), (1,), torch.float32), 3)),
    )


@pytest.mark.slow
def test_a_new_rounds_folder_builds_lints_and_reaches_its_eval_py(tmp_path):
    folder = write_round(tmp_path, device='"cuda" if torch.cuda.is_available() else "cpu"')
    out = tmp_path / "sub.py"
    r = run(
        "build", folder, "--kernels", kernels(tmp_path), "-o", out, "--fallback", folder / "submission.py"
    )
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"wrote {out} for {BOARD} (amdgcn-amd-amdhsa--gfx942)"
    assert (
        f"  submit it with: popcorn-cli submit --gpu MI300 --leaderboard {BOARD} --mode leaderboard {out}"
        in lines
    )
    assert not any("no fallback" in line for line in lines)
    text = out.read_text()
    assert text.splitlines()[:2] == [f"#!POPCORN leaderboard {BOARD}", "#!POPCORN gpu MI300"]
    assert "def _sg_fallback(data: input_t) -> output_t:" in text
    r = run("lint", out)
    warning = (
        f"{out}:1: warning: header [kernelbot]: leaderboard '{BOARD}' is not one submitgen knows (a new "
        "round's?); the server decides whether it exists (fix: check the name, or pass --problem with its "
        "problem folder; known: "
    )
    assert r.exit_code == 0 and r.output.startswith(warning), r.output
    r = run("lint", out, "--problem", folder)
    base = payload_baseline(folder)
    assert r.exit_code == 0, r.output
    assert re.fullmatch(
        rf"{re.escape(kernelguard_line(out))}\n{re.escape(str(out))}: lint passed; estimated payload "
        rf"[\d,]+ of 65,535 chars for "
        rf"{BOARD} \(problem files ≈{base:,} \+ submission [\d,]+; .*\)\n",
        r.output,
    ), r.output
    r = run("test", out, "--reference-kernels", folder)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-5:] == [
        "-------------  ------",
        "n=256 seed=1   pass",
        "n=1000 seed=2  pass",
        "eval.py: check pass (exit code 0)",
        "all 2 shapes passed",
    ]
    r = run("bench", out, "--problem", folder)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-2:] == ["eval.py: check pass (exit code 0)", "all 1 shapes passed"]


@pytest.mark.slow
def test_a_folder_whose_reference_needs_a_gpu_builds_and_cannot_run_here(tmp_path):
    folder = write_round(tmp_path)  # generate_input on device "cuda" with a CUDA generator
    out = tmp_path / "sub.py"
    r = run("build", folder, "--kernels", kernels(tmp_path), "-o", out)
    assert r.exit_code == 0, r.output
    assert (
        "  note: no fallback: a build from a problem folder has none unless --fallback FILE names a "
        "plain-torch custom_kernel (e.g. the folder's submission.py), so the file fails at import where its "
        "kernels cannot load"
    ) in r.output.splitlines()
    assert "_sg_fallback = None  # built from a problem folder with no --fallback FILE" in out.read_text()
    for command in ("test", "bench"):
        r = run(command, out, "--problem", folder)
        assert r.exit_code == 3, r.output
        assert r.output.splitlines()[2:] == [
            "the reference cannot run here: reference.py's generate_input needs a CUDA/ROCm GPU "
            "(RuntimeError: "
            "Cannot get CUDA generator without ATen_cuda library)",
            "  at reference.py line 7: gen = torch.Generator(device=DEVICE)",
            "nothing was run; no verdict (exit code 3)",
        ]


TRITON_MUL = """\
import triton
import triton.language as tl


@triton.jit
def mul_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask), mask=mask)
"""
TRITON_PLAN = """\
TRITON = {
    "mul": {
        "source": "mul.py", "kernel": "mul_kernel",
        "signature": {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 256}, "num_warps": 4, "num_stages": 1,
    },
}


def plan(data):
    a, b, c = data
    n = a.shape[0]
    return c, [("mul", ((n + 255) // 256, 1, 1), None, None, (a, b, c, n))]
"""


@pytest.mark.slow
def test_an_h100_round_builds_a_real_sm_90_submission(tmp_path):
    folder = write_round(tmp_path, gpus="H100")
    proj = tmp_path / "tproj"
    proj.mkdir()
    (proj / "mul.py").write_text(TRITON_MUL)
    (proj / "launch.py").write_text(TRITON_PLAN)
    out = tmp_path / "sub.py"
    r = run("build", folder, "--kernels", proj, "-o", out)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"wrote {out} for {BOARD} (nvptx-nvidia-cuda--sm_90a)"
    submit = f"popcorn-cli submit --gpu H100 --leaderboard {BOARD} --mode leaderboard {out}"
    assert lines[-1] == f"  submit it with: {submit}"
    assert out.read_text().splitlines()[:2] == [f"#!POPCORN leaderboard {BOARD}", "#!POPCORN gpu H100"]
    r = run("lint", out, "--problem", folder)  # the round's H100 is known to lint (no GPU warning)
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    # a leaderboard lint knows on other GPUs (amd-fp8-mm: MI300), built for the round's H100 by --gpu
    (tmp_path / "acme.yaml").write_text(ROUND.format(board="amd-fp8-mm", gpus="MI300, H100"))
    r = run("build", folder, "--kernels", proj, "-o", out, "--gpu", "H100", "--force")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == (
        f"  submit it with: popcorn-cli submit --gpu H100 --leaderboard amd-fp8-mm --mode leaderboard {out}")


def test_a_plan_that_returns_an_input_it_is_not_handed_is_refused(tmp_path):
    folder = write_round(tmp_path)
    proj = kernels(tmp_path)
    (proj / "launch.py").write_text(PLAN.replace("return c, [", "return b, ["))
    r = run("build", folder, "--kernels", proj, "-o", tmp_path / "sub.py")
    assert r.exit_code == 1
    assert r.output == (
        "Error: plan(n=256) out: shares input 1's storage (it is the input, a view or a set_ of "
        "it); return a tensor of its own\n"
    )


def _refusal(root: Path, *args: object, **round_args) -> str:
    """The output of a build of a fresh round under ``root`` that fails, the folder's path as FOLDER and
    ``root`` as ROOT."""
    root.mkdir(exist_ok=True)
    folder = write_round(root, **round_args)
    r = run("build", folder, *args, "-o", root / "sub.py")
    assert r.exit_code == 1, r.output
    return (
        r.output.replace(str(folder), "FOLDER")
        .replace(str(root.resolve()), "ROOT")
        .replace(str(root), "ROOT")
    )


REFUSALS = (
    (
        dict(round_file=False),
        True,
        "Error: FOLDER: no round file beside ROOT/acme names this folder; pass --leaderboard NAME and "
        "--gpu GPU\n",
    ),
    (
        dict(gpus="MI300, H100"),
        True,
        f"Error: FOLDER: {BOARD} runs on MI300, H100; pass --gpu with one of them\n",
    ),
    (
        dict(gpus="B200"),
        True,
        f"Error: {BOARD} runs on B200, a GPU submitgen has no arch for (MI300 -> gfx942, MI300X -> gfx942, "
        "MI355X -> gfx950, H100 -> sm_90); pass --target and --arch\n",
    ),
    (
        dict(task=TASK_YML + "multi_gpu: true\n"),
        True,
        "Error: FOLDER: a multi-GPU task (task.yml says multi_gpu: true); submitgen builds single-GPU "
        "submissions "
        "only\n",
    ),
    ({}, False, "Error: FOLDER: a problem folder has no default kernels; pass --kernels PROJECT\n"),
    (
        dict(reference=REFERENCE.replace("    return c\n", "    return c, 3\n")),
        True,
        "Error: FOLDER: ref_kernel returns a tuple holding Tensor, int; a submitgen plan returns a tensor "
        "or a tuple of tensors\n",
    ),
    (
        dict(eval_py="import torch\ng = torch.cuda.CUDAGraph()\n"),
        True,
        "Error: FOLDER/eval.py: times custom_kernel inside a captured CUDA graph; a submitgen file "
        "launches on queue 0, which cannot join a capture (torch gives the capturing queue only under "
        "the banned word; Triton's launcher takes it unnamed, but runs an embedded binary only through "
        "Triton's internal, version-specific CompiledKernel API from files written at run time, which "
        "submitgen does not do)\n",
    ),
)


@pytest.mark.parametrize("index", range(len(REFUSALS)))
def test_each_refusal_is_one_error_line(tmp_path, index):
    round_args, with_kernels, want = REFUSALS[index]
    args = ("--kernels", kernels(tmp_path)) if with_kernels else ()
    assert _refusal(tmp_path / "r", *args, **round_args) == want


def test_a_bad_fallback_file_is_refused(tmp_path):
    proj = kernels(tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text("def plan(data):\n    pass\n\n\ndef custom_kernel(data):\n    return data\n")
    got = _refusal(tmp_path / "r", "--kernels", proj, "--fallback", bad)
    assert (
        got == f"Error: --fallback {bad}: line 1 binds 'plan', a name of the emitted file's own; rename it\n"
    )
    bad.write_text("x = 1\n")
    r = run(
        "build",
        tmp_path / "r" / "acme" / "vecmul",
        "--kernels",
        proj,
        "--fallback",
        bad,
        "-o",
        tmp_path / "s.py",
    )
    assert r.output == f"Error: --fallback {bad}: expected one top-level def custom_kernel(data), found 0\n"


def test_leaderboard_and_gpu_flags_set_a_folder_no_round_file_names(tmp_path):
    folder = write_round(tmp_path, round_file=False)
    r = run(
        "build",
        folder,
        "--leaderboard",
        "acme-other",
        "--gpu",
        "B200",
        "-o",
        tmp_path / "sub.py",
        "--kernels",
        kernels(tmp_path),
    )
    assert r.output == (
        "Error: acme-other runs on B200, a GPU submitgen has no arch for (MI300 -> gfx942, "
        "MI300X -> gfx942, MI355X -> gfx950, H100 -> sm_90); pass --target and --arch\n"
    )


def test_a_folder_whose_reference_cannot_import_here_borrows_known_inputs(tmp_path, toy_problems):
    """As amd_202602/mxfp4-mm (its reference imports aiter): the registered problem of the same
    leaderboard (here tests/toy_problem.py's amd-toy-add) gives the plan check its inputs, on every
    shape of the folder, and the summary says so."""
    folder = write_round(tmp_path, gpus="MI355X")
    (tmp_path / "acme.yaml").write_text(ROUND.format(board="amd-toy-add", gpus="MI355X"))
    missing = "import _submitgen_test_rocm_only_module  # noqa: F401\n"
    (folder / "reference.py").write_text(missing + REFERENCE)
    out = tmp_path / "sub.py"
    r = run("build", folder, "--kernels", REPO / "tests" / "projects" / "toy_add", "-o", out)
    assert r.exit_code == 0, r.output
    assert (f"  note: {folder}: importing reference.py failed: ModuleNotFoundError: No module named "
            "'_submitgen_test_rocm_only_module': the plan is checked on the inputs of submitgen's own "
            "toy-add problem") in r.output.splitlines()
    assert "  ok  plan: 3 launches over 3 shapes match the metadata and limits" in r.output.splitlines()


def test_problems_lists_a_folder_as_build_reads_it(tmp_path):
    folder = write_round(tmp_path)
    r = run("problems", folder)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1].split(maxsplit=1)[1].split("  ") == [
        "acme-vecmul-next", "MI300", "problem folder: 2 tests, 1 benchmarks, arch gfx942"]
    r = run("problems", write_round(tmp_path / "multi", task=TASK_YML + "multi_gpu: true\n"))
    assert r.exit_code == 1
    assert r.output.endswith("a multi-GPU task (task.yml says multi_gpu: true); submitgen builds single-GPU "
                             "submissions only\n")


def test_the_payload_baseline_is_the_folders_files_as_kernelbot_sends_them(tmp_path):
    """kernelbot's dispatch payload: base64(zlib(json(config))), config holding every file task.yml
    lists (the submission empty), the main script's name, the tests, the benchmarks and the ranking.
    The built-in problems' figures were computed by the same function from their folders."""
    import base64
    import json
    import zlib

    folder = write_round(tmp_path)
    sources = {"submission.py": "", "task.py": TASK_PY, "utils.py": 'import torch\nDEVICE = "cuda"\n',
               "reference.py": REFERENCE, "eval.py": EVAL}
    config = {"lang": "py", "main": "eval.py", "sources": sources,
              "tests": [{"n": 256, "seed": 1}, {"n": 1000, "seed": 2}],
              "benchmarks": [{"n": 4096, "seed": 3}],
              "ranking_by": "geom"}
    want = len(base64.b64encode(zlib.compress(json.dumps(config).encode("utf-8"), 9)))
    assert payload_baseline(folder) == want
    (folder / "reference.py").write_text(REFERENCE + "# " + "x9q" * 500 + "\n")
    assert payload_baseline(folder) > want


def test_an_input_the_description_names_pre_allocated_is_the_output_handed_in(tmp_path):
    """As identity's "- output_tensor: Pre-allocated empty tensor" and fp8-mm's "`c` is the output
    matrix": the plan may return that input even where ref_kernel neither writes nor returns it."""
    task = TASK_YML.replace(
        'description: "c = a * b on float32 vectors; c is pre-allocated."',
        'description: |\n  You will be given a tuple (a, b, c):\n  - a: the left factor\n'
        "  - c: pre-allocated to remove allocation overhead, as large as `a`\n",
    )
    reference = REFERENCE.replace("    c[...] = a * b\n    return c\n", "    return a * b\n")
    folder, proj = write_round(tmp_path, task=task, reference=reference), kernels(tmp_path)
    r = run("build", folder, "--kernels", proj, "-o", tmp_path / "sub.py")
    assert r.exit_code == 0, r.output
    assert ("  note: the output is handed in as data[2] (task.yml's description names `c` pre-allocated "
            "or the output): the plan may return it") in r.output.splitlines()
    (folder / "task.yml").write_text(task.replace("  - c: pre-allocated", "  - c: allocated"))
    r = run("build", folder, "--kernels", proj, "-o", tmp_path / "sub2.py")
    assert r.exit_code == 1
    assert r.output == (
        "Error: plan(n=256) out: shares input 2's storage (it is the input, a view or a set_ of "
        "it); return a tensor of its own\n"
    )


PAIR_REFERENCE = """\
import torch
from task import input_t, output_t
from utils import DEVICE


def generate_input(n: int, seed: int) -> input_t:
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    a = torch.randn((n,), dtype=torch.float32, device=DEVICE, generator=gen)
    b = torch.randn((n,), dtype=torch.float32, device=DEVICE, generator=gen)
    return a, b


def ref_kernel(data: input_t) -> output_t:
    a, b = data
    return a * b, a + b


def check_implementation(data, output):
    want = ref_kernel(data)
    if len(output) != 2 or not all(torch.equal(o, w) for o, w in zip(output, want)):
        return False, "mismatch found"
    return True, ""
"""
PAIR_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def pair_kernel(a_ptr, b_ptr, p_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(p_ptr + offs, a * b, mask=mask)
    tl.store(s_ptr + offs, a + b, mask=mask)
"""
PAIR_PLAN = """\
import torch

TRITON = {
    "pair": {
        "source": "pair.py", "kernel": "pair_kernel",
        "signature": {"a_ptr": "*fp32", "b_ptr": "*fp32", "p_ptr": "*fp32", "s_ptr": "*fp32", "n": "i32",
                      "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 256}, "num_warps": 4, "num_stages": 1,
    },
}


def plan(data):
    a, b = data
    n = a.shape[0]
    out = (torch.empty_like(a), torch.empty_like(a))
    return out, [("pair", ((n + 255) // 256, 1, 1), None, None, (a, b, *out, n))]
"""
PAIR_DRIVER = """\
import importlib.util, json, sys
import torch
spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
sub = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sub)
data = (torch.randn(300), torch.randn(300))
calls = [sub.custom_kernel(data) for _ in range(2)]
print(json.dumps({"inputs": [t.data_ptr() for t in data],
                  "outputs": [[[str(t.dtype), list(t.shape), t.data_ptr()] for t in out] for out in calls],
                  "types": [type(out).__name__ for out in calls]}))
"""


@pytest.mark.slow
def test_a_folder_whose_ref_kernel_returns_a_tuple_builds_a_file_returning_the_tuple(tmp_path,
                                                                                     tmp_path_factory):
    """helion's fp8_quant returns (x_q, x_s): the plan returns a tuple of the same form, checked element by
    element; the file returns a fresh tuple per call, each tensor's address in its launch's arguments
    (run against the stand-in HIP runtime), and test --interpret judges the tuple item by item."""
    import json
    import os
    import subprocess
    import sys

    from conftest import build_stub

    folder = write_round(tmp_path, device='"cuda" if torch.cuda.is_available() else "cpu"',
                         reference=PAIR_REFERENCE)
    proj = tmp_path / "pair"
    proj.mkdir()
    (proj / "pair.py").write_text(PAIR_KERNEL)
    (proj / "launch.py").write_text(PAIR_PLAN)
    out = tmp_path / "sub.py"
    r = run("build", folder, "--kernels", proj, "-o", out)
    assert r.exit_code == 0, r.output
    assert "  ok  plan: 3 launches over 3 shapes match the metadata and limits" in r.output.splitlines()
    r = run("lint", out, "--problem", folder)
    assert r.exit_code == 0, r.output
    # the emitted file against the stand-in runtime: two calls, two fresh tuples, each launched
    fakehip, log = build_stub(tmp_path_factory, "fakehip"), tmp_path / "hip.log"
    (tmp_path / "driver.py").write_text(PAIR_DRIVER)
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_FAKEHIP_LOG=str(log))
    p = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(out)], env=env, capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout)
    assert got["types"] == ["tuple", "tuple"]
    assert [[item[:2] for item in call] for call in got["outputs"]] == [[["torch.float32", [300]]] * 2] * 2
    launches = [json.loads(line) for line in log.read_text().splitlines()]
    launches = [c for c in launches if c["call"] == "hipModuleLaunchKernel"]
    assert len(launches) == 2
    for call, launch in zip(got["outputs"], launches):
        kernarg = bytes.fromhex(launch["kernarg"])
        pointers = [int.from_bytes(kernarg[i : i + 8], "little") for i in range(0, 32, 8)]
        assert pointers == [*got["inputs"], call[0][2], call[1][2]]
    assert len({item[2] for call in got["outputs"] for item in call}) == 4  # fresh tensors each call
    # the plan's kernels under Triton's interpreter, each output judged against ref_kernel's
    r = run("test", "--interpret", proj, "--problem", folder, "--shapes", "test")
    assert r.exit_code == 0, r.output
    rows = [line.rsplit(maxsplit=1)[0] for line in r.output.splitlines()[-3:-1]]  # without the times
    assert rows == ["n=256   pass    0            0            0/512       0.000%",
                    "n=1000  pass    0            0            0/2,000     0.000%"]
    assert r.output.splitlines()[-1] == "kernel checked under the Triton interpreter: all 2 shapes passed"
    (proj / "launch.py").write_text(PAIR_PLAN.replace("(a, b, *out, n)", "(a, b, out[1], out[0], n)"))
    r = run("test", "--interpret", proj, "--problem", folder, "--shapes", "test:0")
    assert r.exit_code == 1
    assert r.output.splitlines()[-2].startswith(
        "n=256: out[0]: FAIL (rtol=0 atol=0, every element): 256/256 mismatched (100.0000%), max abs err ")


@pytest.mark.slow
def test_a_tuple_output_of_the_wrong_form_is_refused(tmp_path):
    folder = write_round(tmp_path, reference=PAIR_REFERENCE)
    proj = tmp_path / "pair"
    proj.mkdir()
    (proj / "pair.py").write_text(PAIR_KERNEL)
    wrong = {
        "out = (torch.empty_like(a), torch.empty_like(a), torch.empty_like(a))":
            "Error: plan(n=256) out: expected a tuple of 2 tensors (as ref_kernel returns), plan returns a "
            "tuple of 3\n",
        "out = (torch.empty_like(a), torch.empty_like(a, dtype=torch.float16))":
            "Error: plan(n=256) out[1]: expected dtype torch.float32, plan returns torch.float16\n",
        "out = (torch.empty_like(a), a)":
            "Error: plan(n=256) out[1]: shares input 0's storage (it is the input, a view or a set_ of it); "
            "return a tensor of its own\n",
    }
    for i, (line, want) in enumerate(wrong.items()):
        plan = PAIR_PLAN.replace("out = (torch.empty_like(a), torch.empty_like(a))", line)
        (proj / "launch.py").write_text(plan)
        r = run("build", folder, "--kernels", proj, "-o", tmp_path / f"sub{i}.py")
        assert (r.exit_code, r.output) == (1, want)
