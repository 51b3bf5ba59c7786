"""lint reads no tensor, so it imports no torch: the built-in problems' rows come from
registry.SHIPPED, and those rows are the imported specs' own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import kernelguard_line

from submitgen.problems import registry

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_rows_equal_the_imported_specs():
    shipped = [p for p in registry.problems() if p.module.startswith("submitgen.problems.")]
    assert list(registry.SHIPPED) == [registry._row(p) for p in shipped]  # both in the registry's order
    assert registry.leaderboards(load=False) == registry.leaderboards()


def _thousand_lines() -> str:
    lines = ["#!POPCORN leaderboard amd-moe-mxfp4", "#!POPCORN gpu MI355X", "import torch", ""]
    i = 0
    while len(lines) < 994:
        lines += [f"def f{i}(a, b):", f"    c = a + b * {i}",
                  f"    return f{i + 1}(c, a) if c > 0 else c", ""]
        i += 1
    lines += [f"def f{i}(a, b):", "    return a", "", "", "def custom_kernel(data):",
              "    data[0].add_(1)", "    return f0(data, 1)"]
    return "\n".join(lines) + "\n"


def test_lint_of_a_1000_line_file_imports_no_torch(tmp_path: Path):
    sub = tmp_path / "submission.py"
    sub.write_text(_thousand_lines())
    assert len(sub.read_text().splitlines()) == 1003
    script = (
        "import json, sys\n"
        "from click.testing import CliRunner\n"
        "from submitgen.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['lint', {str(sub)!r}])\n"
        "print(json.dumps([r.exit_code, r.output, 'torch' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    code, output, torch_loaded = json.loads(done.stdout)
    out = output.splitlines()
    assert code == 0
    assert out[0] == (
        f"{sub}:1002: warning: input-write [eval.py]: custom_kernel() writes into its input 'data' (calls "
        f"the "
        "in-place add_() on it): this leaderboard's evaluator passes the inputs without cloning them, "
        "and its reference then reads the changed tensors (fix: write results into a fresh tensor "
        "(torch.empty_like) and leave the inputs as they are)")
    assert out[1] == kernelguard_line(sub)
    assert out[2].startswith(f"{sub}: lint passed; estimated payload ")
    assert " chars for amd-moe-mxfp4 " in out[2]
    assert torch_loaded is False
