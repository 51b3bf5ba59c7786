"""The default amd-moe-mxfp4 Triton project run on the CPU by Triton's interpreter
(tests/moe_interpret.py, a process of its own), through its own launch plan, against the
reference: bit-identical."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.problems import moe_mxfp4 as moe
from submitgen.resources import kernels_dir

pytest.importorskip("triton")

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.parametrize(
    ("h", "d", "routed", "top_k", "bs"),
    [(256, 256, 8, 2, 8), (256, 512, 4, 2, 40)],
    ids=["one-tile", "row-splits"],
)
def test_interpreted_kernels_match_the_reference_exactly(h, d, routed, top_k, bs):
    spec = {
        "dhidden": h,
        "dexpert": d,
        "nroutedexperts": routed,
        "nexpertspertoken": top_k,
        "nsharedexperts": 1,
        "bs": bs,
        "seed": 17,
    }
    env = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent), env.get("PYTHONPATH")) if p)
    r = subprocess.run(
        [sys.executable, str(HERE / "moe_interpret.py"), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result == {
        "launches": ["route", "gate_up", "down", "to_bf16"],
        "equal": True,
        "max_abs_err": 0.0,
        "inputs_unchanged": True,
    }


def test_plan_grids_and_launch_names_on_every_listed_shape():
    spec = importlib.util.spec_from_file_location("moe_launch", kernels_dir() / "moe_mxfp4" / "launch.py")
    launch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch)
    for shape in (*moe.TESTS, *moe.BENCHMARKS):
        d = moe.dims(shape)
        _out, launches = launch.plan(moe.meta_input(shape))
        assert [name for name, *_ in launches] == ["route", "gate_up", "down", "to_bf16"]
        splits = min(launch.MAX_ROW_SPLITS, -(-d.tokens // launch.BM))
        assert launches[1][1] == (d.experts, d.expert // launch.BN_GATE_UP, splits)
        assert launches[2][1] == (d.experts, d.hidden // launch.BN_DOWN, splits)


def test_jit_submission_writer_renders_a_file_that_lints_clean(tmp_path):
    from submitgen.lint import lint_text

    sys.path.insert(0, str(HERE.parent / "benchmarks"))
    try:
        import moe_jit_submission
    finally:
        sys.path.remove(str(HERE.parent / "benchmarks"))
    text = moe_jit_submission.render()
    assert text.startswith("#!POPCORN leaderboard amd-moe-mxfp4\n#!POPCORN gpu MI355X\n")
    assert lint_text(text, path="moe_jit.py") == []
    path = tmp_path / "moe_jit.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("moe_jit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # @triton.jit reads the kernels' source from the file
    assert {"moe_gate_up", "moe_down", "plan", "_sg_fallback", "custom_kernel"} <= set(vars(module))
