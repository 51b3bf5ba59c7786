"""Toolchain discovery, compiling (HIP, OpenCL C, assembly, several sources), errors, the cache,
the device header (bundled clang, nvcc, host numerics) and the `toolchain`/`compile` commands."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen import toolchain
from submitgen.cli import cli
from submitgen.errors import CompileError, ToolchainError
from submitgen.files import device_include_dir
from submitgen.readers.amd.reader import read_code_object
from submitgen.toolchain import discovery
from submitgen.toolchain.compile import compile_sources
from submitgen.toolchain.cuda import compile_cuda, find_nvcc
from submitgen.toolchain.discovery import describe_extras, discover, format_table, select_toolchain

REPO = Path(__file__).resolve().parent.parent

HIP = """\
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void add_kernel(float* out, const float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 1.0f;
}
"""
CL = """\
__kernel void cl_scale(__global float* a, float s) { a[get_global_id(0)] *= s; }
"""
ASM = """\
\t.text
\t.globl\tasm_kernel
\t.p2align\t8
\t.type\tasm_kernel,@function
asm_kernel:
\ts_load_dwordx2 s[0:1], s[0:1], 0x0
\tv_mov_b32_e32 v0, 0
\tv_mov_b32_e32 v1, 42
\ts_waitcnt lgkmcnt(0)
\tglobal_store_dword v0, v1, s[0:1]
\ts_endpgm
.Lend:
\t.size\tasm_kernel, .Lend-asm_kernel
\t.rodata
\t.p2align\t6
\t.amdhsa_kernel asm_kernel
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t\t.amdhsa_kernarg_size 8
\t\t.amdhsa_next_free_vgpr 2
\t\t.amdhsa_next_free_sgpr 2
\t\t.amdhsa_accum_offset 4
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: asm_kernel
    .symbol: asm_kernel.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 2
    .max_flat_workgroup_size: 64
    .args:
      - { .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
...
\t.end_amdgpu_metadata
"""
MFMA_SCALE = """\
#include <submitgen/device.h>
typedef float v4f __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));
extern "C" __global__ SG_LAUNCH_BOUNDS(64) void mxfp4_mfma(const v8i* a, const v8i* b, v4f* c,
                                                           const uint8_t* sa, const uint8_t* sb) {
  int l = threadIdx.x;
  c[l] = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a[l], b[l], c[l], 4, 4, 0, sa[l], 0, sb[l]);
}
"""
# Uses every part of device.h; must build with the bundled clang and with nvcc.
DEVICE_H_ALL = """\
#include <submitgen/device.h>
extern __shared__ float sg_dyn[];
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void all_kernel(const uint8_t* a, const sg_bf16* b, sg_bf16* out,
                                                             float* acc, uint32_t n) {
  __shared__ float tile[256];
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int nb = gridDim.x + gridDim.y + gridDim.z + blockIdx.y + blockIdx.z + threadIdx.y + threadIdx.z
                  + blockDim.y + blockDim.z;
  float v = 0.f;
  if (i < n) {
    v = sg_fp8e4m3_to_float(a[i]) * sg_e8m0_to_float(a[i] ^ 0x7f) + sg_fp4e2m1_to_float(a[i] & 0xf)
      + sg_bf16_to_float(b[i]);
    v += sg_fp4e2m1_to_float(sg_float_to_fp4e2m1(v));
  }
  tile[threadIdx.x] = v;
  sg_dyn[threadIdx.x] = v * 2.f;
  __syncthreads();
  float w = tile[(threadIdx.x + 1) % 256] + sg_dyn[threadIdx.x ^ 1];
  for (int m = SG_WARP_SIZE / 2; m > 0; m >>= 1) w = sg_fmaxf(w, sg_shfl_xor(w, m));
  w = sg_expf(w) + sg_exp2f(w) + sg_rsqrtf(w + 1.f) + (float)nb + (float)sg_lane_id();
  if (i < n) out[i] = sg_float_to_bf16(w);
  sg_atomic_add_f32(acc, w);
}
extern "C" __global__ __launch_bounds__(128) void lb_kernel(float* p) { p[threadIdx.x] = 1.f; }
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def zig() -> str:
    z = discovery.bundled_zig()
    assert z is not None, "tests need the ziglang wheel"
    return str(z)


# ---------------------------------------------------------------------------------- discovery


def test_discovery_order_with_fake_rocm_and_path_clang(tmp_path, monkeypatch):
    rocm = tmp_path / "rocm"
    script(rocm / "llvm" / "bin" / "clang", f'exec "{zig()}" clang "$@"\n')
    script(rocm / "llvm" / "bin" / "ld.lld", f'exec "{zig()}" ld.lld "$@"\n')
    # an old clang on PATH: answers --version, cannot build gfx950 (like Debian's clang 14)
    bindir = tmp_path / "bin"
    script(
        bindir / "clang",
        'case "$*" in *--version*) echo "clang version 14.0.6";; '
        '*) echo "clang: error: unsupported CUDA gpu architecture: gfx950" >&2; exit 1;; esac\n',
    )
    script(bindir / "ld.lld", "echo LLD 14\n")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    monkeypatch.setattr(discovery, "ROCM_DEFAULT", tmp_path / "no-rocm")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    found = discover(arches=("gfx950",))
    assert [t.origin for t in found] == ["rocm", "path", "bundled"]
    rocm_tc, path_tc, bundled = found
    assert rocm_tc.hip == (str(rocm / "llvm" / "bin" / "clang"),) and not rocm_tc.bare
    assert rocm_tc.version == "clang version 22.1.8" and rocm_tc.arches == ("gfx950",)
    assert path_tc.version == "clang version 14.0.6" and path_tc.arches == ()
    assert "unsupported" in dict(path_tc.probe_errors)["gfx950"]
    assert bundled.bare and bundled.arches == ("gfx950",)
    # the first that can build the arch wins; an explicit compiler comes before everything
    assert select_toolchain("gfx950").origin == "rocm"
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "nothing"))
    assert select_toolchain("gfx950").origin == "bundled"  # the old PATH clang is skipped
    with pytest.raises(ToolchainError, match=r"clang version 14.0.6\) cannot build for gfx950"):
        select_toolchain("gfx950", compiler=str(bindir / "clang"))


def test_a_probe_that_crashed_is_not_remembered(tmp_path, _cache):
    """A compiler that died by a signal (zig's clang under a tiny memory limit does) gave no
    answer: the next run asks again, instead of every later build failing on a cached crash
    (stop 32's CI: one budget test poisoned the tools cache for the 80 tests after it)."""
    flag = tmp_path / "crash-once"
    flag.write_text("")
    hip = script(tmp_path / "bin" / "clang",
                 f'case "$*" in *--version*) exec "{zig()}" clang "$@";; esac\n'
                 f'if [ -e "{flag}" ]; then kill -SEGV $$; fi\nexec "{zig()}" clang "$@"\n')
    script(tmp_path / "bin" / "ld.lld", f'exec "{zig()}" ld.lld "$@"\n')
    with pytest.raises(ToolchainError, match=r"cannot build for gfx950: killed by signal 11$"):
        select_toolchain("gfx950", compiler=str(hip))
    assert not list((_cache / "tools").glob("*.json"))
    flag.unlink()
    assert select_toolchain("gfx950", compiler=str(hip)).arches == ("gfx950",)
    assert [json.loads(p.read_text())["probes"] for p in (_cache / "tools").glob("*.json")] == [
        {"gfx950": ""}]


def test_a_child_of_a_budgeted_command_gets_the_limits_from_before_it(monkeypatch):
    """The budget bounds submitgen's own process; a compiler it starts gets the old limits back."""
    import resource

    from submitgen import system as budgets
    from submitgen.system import run_tool

    monkeypatch.setattr(budgets, "_owned", True)
    monkeypatch.setenv("SUBMITGEN_TEST_BUDGET_MB", "8192")
    before = resource.getrlimit(resource.RLIMIT_DATA)[0]
    show = [sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_DATA)[0])"]
    with budgets.enforced("compile", ("x",)):
        assert resource.getrlimit(resource.RLIMIT_DATA)[0] == 8192 << 20
        assert int(run_tool(show).stdout) == before
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] == before


def test_missing_compiler_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setattr(discovery, "bundled_zig", lambda: None)
    monkeypatch.setattr(discovery, "ROCM_DEFAULT", tmp_path / "no-rocm")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match=r"pip install 'submitgen\[toolchain\]'.*ROCm"):
        compile_sources([write(tmp_path, "k.hip", HIP)])
    r = CliRunner().invoke(cli, ["compile", str(tmp_path / "k.hip"), "-o", str(tmp_path / "k.co")])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "Error: no AMDGPU compiler found" in r.output and "submitgen[toolchain]" in r.output
    with pytest.raises(ToolchainError, match="not found"):
        select_toolchain("gfx950", compiler=str(tmp_path / "nope-clang"))


# ---------------------------------------------------------------------------------- compiling


def kernels_of(data: bytes, arch: str) -> list[str]:
    co = read_code_object(data, label="test")
    assert co.header.processor == arch and co.header.elf_type == "ET_DYN"
    assert all(k.symbol == f"{k.name}.kd" and k.descriptor is not None for k in co.kernels)
    return sorted(k.name for k in co.kernels)


@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
def test_compile_each_language_and_several_sources(tmp_path, arch):
    hip, cl, asm = write(tmp_path, "a.hip", HIP), write(tmp_path, "b.cl", CL), write(tmp_path, "c.s", ASM)
    r = compile_sources([hip], arch=arch)
    assert kernels_of(r.code_object, arch) == ["add_kernel"] == list(r.kernels)
    assert not r.cache_hit and r.toolchain.origin == "bundled"
    assert device_include_dir() / "submitgen" / "device.h" in r.headers
    assert kernels_of(compile_sources([cl], arch=arch).code_object, arch) == ["cl_scale"]
    assert kernels_of(compile_sources([asm], arch=arch).code_object, arch) == ["asm_kernel"]
    # several sources: one module (LTO), one metadata note, every kernel in it
    both = compile_sources([hip, cl], arch=arch)
    assert kernels_of(both.code_object, arch) == ["add_kernel", "cl_scale"]
    assert any("-plugin-opt=mcpu=" + arch in c for c in both.commands)
    with pytest.raises(CompileError, match="assembly source .* cannot be linked with other sources"):
        compile_sources([hip, asm], arch=arch)


def test_options_reach_the_compiler(tmp_path):
    src = write(tmp_path, "k.hip", '#include "extra.h"\n#ifndef SCALE\n#error SCALE missing\n#endif\n' + HIP)
    write(tmp_path / "inc", "extra.h", "#define SCALE 2\n")
    r = compile_sources([src], include_dirs=[tmp_path / "inc"], defines=["OTHER=1"], opt="2",
                                  code_object_version=5, extra_flags=["-ffast-math"])
    co = read_code_object(r.code_object, label="k")
    assert co.header.code_object_version == 5
    assert (tmp_path / "inc" / "extra.h").absolute() in r.headers
    cmd = r.commands[0]
    assert "-O2" in cmd and "-DOTHER=1" in cmd and "-ffast-math" in cmd and "-mcode-object-version=5" in cmd
    with pytest.raises(CompileError, match="code object version 3 is not supported"):
        compile_sources([src], code_object_version=3)
    with pytest.raises(CompileError, match="unknown source type '.txt'"):
        compile_sources([write(tmp_path, "k.txt", "")])


def test_syntax_error_reports_file_line_and_compiler_message(tmp_path):
    src = write(tmp_path, "bad.hip", HIP.replace("out[i] = a[i] + 1.0f;", "out[i] = a[i] + undefined_thing;"))
    with pytest.raises(CompileError) as e:
        compile_sources([src])
    msg = str(e.value)
    assert f"{src}:4:" in msg and "use of undeclared identifier 'undefined_thing'" in msg
    assert "errors generated" not in msg and "Traceback" not in msg
    assert e.value.file == str(src) and e.value.line == 4
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "bad.co")])
    assert r.exit_code == 1 and f"Error: compiling {src} for gfx950 failed at {src}:4" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "bad.co").exists()


def test_mfma_scale_builds_for_gfx950_and_clearly_not_for_gfx942(tmp_path):
    src = write(tmp_path, "mfma.hip", MFMA_SCALE)
    r = compile_sources([src], arch="gfx950", extra_flags=["-save-temps=obj"], use_cache=False)
    assert kernels_of(r.code_object, "gfx950") == ["mxfp4_mfma"]
    with pytest.raises(CompileError) as e:
        compile_sources([src], arch="gfx942")
    msg = str(e.value)
    assert "for gfx942 failed" in msg and "__builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4" in msg
    assert "needs target feature gfx950-insts" in msg


# ---------------------------------------------------------------------------------- cache


def test_cache_hit_header_change_and_no_cache(tmp_path, _cache):
    write(tmp_path, "my.h", "#define BIAS 1.0f\n")
    src = write(tmp_path, "k.hip", '#include "my.h"\n' + HIP.replace("+ 1.0f", "+ BIAS"))
    first = compile_sources([src])
    again = compile_sources([src])
    assert not first.cache_hit and again.cache_hit
    assert again.code_object == first.code_object and again.sha256 == first.sha256
    assert again.commands == first.commands and again.kernels == ("add_kernel",)
    write(tmp_path, "my.h", "#define BIAS 2.0f\n")  # only the header changes
    changed = compile_sources([src])
    assert not changed.cache_hit and changed.sha256 != first.sha256
    assert compile_sources([src]).cache_hit
    other_flags = compile_sources([src], defines=["X=1"])
    assert not other_flags.cache_hit
    before = sorted(p.name for p in (_cache / "objects").iterdir())
    fresh = compile_sources([src], use_cache=False)
    assert not fresh.cache_hit and fresh.sha256 == changed.sha256
    assert sorted(p.name for p in (_cache / "objects").iterdir()) == before
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "a.co")])
    assert r.exit_code == 0 and "cached" in r.output
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "b.co"), "--no-cache"])
    assert r.exit_code == 0 and "compiled" in r.output
    assert (tmp_path / "a.co").read_bytes() == (tmp_path / "b.co").read_bytes()


def test_corrupt_cache_entry_is_rebuilt(tmp_path, _cache):
    src = write(tmp_path, "k.hip", HIP)
    first = compile_sources([src])
    for p in (_cache / "objects").glob("*.co"):
        p.write_bytes(b"garbage")
    again = compile_sources([src])
    assert not again.cache_hit and again.code_object == first.code_object


def test_two_processes_writing_one_entry(tmp_path, _cache):
    src = write(tmp_path, "k.hip", HIP)
    code = ("from submitgen.toolchain.compile import compile_sources; "
            f"print(compile_sources([{str(src)!r}]).sha256)")
    env = {**os.environ, "SUBMITGEN_CACHE_DIR": str(_cache), "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0] == outs[1] and len(outs[0]) == 64
    hit = compile_sources([src])
    assert hit.cache_hit and hit.sha256 == outs[0]
    leftovers = [p for p in _cache.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


# ---------------------------------------------------------------------------------- device header


@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
def test_device_header_builds_with_bundled_clang(tmp_path, arch):
    r = compile_sources(
        [write(tmp_path, "all.hip", DEVICE_H_ALL)], arch=arch, extra_flags=["-Werror", "-Wall"]
    )
    co = read_code_object(r.code_object, label="all")
    ks = {k.name: k for k in co.kernels}
    assert sorted(ks) == ["all_kernel", "lb_kernel"]
    assert ks["all_kernel"].max_flat_workgroup_size == 256 and ks["lb_kernel"].max_flat_workgroup_size == 128
    assert ks["all_kernel"].group_segment_fixed_size == 1024  # the static __shared__ tile
    assert any(a.value_kind == "hidden_dynamic_lds_size" for a in ks["all_kernel"].args) or \
        co.header.code_object_version < 6


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not installed")
def test_device_header_builds_with_nvcc(tmp_path):
    cubin = compile_cuda([write(tmp_path, "all.cu", DEVICE_H_ALL)], arch="sm_90")
    assert cubin[:4] == b"\x7fELF" and b"all_kernel" in cubin and b"lb_kernel" in cubin


HOST_HARNESS = r"""
#include <submitgen/device.h>
#include <stdio.h>
int main(void) {
  for (unsigned i = 0; i < 65536; i += 1) printf("%08x\n", sg_f32_bits(sg_bf16_to_float((sg_bf16)i)));
  for (unsigned i = 0; i < 256; i++) printf("%08x\n", sg_f32_bits(sg_fp8e4m3_to_float((uint8_t)i)));
  for (unsigned i = 0; i < 16; i++) printf("%08x\n", sg_f32_bits(sg_fp4e2m1_to_float((uint8_t)i)));
  for (unsigned i = 0; i < 256; i++) printf("%08x\n", sg_f32_bits(sg_e8m0_to_float((uint8_t)i)));
  float x;
  while (scanf("%a", &x) == 1) printf("%04x %x\n", sg_float_to_bf16(x), sg_float_to_fp4e2m1(x));
  return 0;
}
"""


def _host_cxx() -> list[str] | None:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return [name]
    z = discovery.bundled_zig()
    return [str(z), "c++"] if z else None


@pytest.mark.skipif(_host_cxx() is None, reason="no host C++ compiler")
def test_device_header_conversions_match_torch(tmp_path):
    import torch

    exe = tmp_path / "harness"
    write(tmp_path, "harness.cpp", HOST_HARNESS)
    subprocess.run([*_host_cxx(), "-std=c++17", "-O1", "-Wall", "-Werror", f"-I{device_include_dir()}",
                    str(tmp_path / "harness.cpp"), "-o", str(exe)], check=True, capture_output=True)
    g = torch.Generator().manual_seed(0)
    probes = torch.cat([
        torch.randn(4000, generator=g) * 4,
        torch.tensor([0.0, -0.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -5.0, 5.5, 6.0, 7.0, -100.0,
                      float("inf"), float("-inf"), 1e-40, 3.0e38, 1.00390625, 1.01171875, -1.00390625]),
        (torch.arange(0, 1 << 16, dtype=torch.int32) << 16 | 0x8000).view(torch.float32)[::7],  # bf16 ties
    ]).to(torch.float32)
    probes = probes[torch.isfinite(probes) | torch.isinf(probes)]
    stdin = "".join(f"{v.hex()}\n" for v in probes.tolist())
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )

    def as_f32(lines):
        ints = torch.tensor([int(s, 16) for s in lines], dtype=torch.int64)
        return ints.to(torch.int32).view(torch.float32)

    bf16 = as_f32(out[0:65536])
    ref = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
    assert torch.equal(bf16.nan_to_num(7.0), ref.nan_to_num(7.0))
    fp8 = as_f32(out[65536:65792])
    ref8 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    assert torch.equal(fp8.isnan(), ref8.isnan()) and torch.equal(fp8.nan_to_num(7.0), ref8.nan_to_num(7.0))
    assert torch.equal(torch.signbit(fp8), torch.signbit(ref8))
    fp4 = as_f32(out[65792:65808])
    table = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert fp4.tolist() == table + [-v for v in table] and torch.signbit(fp4[8])
    e8 = as_f32(out[65808:66064])
    assert torch.isnan(e8[255]) and torch.equal(
        e8[:255], torch.pow(2.0, torch.arange(255, dtype=torch.float64) - 127).float()
    )

    pairs = [ln.split() for ln in out[66064:] if ln]
    assert len(pairs) == len(probes)
    got_bf16 = (
        torch.tensor([int(a, 16) for a, _ in pairs], dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    )
    ref_bf16 = probes.to(torch.bfloat16)
    assert torch.equal(got_bf16.float(), ref_bf16.float())
    # fp4: nearest of the table, ties to the even code, saturating at 6
    vals = torch.tensor(table)
    mag = probes.abs().clamp(max=6.0)
    dist = (mag[:, None] - vals[None, :]).abs()
    best = dist.min(dim=1, keepdim=True).values
    cands = (dist == best)
    code = torch.where(cands & (torch.arange(8) % 2 == 0), torch.arange(8), 99).min(dim=1).values
    code = torch.where(cands.sum(1) > 1, code, dist.argmin(dim=1))
    ref_fp4 = code | (torch.signbit(probes).to(torch.int64) << 3)
    got_fp4 = torch.tensor([int(b, 16) for _, b in pairs])
    assert torch.equal(got_fp4, ref_fp4)


# ---------------------------------------------------------------------------------- CLI


def test_cli_toolchain_table_and_json():
    r = CliRunner().invoke(cli, ["toolchain"])
    assert r.exit_code == 0, r.output
    header, first = r.output.splitlines()[:2]
    assert header.split()[:2] == ["#", "origin"] and "gfx950" in header and "gfx942" in header
    assert "bundled" in r.output and "clang version 22" in r.output
    text = r.output
    r = CliRunner().invoke(cli, ["toolchain", "--json"])
    data = json.loads(r.output)
    bundled = [t for t in data["toolchains"] if t["origin"] == "bundled"][0]
    assert bundled["arches"] == ["gfx942", "gfx950"] and bundled["version"].startswith("clang version")
    assert bundled["linker"][-1] == "ld.lld"
    extras = describe_extras()
    assert data["triton"] == extras["triton"] and data["hipheaders"] == extras["hipheaders"]
    if extras["triton"]:
        assert f"triton: {extras['triton']['version']} (gfx950, gfx942, sm_90)" in text
    else:
        assert "triton: not installed (pip install 'submitgen[triton]')" in text


def test_toolchain_table_names_missing_extras(monkeypatch):
    from submitgen.toolchain import hipheaders, triton

    monkeypatch.setattr(hipheaders, "find_hip_headers", lambda: None)
    monkeypatch.setattr(triton.importlib.util, "find_spec", lambda name: None)
    lines = format_table(()).splitlines()
    assert lines == ["no AMDGPU compiler found; " + toolchain.discovery.INSTALL_HINT,
                     "triton: not installed (pip install 'submitgen[triton]')",
                     "HIP headers without ROCm: not installed (pip install 'submitgen[hipheaders]')"]


def test_cli_compile_with_options_and_extra_flags(tmp_path):
    src = write(tmp_path, "k.hip", HIP.replace("1.0f", "BIAS"))
    out = tmp_path / "k.co"
    r = CliRunner().invoke(
        cli,
        [
            "compile",
            str(src),
            "--arch",
            "gfx942",
            "-o",
            str(out),
            "-O2",
            "-DBIAS=3.0f",
            "-I",
            str(tmp_path),
            "--code-object-version",
            "5",
            "--no-cache",
            "--",
            "-ffast-math",
            "-Wall",
        ],
    )
    assert r.exit_code == 0, r.output
    assert f"wrote {out}" in r.output and "kernels add_kernel" in r.output and "gfx942" in r.output
    co = read_code_object(out.read_bytes(), label="k.co")
    assert co.header.processor == "gfx942" and co.header.code_object_version == 5
    r = CliRunner().invoke(cli, ["inspect", str(out)])
    assert r.exit_code == 0 and "add_kernel" in r.output
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(out), "--", "-DBIAS=+"])
    assert r.exit_code == 1 and f"{src}:4:" in r.output


def test_hip_kernel_source_reads_back_with_arguments(tmp_path):
    """Done-when: a small HIP kernel becomes a code object that inspect reads with its arguments."""
    src = write(tmp_path, "add.hip", HIP)
    for arch in ("gfx950", "gfx942"):
        out = tmp_path / f"add_{arch}.co"
        assert CliRunner().invoke(cli, ["compile", str(src), "--arch", arch, "-o", str(out)]).exit_code == 0
        (k,) = read_code_object(out.read_bytes(), label=out.name).kernels
        explicit = [a for a in k.args if not a.value_kind.startswith("hidden")]
        assert [(a.offset, a.size, a.value_kind) for a in explicit] == [
            (0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 4, "by_value")]
        assert k.max_flat_workgroup_size == 256


