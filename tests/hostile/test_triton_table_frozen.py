"""What a plan launches with is what was compiled: the TRITON table the plan reads is a read-only
copy (runtime/pack.py's sg_frozen), at build time and in the emitted file, and a plan that
rebinds or deletes TRITON is refused before it runs. (A plan that set BLOCK_M = 64 at run time
launched 1 row tile instead of 4 for a kernel compiled with BLOCK_M = 16.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Forked

from submitgen.cli import cli

PROJECT = Path(__file__).resolve().parent.parent / "projects" / "triton_fill"
REPO = Path(__file__).resolve().parents[2]
RETURN = "    return out, ["


def project(tmp_path: Path, old: str = "", new: str = "") -> str:
    shutil.copytree(PROJECT, tmp_path / "fill")
    plan = tmp_path / "fill" / "launch.py"
    text = plan.read_text()
    if old:
        assert text.count(old) == 1
        plan.write_text(text.replace(old, new))
    return "fill"


def build(tmp_path: Path, name: str):
    return CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", str(tmp_path / "s.py")])


def test_a_plan_that_changes_a_constexpr_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = project(tmp_path, RETURN, '    TRITON["fill_1024"]["constexprs"]["BLOCK"] = 256\n' + RETURN)
    r = build(tmp_path, name)
    assert (r.exit_code, r.output) == (
        1, "Error: plan(m=8 n=2112 k=7168) raised TypeError: 'mappingproxy' object does not support item "
           "assignment\n")
    assert not (tmp_path / "s.py").exists()


@pytest.mark.parametrize(
    ("new", "error"),
    [
        ("    global TRITON\n", "fill/launch.py:16: the plan declares 'global TRITON'; TRITON is what was "
                                  "compiled, read it only"),
        ("TRITON = {}\n", "fill/launch.py:14: the plan assigns TRITON again; TRITON is what was compiled, "
                          "read it only"),
        ("del TRITON\n", "fill/launch.py:14: the plan deletes TRITON; TRITON is what was compiled, read it "
                          "only"),
    ],
)
def test_a_plan_that_rebinds_triton_is_refused(tmp_path, monkeypatch, new, error):
    monkeypatch.chdir(tmp_path)
    old = "def plan(data):\n" if new.startswith(" ") else "\n\ndef plan(data):\n"
    repl = "def plan(data):\n" + new if new.startswith(" ") else "\n" + new + "\ndef plan(data):\n"
    name = project(tmp_path, old, repl)
    r = build(tmp_path, name)
    assert (r.exit_code, r.output) == (1, f"Error: {error}\n")


@pytest.mark.slow
def test_the_emitted_file_holds_the_table_read_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = build(tmp_path, project(tmp_path))
    assert r.exit_code == 0, r.output
    text = (tmp_path / "s.py").read_text()
    assert "TRITON = sg_frozen({" in text
    probe = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('sub', {str(tmp_path / 's.py')!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        # the emitted TRITON holds only the keys the plan names (project/plan_view.py); whatever
        # it holds is read-only, the entries and the table itself
        "assert 'fill_1024' in mod.TRITON\n"
        "for where, table in (('entry', mod.TRITON['fill_1024']), ('table', mod.TRITON)):\n"
        "    try:\n        table['BLOCK'] = 64\n"
        "    except TypeError as e:\n        print(where, 'refused:', e)\n"
    )
    out = Forked(lambda: exec(probe, {"__name__": "__main__"}), ["-c"], cwd=tmp_path,
                 env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}).wait(300)
    refused = "refused: 'mappingproxy' object does not support item assignment"
    assert out.stdout.splitlines() == [f"entry {refused}", f"table {refused}"], out.stderr
