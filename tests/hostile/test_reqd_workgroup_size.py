"""``.reqd_workgroup_size`` is shown by ``inspect`` (text and JSON, and it is the block the
occupancy is estimated for), and ``build --co`` holds the plan's block to it: an OpenCL kernel
compiled here with ``reqd_work_group_size(64, 2, 1)`` builds when the plan launches (64, 2, 1), and
a plan launching (128, 1, 1), the same number of threads, is refused with one exact error."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import compile_opencl, run_cli

SRC = """
__attribute__((reqd_work_group_size(64, 2, 1)))
kernel void k(global float* y, int n) { int i = __builtin_amdgcn_workitem_id_x(); if (i < n) y[i] = 1.0f; }
"""
PLAN = """\
import torch

KERNELS = ('k',)


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [('k', ((m * n + 127) // 128,), BLOCK, 0, (out, m * n))]
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)  # in-process (conftest.run_cli)


@pytest.fixture(scope="module")
def co(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("reqd")
    path = d / "r.co"
    path.write_bytes(compile_opencl(SRC, "gfx950", d))
    return path


def test_inspect_shows_it(co):
    text = cli("inspect", "--no-disasm", str(co)).stdout
    flat = " ".join(text.split())
    assert "required block (64, 2, 1)" in flat and "occupancy on gfx950, block 128:" in flat
    (obj,) = json.loads(cli("inspect", "--json", "--no-disasm", str(co)).stdout)["code_objects"]
    (k,) = obj["kernels"]
    assert k["reqd_workgroup_size"] == [64, 2, 1] and k["occupancy"]["block_size"] == 128


@pytest.mark.slow
@pytest.mark.parametrize("block,error", [((64, 2, 1), None), ((128, 1, 1), "(128, 1, 1)")])
def test_the_build_holds_the_plan_block_to_it(co, tmp_path, block, error):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "launch.py").write_text(PLAN.replace("BLOCK", repr(block)))
    r = cli("build", "mxfp4-mm", "--kernels", str(proj), "--co", str(co), "-o", str(tmp_path / "s.py"))
    if error is None:
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 1 and not (tmp_path / "s.py").exists()
    assert re.fullmatch(r"Error: kernel 'k' \([^)]*\): \.reqd_workgroup_size is \(64, 2, 1\), "
                        r"plan launches block \(128, 1, 1\)\n", r.stderr), r.stderr
