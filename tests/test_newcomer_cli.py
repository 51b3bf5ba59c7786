"""A newcomer's first minutes (issue 48, item 5): argument errors and --help answer before torch is
imported, --shapes takes only its documented words, and bench on a CPU stops at once for a submitgen
file whose pure-torch fallback it would not time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import toy_problem
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.problems import register, unregister

REPO = Path(__file__).resolve().parents[1]

_NO_TORCH = """
import json, sys
from click.testing import CliRunner
from submitgen.cli import cli
out = []
for args in json.loads(sys.argv[1]):
    r = CliRunner().invoke(cli, args, prog_name="submitgen")
    lines = r.output.splitlines()
    out.append([r.exit_code, lines[0] if r.exit_code == 0 else lines[-1]])
print(json.dumps({"results": out, "torch": "torch" in sys.modules}))
"""


def test_help_and_argument_errors_do_not_import_torch():
    cases = [["lint", "--help"], ["build", "mxfp4mm"], ["build"], ["test", "x.py", "--shapes", "tests"],
             ["bench", "x.py", "--shapes", "benchmarks:0"], ["test", "--help"]]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH, json.dumps(cases)], capture_output=True,
                          text=True, cwd=REPO, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["results"] == [
        [0, "Usage: submitgen lint [OPTIONS] FILE"],
        [1, "Error: unknown problem 'mxfp4mm': known problems are mxfp4-mm (amd-mxfp4-mm), mixed-mla "
            "(amd-mixed-mla), moe-mxfp4 (amd-moe-mxfp4)"],
        [2, "Error: name the problem: PROBLEM or --leaderboard NAME"],
        [2, "Error: Invalid value for '--shapes': 'tests': expected test, benchmark, all, or a subset like "
            "'test:0,1' or 'benchmark:0-2'"],
        [2, "Error: Invalid value for '--shapes': 'benchmarks:0': expected test, benchmark, all, or a subset "
            "like 'test:0,1' or 'benchmark:0-2'"],
        [0, "Usage: submitgen test [OPTIONS] FILE"],
    ]
    assert doc["torch"] is False


@pytest.fixture
def toy(monkeypatch):
    for name in ("SUBMITGEN_HIP_LIBRARY", "SUBMITGEN_CUDA_LIBRARY", "SUBMITGEN_HSA_LIBRARY"):
        monkeypatch.delenv(name, raising=False)
    register(toy_problem.PROBLEM)
    yield
    unregister("toy-add")


def test_bench_of_a_submitgen_file_on_a_cpu_stops_before_running(toy, tmp_path):
    sub = tmp_path / "sub.py"
    sub.write_text("#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\n"
                   "# submitgen-provenance: version=0.1.0 arch=gfx950\nimport torch\n\n\n"
                   "def custom_kernel(data):\n    raise SystemExit('ran')\n")
    result = CliRunner().invoke(cli, ["bench", str(sub), "--shape", "n=64,seed=1"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: bench {sub}: no GPU here, so this submitgen file would run its pure-torch fallback, which "
        f"bench does not time on a CPU: nothing was run. Check it with `submitgen test {sub}`, run bench "
        "where the leaderboard's GPU is, or pass --force to time the fallback on this CPU"]


def test_a_shape_is_limited_by_its_cpu_time_and_the_message_names_timeout(toy, tmp_path):
    sub = tmp_path / "sub.py"
    sub.write_text("#!POPCORN leaderboard amd-toy-add\n#!POPCORN gpu MI355X\nimport torch\n\n\n"
                   "def custom_kernel(data):\n    while True:\n        pass\n")
    result = CliRunner().invoke(cli, ["test", str(sub), "--shape", "n=64,seed=1", "--timeout", "2"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-2:] == [
        "n=64: timed out after 2 s of CPU time (shape n=64); --timeout SECONDS sets the limit",
        "FAILED: 1 of 1 shapes failed"]


def test_the_budget_tells_computing_from_waiting():
    from submitgen.evaluate.cpulimit import Budget

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(["sleep", "60"])
    try:
        from submitgen.evaluate.cpulimit import cpu_seconds

        while (cpu_seconds(busy.pid) or 0) < 0.1:  # started and computing
            time.sleep(0.05)
        budgets = [Budget(busy.pid, 0.5), Budget(idle.pid, 0.5)]
        reasons: list[str | None] = [None, None]
        for _ in range(600):
            reasons = [b.over() for b in budgets]
            if all(reasons):
                break
            time.sleep(0.1)
        assert reasons == ["timed out after 0.5 s of CPU time",
                           "timed out after 0.5 s of wall time waiting (asleep, not computing)"]
    finally:
        busy.kill()
        idle.kill()
        busy.wait()
        idle.wait()


def test_the_estimate_comes_from_the_shapes_sizes():
    from submitgen.evaluate.estimate import estimate_line
    from submitgen.problems import get_problem

    mla = get_problem("mixed-mla")
    assert estimate_line(mla, [dict(s) for s in mla.tests]) == (
        "expected without a GPU: about 89 s of CPU time and 9.7 GB of memory at the peak, from the shapes' "
        "input sizes (5.43 GB in all; the default build's test shapes took 89 s of CPU and 9.7 GB, 2-core "
        "x86, 2026-12-07); a loaded machine stretches the wall time, not the CPU time that --timeout limits")
    assert estimate_line(mla, [dict(mla.tests[0])]).startswith(
        "expected without a GPU: about 6 s of CPU time and 0.7 GB of memory at the peak, from the shapes' "
        "input sizes (0.01 GB in all; ")
    assert estimate_line(toy_problem.PROBLEM, [{"n": 64, "seed": 1}]) is None  # no measured rate



_KERNEL = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
           "def add_kernel(x_ptr, BLOCK: tl.constexpr):\n    pass\n")
_LAUNCH = ("import torch\n\nBLOCK = 256\nTRITON = {\n    'm': {\n"
           "        'source': 'k.py', 'kernel': 'add_kernel',\n"
           "        'signature': {'x_ptr': 'SIG', 'BLOCK': 'constexpr'},\n"
           "        'constexprs': {'BLOCK': VALUE},\n    },\n}\n\n\ndef plan(data):\n    return None\n")


@pytest.mark.parametrize("sig, value, message", [
    ("*bf61", "256", "Error: launch.py: TRITON['m']: signature['x_ptr'] is '*bf61', not a Triton type "
     "(a type of bf16, fp16, fp32, fp64, fp8e4nv, fp8e4b8, fp8e4b15, fp8e5, fp8e5b16, i1, i8, i16, i32, i64, "
     "u1, u8, u16, u32, u64, B, '*' before it for a pointer, ':16' after it for 16-byte alignment, or "
     "'constexpr')"),
    ("*fp32", "BLOCK", "Error: {proj}/launch.py:8: TRITON['m']['constexprs']['BLOCK'] must be a literal "
     "(plain data), not BLOCK"),
])
def test_a_launch_py_mistake_is_named_at_its_entry_by_build(tmp_path, sig, value, message):
    """Issue 48: a signature typo names launch.py's entry (not the kernel source), and a TRITON value
    that is not a literal is named by its key path and line (not by `TRITON = {`)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "k.py").write_text(_KERNEL)
    (proj / "launch.py").write_text(_LAUNCH.replace("SIG", sig).replace("VALUE", value))
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(proj), "-o", str(tmp_path / "s.py")],
                           prog_name="submitgen")
    assert (r.exit_code, r.output.splitlines()[-1]) == (1, message.replace("{proj}", str(proj)))
    assert not (tmp_path / "s.py").exists()
