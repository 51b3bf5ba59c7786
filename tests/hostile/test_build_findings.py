"""``build --co`` refuses every error finding ``inspect`` prints and shows its warnings: a kernel
whose ``.symbol`` names another kernel's descriptor (launching it would run the other kernel's
code) and an ``amdhsa.target`` of gfx942 in a gfx950 ELF are errors, in inspect (exit 1) and in the
build (one ``Error:`` line, no file); a target that differs only in a feature is a warning the
build summary shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from elfedit import kernel_edit, with_metadata

SRC = r"""
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void k1(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i];
}
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void k2(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * a[i];
}
"""
PLAN = """\
import torch

KERNELS = ('k1',)


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [('k1', ((m * n + 255) // 256,), (256,), 0, (a, out, m * n))]
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)  # in-process (conftest.run_cli)


def _target(spelling: str):
    def edit(doc):
        doc["amdhsa.target"] = spelling
    return edit


@pytest.fixture(scope="module")
def good(compile_co) -> bytes:
    return compile_co(SRC)


def build(tmp: Path, image: bytes) -> tuple[subprocess.CompletedProcess, Path]:
    co, proj, out = tmp / "k.co", tmp / "proj", tmp / "s.py"
    co.write_bytes(image)
    proj.mkdir()
    (proj / "launch.py").write_text(PLAN)
    return cli("build", "mxfp4-mm", "--kernels", str(proj), "--co", str(co), "-o", str(out)), co


ERRORS = {
    "stolen-symbol": (kernel_edit("k1", symbol="k2.kd"),
                      "kernel 'k1'", ".symbol is 'k2.kd', expected 'k1.kd': the descriptor of kernel 'k2'"),
    "gfx942-in-gfx950": (_target("amdgcn-amd-amdhsa--gfx942"), None, "amdhsa.target is "
                         "'amdgcn-amd-amdhsa--gfx942', e_flags say 'amdgcn-amd-amdhsa--gfx950'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(ERRORS))
def test_inspect_and_build_refuse_the_error(case, good, tmp_path):
    edit, kernel, message = ERRORS[case]
    r, co = build(tmp_path, with_metadata(good, edit))
    assert r.returncode == 1
    assert r.stderr == f"Error: {co}: {kernel + ': ' if kernel else ''}{message}\n"
    assert not (tmp_path / "s.py").exists()
    i = cli("inspect", "--no-disasm", str(co))
    assert i.returncode == 1
    assert f"error: {message}" in " ".join(line.strip() for line in i.stdout.splitlines())


@pytest.mark.slow
def test_a_warning_is_shown_in_the_build_summary(good, tmp_path):
    r, co = build(tmp_path, with_metadata(good, _target("amdgcn-amd-amdhsa--gfx950:xnack+")))
    assert r.returncode == 0, r.stderr
    assert (f"  note: {co}: amdhsa.target is 'amdgcn-amd-amdhsa--gfx950:xnack+', e_flags say "
            "'amdgcn-amd-amdhsa--gfx950' (target-mismatch)") in r.stdout.splitlines()


@pytest.mark.slow
def test_an_object_without_findings_adds_no_note(good, tmp_path):
    r, co = build(tmp_path, good)
    assert r.returncode == 0, r.stderr
    assert str(co) not in r.stdout
