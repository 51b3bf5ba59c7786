"""A cubin as the CUDA tools read it: an ``sm_90a`` cubin (nvcc 13 writes the same ``e_flags`` as
for ``sm_90``; its ``.nv.compat`` marks it) is ``sm_90a`` where ``cuobjdump -elf`` says
``sm=90a``, and a build for sm_90 takes it; no ``.nv.info`` record holds spill counts, so a kernel
ptxas reports spilling has them as not recorded (null, ``spills_recorded`` false, said in the
text), never 0; ``sgpr_count`` is null (NVIDIA has no SGPRs)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.readers.cuda.cubin import read_cubin
from submitgen.toolchain.cuda import find_nvcc

NVCC = find_nvcc()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found")
SRC = r"""
extern "C" __global__ void spill(float* out, int n) {
  float v[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) v[i] = out[i * n + threadIdx.x];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += v[i] * v[(i * 7) % 64];
  out[threadIdx.x] = s;
}
"""


def _cuobjdump() -> Path | None:
    try:
        import triton
    except ImportError:
        return None
    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def cubins(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    d = tmp_path_factory.mktemp("cubin")
    (d / "k.cu").write_text(SRC)
    out = {}
    for arch in ("sm_90", "sm_90a"):
        r = subprocess.run([str(NVCC), f"-arch={arch}", "-cubin", "-maxrregcount=32", "-Xptxas", "-v", "-o",
                            f"{arch}.cubin", "k.cu"], cwd=d, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[arch] = (d / f"{arch}.cubin", r.stdout + r.stderr)
    return out


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_the_processor_is_what_cuobjdump_reads(cubins, arch):
    path, _ = cubins[arch]
    co = read_cubin(path.read_bytes(), label=str(path))
    assert co.processor == arch and co.header.sm == 90
    assert co.target_id == f"nvptx-nvidia-cuda--{arch}"
    assert co.header_json()["architecture_specific"] == (arch == "sm_90a")
    tool = _cuobjdump()
    if tool is not None:
        head = subprocess.run([str(tool), "-elf", str(path)], capture_output=True, text=True,
                              check=True).stdout
        assert re.search(r"\bsm=(\w+),", head).group(1) == arch.removeprefix("sm_")


def test_spills_are_not_recorded_and_there_are_no_sgprs(cubins):
    path, ptxas = cubins["sm_90a"]
    stores = int(re.search(r"(\d+) bytes spill stores", ptxas).group(1))
    assert stores > 0  # ptxas spills this kernel
    r = subprocess.run([sys.executable, "-m", "submitgen", "inspect", "--json", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (co,) = json.loads(r.stdout)["code_objects"]
    assert co["processor"] == "sm_90a"
    (k,) = co["kernels"]
    assert k["sgpr_count"] is None and k["agpr_count"] is None
    assert k["vgpr_spill_count"] is None and k["sgpr_spill_count"] is None and k["spills_recorded"] is False
    text = subprocess.run([sys.executable, "-m", "submitgen", "inspect", str(path)], capture_output=True,
                          text=True, timeout=120).stdout
    flat = " ".join(text.split())
    assert "spills not recorded (ptxas -v prints them)" in flat and "sm_90a" in flat
