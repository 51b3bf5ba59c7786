"""A kernel declared without extern "C" has a C++-mangled symbol: the build's missing-kernel error
says which symbol it is and suggests extern "C" (issue 28, item 3)."""

from __future__ import annotations

from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.project.launches import missing_kernels_error

GEMM = """\
__attribute__((global)) void hip_gemm(const unsigned short* a, const unsigned char* b, const unsigned char* s,
                                      unsigned short* out, int m, int n, int k) {
  if (m > 0) out[0] = a[0] + b[0] + s[0] + n + k;
}
"""

LAUNCH = """\
import torch

KERNELS = ("hip_gemm",)


def plan(data):
    a = data[0]
    out = torch.empty((a.shape[0], data[1].shape[0]), dtype=torch.bfloat16, device=a.device)
    return out, [("hip_gemm", (1, 1, 1), (64, 1, 1), 0, (a, data[2], data[4], out, 1, 1, 1))]
"""


def test_a_mangled_kernel_name_gets_the_extern_c_hint(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "gemm.hip").write_text(GEMM)
    (project / "launch.py").write_text(LAUNCH)
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "s.py"
    r = CliRunner().invoke(cli, ["build", "mxfp4-mm", "--kernels", str(project), "-o", str(out)])
    assert (r.exit_code, r.output) == (1, (
        "Error: KERNELS names 'hip_gemm', which the code object does not have (it has: "
        "_Z8hip_gemmPKtPKhS2_Ptiii); 'hip_gemm' is there only as the C++-mangled symbol "
        '_Z8hip_gemmPKtPKhS2_Ptiii: declare the kernel extern "C" (extern "C" __global__ void ...) so that '
        "its symbol is its name\n"))
    assert not out.exists()


def test_the_hint_needs_the_whole_length_prefixed_name():
    # '18hip_gemm...' is an 18-character name that starts with hip_gemm, not hip_gemm itself
    assert str(missing_kernels_error(["hip_gemm"], ["_Z18hip_gemm_variant_oPf"])) == (
        "KERNELS names 'hip_gemm', which the code object does not have (it has: _Z18hip_gemm_variant_oPf)")
    assert str(missing_kernels_error(["gemm"], ["_ZN2ns4gemmEPf", "other"])) == (
        "KERNELS names 'gemm', which the code object does not have (it has: _ZN2ns4gemmEPf, other); 'gemm' "
        'is there only as the C++-mangled symbol _ZN2ns4gemmEPf: declare the kernel extern "C" '
        '(extern "C" __global__ void ...) so that its symbol is its name')
