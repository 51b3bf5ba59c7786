"""A newcomer's first minutes (issue 48, item 5): argument errors and --help answer before torch is
imported, --shapes takes only its documented words, and bench on a CPU stops at once for a submitgen
file whose pure-torch fallback it would not time."""

from __future__ import annotations

import json
import subprocess
import sys
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
