"""``diff`` in text mode on cubins and on a submission that embeds one (what ``--target cuda``
builds hold): no AttributeError, each side labelled ``cubin``, occupancy "n/a"."""

from __future__ import annotations

import base64
import hashlib
import lzma
import subprocess

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.toolchain.cuda import find_nvcc

NVCC = find_nvcc()
SRC = r"""
extern "C" __global__ void __launch_bounds__(128) axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def cubin(tmp_path_factory):
    if NVCC is None:
        pytest.skip("nvcc not found")
    d = tmp_path_factory.mktemp("cubin")
    (d / "k.cu").write_text(SRC)
    subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-o", str(d / "k.cubin"), str(d / "k.cu")], check=True,
                   capture_output=True, timeout=300)
    return d / "k.cubin"


def test_diff_text_on_cubins(cubin):
    r = CliRunner().invoke(cli, ["diff", str(cubin), str(cubin), "--all"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    sha = hashlib.sha256(cubin.read_bytes()).hexdigest()[:16]
    assert f"nvptx-nvidia-cuda--sm_90, cubin, sha256 {sha}, 1 kernel" in r.output
    assert "kernels: 1 paired, 0 changed" in r.output and "no occupancy facts for this target" in r.output
    assert all(len(line) <= 100 for line in r.output.splitlines())


def test_diff_text_on_a_cuda_submission(cubin, tmp_path):
    sub = tmp_path / "submission.py"
    b64 = base64.b64encode(lzma.compress(cubin.read_bytes())).decode()
    sub.write_text(f'#!POPCORN leaderboard x\n#!POPCORN gpu H100\n_CUBIN = "{b64}"\n')
    r = CliRunner().invoke(
        cli, ["diff", str(sub), str(cubin), "--fail-on", "args,spills"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert "submission.py:3 (lzma+base64)" in r.output and "fail-on args,spills: passed" in r.output
