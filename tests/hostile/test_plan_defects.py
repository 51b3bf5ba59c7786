"""Every plan defect gives one `Error:` line naming the kernel, the item, what was expected and
what the plan gave, and writes nothing (cases in plan_cases.py). Also: a UTF-8 BOM is accepted,
and a plan that loops is stopped by --plan-timeout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from plan_cases import CASES, Case  # noqa: E402

PROJECT = HERE.parent / "projects" / "mm_basic"


def make_project(root: Path, name: str, plan: str, encoding: str = "utf-8") -> Path:
    project = root / name
    project.mkdir()
    (project / "mm.hip").write_bytes((PROJECT / "mm.hip").read_bytes())
    (project / "launch.py").write_bytes(plan.encode(encoding))
    return project


def build(root: Path, name: str, *extra: str):
    out = root / "submission.py"
    return CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", name, "-o", str(out), *extra]), out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan_defect_is_one_error_line(case: Case, tmp_path, monkeypatch):
    good = (PROJECT / "launch.py").read_text()
    assert good.count(case.old) == 1, f"{case.name}: the edit no longer applies to the test project's plan"
    make_project(tmp_path, case.name, good.replace(case.old, case.new), case.encoding)
    monkeypatch.chdir(tmp_path)
    r, out = build(tmp_path, case.name)
    assert r.output == f"Error: {case.error.replace('CASE', case.name)}\n"
    assert r.exit_code == 1
    assert not out.exists()


@pytest.mark.slow
def test_utf8_bom_is_accepted_and_not_embedded(tmp_path, monkeypatch):
    good = (PROJECT / "launch.py").read_text()
    make_project(tmp_path, "bom", "\ufeff" + good)
    monkeypatch.chdir(tmp_path)
    r, out = build(tmp_path, "bom")
    assert r.exit_code == 0, r.output
    text = out.read_text(encoding="utf-8")
    # the plan is embedded (its docstring as the emitted file's comment), and the BOM is not
    assert "\ufeff" not in text
    doc = "Plan of the test project: a split-K tile kernel and a reduce taking a struct by value."
    assert f"# {doc}\n" in text
    assert 'KERNELS = ("mm_tile", "mm_reduce")\n' in text


def test_a_plan_that_never_returns_is_stopped(tmp_path, monkeypatch):
    good = (PROJECT / "launch.py").read_text()
    make_project(tmp_path, "loops", good.replace("    m, k = a.shape\n", "    while True:\n        pass\n"))
    monkeypatch.chdir(tmp_path)
    r, out = build(tmp_path, "loops", "--plan-timeout", "2")
    assert r.output == ("Error: loops/launch.py: the plan did not finish within 2 s (--plan-timeout); a plan "
                        "looks at shapes only and returns at once\n")
    assert r.exit_code == 1 and not out.exists()


def test_a_plan_that_loops_at_import_is_stopped(tmp_path, monkeypatch):
    good = (PROJECT / "launch.py").read_text()
    make_project(tmp_path, "loops", good.replace("import torch\n", "import torch\n\nwhile True:\n    pass\n"))
    monkeypatch.chdir(tmp_path)
    r, _ = build(tmp_path, "loops", "--plan-timeout", "1.5")
    assert r.output.startswith(
        "Error: loops/launch.py: the plan did not finish within 1.5 s (--plan-timeout)"
    )
    assert r.exit_code == 1


def test_plan_timeout_must_be_positive(tmp_path):
    r, _ = build(tmp_path, str(PROJECT), "--plan-timeout", "0")
    assert r.exit_code == 2 and "--plan-timeout" in r.output
