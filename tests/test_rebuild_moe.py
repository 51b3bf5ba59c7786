"""`submitgen build moe-mxfp4` (the default Triton project): a build with a cold compile cache and
one with the warm cache (no compile at all) write byte-identical files, the plan the build
checked ran on every test and benchmark shape of the problem, and lint finds no input write in
the file (its plan writes into workspaces and the output only)."""

from __future__ import annotations

import pytest

from submitgen.lint import lint_report
from submitgen.pipeline import BuildOptions, build
from submitgen.problems import get_problem
from submitgen.toolchain import triton_worker

pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")


@pytest.mark.slow
def test_cold_and_warm_cache_builds_are_byte_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    cold = build(BuildOptions(problem="moe-mxfp4", output=tmp_path / "cold.py"))
    assert sorted(p.suffix for p in (tmp_path / "cache" / "triton").iterdir()) == [".bin"] * 6 + [".json"] * 6

    def no_compile(*args, **kwargs):
        raise AssertionError("the warm build compiled a specialization")

    monkeypatch.setattr(triton_worker, "compile_in_child", no_compile)
    warm = build(BuildOptions(problem="moe-mxfp4", output=tmp_path / "warm.py"))
    assert warm.output.read_bytes() == cold.output.read_bytes()
    assert [w for w in lint_report(cold.text).warnings if w.rule == "input-write"] == []

    problem = get_problem("moe-mxfp4")
    assert cold.plan.shapes == len(problem.tests) + len(problem.benchmarks) == 10
    labels = [problem.shape_label(s) for s in (*problem.tests, *problem.benchmarks)]
    per_shape = {}
    for launch in cold.plan.launches:
        per_shape.setdefault(launch.shape, []).append(launch.kernel)
    assert list(per_shape) == labels
    assert {tuple(k) for k in per_shape.values()} == {
        ("route", "gate_up_s", "down_s", "to_bf16"),
        ("route", "gate_up_l", "down_l", "to_bf16"),
    }
