"""The commands in examples/README.md work as written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.problems import get_problem
from submitgen.readers.amd.reader import read_code_object
from submitgen.readers.containers import load_code_objects
from submitgen.render import provenance
from submitgen.toolchain.compile import compile_sources

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.mark.slow
def test_own_kernel_project(tmp_path):
    out = tmp_path / "my_submission.py"
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(EXAMPLES / "my_gemm"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "my_gemm" in r.output and out.is_file()


def test_prebuilt_code_object_matches_its_source(tmp_path):
    shipped = read_code_object((EXAMPLES / "prebuilt" / "my_gemm.co").read_bytes(), label="my_gemm.co")
    fresh = read_code_object(compile_sources([EXAMPLES / "my_gemm" / "gemm.hip"], arch="gfx950").code_object)
    assert shipped.processor == fresh.processor == "gfx950"
    (a,), (b,) = shipped.kernels, fresh.kernels
    assert a.name == b.name == "my_gemm"
    assert [(x.offset, x.size, x.value_kind) for x in a.explicit_args] == \
           [(x.offset, x.size, x.value_kind) for x in b.explicit_args]


@pytest.mark.slow
def test_prebuilt_code_object_builds(tmp_path):
    out = tmp_path / "my_submission.py"
    r = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "prebuilt" / "my_gemm.co")])
    assert r.exit_code == 0 and "my_gemm" in r.output
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--co", str(EXAMPLES / "prebuilt" / "my_gemm.co"),
                                 "--kernels", str(EXAMPLES / "my_gemm"), "-o", str(out)])
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_triton_project_builds_and_inspects(tmp_path):
    out = tmp_path / "my_submission.py"
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(EXAMPLES / "triton_mxfp4_mm"),
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["inspect", str(out)])
    assert r.exit_code == 0, r.output
    assert "mxfp4_mm_kernel" in r.output


def _declared_kernels(project: Path) -> tuple[str, ...]:
    """KERNELS of a project's launch.py, read as data."""
    tree = ast.parse((project / "launch.py").read_text())
    (node,) = [n for n in tree.body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "KERNELS"]
    return ast.literal_eval(node.value)


@pytest.mark.slow
def test_hip_projects_build(tmp_path):
    """Each HIP example builds into a file that embeds one object holding every kernel its launch.py
    declares, records them in its provenance, and whose plan launches each of them over every
    shape of the problem (the summary's block column: 0 for a kernel the plan never launches)."""
    for problem, folder in (("mxfp4-mm", "hip_mxfp4_mm"), ("mixed-mla", "hip_mixed_mla")):
        out = tmp_path / f"{folder}.py"
        r = CliRunner().invoke(cli, ["build", problem, "--kernels", str(EXAMPLES / folder), "-o", str(out)])
        assert r.exit_code == 0, r.output
        kernels = _declared_kernels(EXAMPLES / folder)
        assert provenance.read(out.read_text()).kernels == kernels
        (embedded,) = load_code_objects(out)
        assert set(kernels) <= {k.name for k in embedded.read().kernels}
        rows = {cells[0]: cells for cells in map(str.split, r.output.splitlines())
                if cells and cells[0] in kernels}
        assert sorted(rows) == sorted(kernels)
        assert all(int(cells[6]) > 0 for cells in rows.values()), "a declared kernel the plan never launches"
        spec = get_problem(problem)
        shapes = len(spec.tests) + len(spec.benchmarks)
        assert re.search(rf"^  ok  plan: \d+ launches over {shapes} shapes match the metadata and limits$",
                         r.output, re.M)
