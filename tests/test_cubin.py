"""Cubin metadata (submitgen/readers/cuda/cubin.py) on cubins nvcc builds here, cross-checked against
``cuobjdump -elf`` where it is installed; plan validation against cubins; inspect; bad input."""

from __future__ import annotations

import ctypes
import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from submitgen.cli import cli
from submitgen.errors import CodeObjectError, ValidationError
from submitgen.project.launches import CheckedLaunch, check_launch, kernel_layout
from submitgen.readers.cuda.cubin import EM_CUDA, MAX_SHARED_BYTES, read_cubin
from submitgen.runtime.pack import SgPlanError, sg_pack
from submitgen.toolchain.cuda import find_nvcc

NVCC = find_nvcc()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found")

SOURCE = r"""
struct Params { float scale; int n; double bias; void* ptr; };  // 24 bytes, align 8
extern "C" __global__ void __launch_bounds__(128) axpy(float* y, const float* x, float a, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = x[i];
  __syncthreads();
  if (i < n) y[i] = a * tile[threadIdx.x ^ 1] + y[i];
}
extern "C" __global__ void withstruct(char c, Params p, long long q, double* out) {
  out[threadIdx.x] = p.scale * p.n + p.bias + q + c + (p.ptr != 0);
}
template <typename T> __global__ void fill(T* out, T v) { out[threadIdx.x] = v; }
template __global__ void fill<double>(double*, double);
extern "C" __global__ void noargs() {}
extern "C" __global__ void big_shared(int* o) {
  __shared__ int a[3000];
  __shared__ double b[100];
  a[threadIdx.x] = threadIdx.x; b[threadIdx.x % 100] = 1.0;
  __syncthreads();
  o[threadIdx.x] = a[(threadIdx.x * 7) % 3000] + (int)b[threadIdx.x % 7];
}
extern "C" __global__ void spill(float* out, int n) {
  float local[96];
  for (int i = 0; i < 96; i++) local[i] = out[i * n + threadIdx.x];
  float acc = 0.f;
  for (int j = 0; j < 96; j++) acc += local[(j * n) % 96] * local[j];
  out[threadIdx.x] = acc;
}
#if __CUDA_ARCH__ >= 900 || !defined(__CUDA_ARCH__)
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* o) { o[threadIdx.x] = 1.f; }
#endif
"""

PTX_KERNEL = r"""
extern "C" __global__ void fixed(float* o) { o[threadIdx.x + threadIdx.y * 64] = 2.f; }
"""


def _nvcc(args: list[str], cwd: Path) -> None:
    r = subprocess.run([str(NVCC), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr


def _arches() -> list[str]:
    r = subprocess.run(
        [str(NVCC), "--list-gpu-arch"], capture_output=True, text=True, timeout=60, check=False
    )
    have = set(r.stdout.split())
    return ["sm_90"] + [a for a in ("sm_80", "sm_100") if a.replace("sm_", "compute_") in have]


@pytest.fixture(scope="module")
def cubins(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cubin")
    (d / "k.cu").write_text(SOURCE)
    out = {}
    for arch in _arches():
        # -maxrregcount forces `spill` to use local memory on every arch
        _nvcc([f"-arch={arch}", "-cubin", "-maxrregcount=32", "-o", f"k_{arch}.cubin", "k.cu"], d)
        out[arch] = d / f"k_{arch}.cubin"
    (d / "r.cu").write_text(PTX_KERNEL)
    _nvcc(["-arch=sm_90", "-ptx", "-o", "r.ptx", "r.cu"], d)
    ptx = (d / "r.ptx").read_text()
    brace = ptx.index("{", ptx.index(".entry fixed"))
    (d / "r.ptx").write_text(ptx[:brace] + ".reqntid 64, 2, 1\n" + ptx[brace:])
    _nvcc(["-arch=sm_90", "-cubin", "-o", "r.cubin", "r.ptx"], d)
    out["reqntid"] = d / "r.cubin"
    _nvcc(["-arch=sm_90", "-cubin", "-rdc=true", "-o", "rdc.cubin", "k.cu"], d)
    out["rdc"] = d / "rdc.cubin"
    return out


@pytest.fixture(scope="module")
def co90(cubins):
    return read_cubin(cubins["sm_90"].read_bytes(), label="k.cubin")


# --------------------------------------------------------------------------- the model


@pytest.mark.slow
def test_header_and_kernels(co90):
    assert co90.processor == "sm_90" and co90.target_id == "nvptx-nvidia-cuda--sm_90"
    assert co90.max_shared_bytes == 227 * 1024
    assert co90.header.elf_type == "ET_EXEC" and co90.label == "k.cubin" and len(co90.sha256) == 64
    assert {k.name for k in co90.kernels} == {
        "axpy",
        "withstruct",
        "_Z4fillIdEvPT_S0_",
        "noargs",
        "big_shared",
        "spill",
        "clustered",
    }
    assert not co90.errors


@pytest.mark.slow
def test_pointer_int_float_params_and_launch_bounds(co90):
    k = co90.kernel("axpy")
    assert [(a.index, a.offset, a.size) for a in k.args] == [(0, 0, 8), (1, 8, 8), (2, 16, 4), (3, 20, 4)]
    assert all(a.value_kind == "cuda_param" and a.type_name is None and not a.hidden for a in k.args)
    assert k.explicit_args == k.args and k.kernarg_segment_size == 24 and k.explicit_args_size == 24
    assert k.max_flat_workgroup_size == 128 and k.max_threads == (128, 1, 1) and k.reqd_workgroup_size is None
    assert k.group_segment_fixed_size == 1024  # tile[256] floats, without the driver's reserved 1 KiB
    assert k.shared_section_size == 2048
    assert k.vgpr_count > 0 and k.sgpr_count is None and k.agpr_count is None and k.vgpr_spill_count is None
    assert k.code_size and k.code_size % 128 == 0 and k.num_barriers == 1


def test_struct_by_value(co90):
    k = co90.kernel("withstruct")
    assert [(a.offset, a.size) for a in k.args] == [(0, 1), (8, 24), (32, 8), (40, 8)]
    assert k.args[1].offset % 8 == 0  # the struct holds a double and a pointer: 8-byte aligned
    assert k.kernarg_segment_size == 48 and k.max_flat_workgroup_size == 1024


def test_mangled_noargs_shared_local_cluster(co90):
    k = co90.kernel("_Z4fillIdEvPT_S0_")
    assert [(a.offset, a.size) for a in k.args] == [(0, 8), (8, 8)]
    if shutil.which("c++filt"):
        assert co90.kernel("void fill<double>") is k
    n = co90.kernel("noargs")
    assert n.args == () and n.kernarg_segment_size == 0 and n.group_segment_fixed_size == 0
    assert co90.kernel("big_shared").group_segment_fixed_size == 3000 * 4 + 100 * 8
    s = co90.kernel("spill")
    assert s.private_segment_fixed_size > 0 and any(f.code == "scratch" for f in s.findings)
    assert co90.kernel("clustered").cluster_dims == (2, 1, 1)


def test_kernel_lookup_error_lists_kernels(co90):
    with pytest.raises(CodeObjectError, match=r"k.cubin: no kernel named 'nope'; it has .*'axpy'"):
        co90.kernel("nope")


def test_reqntid_from_ptx(cubins):
    k = read_cubin(cubins["reqntid"].read_bytes()).kernel("fixed")
    assert k.reqd_workgroup_size == (64, 2, 1) and k.max_flat_workgroup_size == 128


def test_relocatable_is_an_error_finding(cubins):
    co = read_cubin(cubins["rdc"].read_bytes())
    assert co.header.elf_type == "ET_REL" and co.errors[0].code == "not-linked"
    with pytest.raises(CodeObjectError, match="ET_REL"):
        co.require_loadable()


def test_other_arches(cubins):
    for arch in cubins:
        if not arch.startswith("sm_"):
            continue
        co = read_cubin(cubins[arch].read_bytes())
        assert co.processor == arch and co.max_shared_bytes == MAX_SHARED_BYTES[int(arch[3:])]
        assert [(a.offset, a.size) for a in co.kernel("withstruct").args] == [
            (0, 1),
            (8, 24),
            (32, 8),
            (40, 8),
        ]
        assert co.kernel("axpy").group_segment_fixed_size == 1024
        assert co.kernel("big_shared").group_segment_fixed_size == 12800


def test_to_json(co90):
    d = json.loads(json.dumps(co90.header_json()))
    assert d["processor"] == "sm_90" and d["max_shared_bytes"] == 232448
    axpy = json.loads(json.dumps(co90.kernel("axpy").to_json()))
    assert axpy["args"][2] == {
        "index": 2,
        "offset": 16,
        "size": 4,
        "value_kind": "cuda_param",
        "hidden": False,
    }
    assert axpy["max_flat_workgroup_size"] == 128


# --------------------------------------------------------------------------- cuobjdump cross-check


def _cuobjdump() -> str | None:
    found = os.environ.get("SUBMITGEN_CUOBJDUMP") or shutil.which("cuobjdump")
    if not found and NVCC is not None:
        beside = Path(NVCC).resolve().parent / "cuobjdump"
        found = str(beside) if beside.exists() else None
    if not found:  # the nvidia-cuda-cuobjdump wheel (a test extra) puts it under site-packages/nvidia/
        import importlib.util

        spec = importlib.util.find_spec("nvidia")
        for root in (spec.submodule_search_locations or []) if spec else []:
            hits = sorted(Path(root).glob("*/bin/cuobjdump"))
            if hits:
                return str(hits[0])
    return found


def _parse_cuobjdump(text: str) -> dict[str, dict]:
    """kernel -> {params: [(ordinal, offset, size)], regs, param_size, max_threads, reqntid, shared}."""
    out: dict[str, dict] = {}
    shared: dict[str, int] = {}
    for m in re.finditer(r"^\s+\w+\s+\w+\s+([0-9a-f]+)\s+.*NOBITS.*\s\.nv\.shared\.(\S+)$", text, re.M):
        shared[m.group(2)] = int(m.group(1), 16)
    for m in re.finditer(r"function: (\S+)\(0x[0-9a-f]+\)\s+register count: (\d+)", text):
        out.setdefault(m.group(1), {})["regs"] = int(m.group(2))
    for block in re.split(r"\n(?=\.nv\.info\.)", text)[1:]:
        name = block.split("\n", 1)[0][len(".nv.info."):].strip()
        d = out.setdefault(name, {})
        d["params"] = sorted(
            (int(o, 16), int(off, 16), int(s, 16))
            for o, off, s in re.findall(
                r"Ordinal : (0x[0-9a-f]+)\s+Offset\s+: (0x[0-9a-f]+)\s+Size\s+: (0x[0-9a-f]+)", block
            )
        )
        for key, attr in (("param_size", "CBANK_PARAM_SIZE"),):
            m = re.search(rf"EIATTR_{attr}\s+Format:\s+\w+\s+Value:\s+(0x[0-9a-f]+)", block)
            d[key] = int(m.group(1), 16) if m else 0
        for key, attr in (("max_threads", "MAX_THREADS"), ("reqntid", "REQNTID")):
            m = re.search(rf"EIATTR_{attr}\s+Format:\s+\w+\s+Value:\s+(0x\w+) (0x\w+) (0x\w+)", block)
            d[key] = tuple(int(x, 16) for x in m.groups()) if m else None
        d["shared"] = shared.get(name, 0)
    return out


def test_matches_cuobjdump(cubins):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (set SUBMITGEN_CUOBJDUMP or put it on PATH)")
    for key in (*[a for a in cubins if a.startswith("sm_")], "reqntid"):
        data = cubins[key].read_bytes()
        r = subprocess.run(
            [tool, "-elf", str(cubins[key])], capture_output=True, text=True, timeout=60, check=False
        )
        assert r.returncode == 0, r.stderr
        ref = _parse_cuobjdump(r.stdout)
        co = read_cubin(data)
        assert {k.name for k in co.kernels} == {n for n, d in ref.items() if "params" in d}
        for k in co.kernels:
            d = ref[k.name]
            assert [(a.index, a.offset, a.size) for a in k.args] == d["params"], (key, k.name)
            assert k.vgpr_count == d["regs"], (key, k.name)
            assert k.kernarg_segment_size == d["param_size"], (key, k.name)
            assert k.max_threads == d["max_threads"] and k.reqd_workgroup_size == d["reqntid"], (key, k.name)
            assert k.shared_section_size == d["shared"], (key, k.name)


# --------------------------------------------------------------------------- plans against cubins


class _FakeTensor:
    _base = None

    def data_ptr(self) -> int:
        return 0


class _P(ctypes.Structure):
    _fields_ = [
        ("scale", ctypes.c_float),
        ("n", ctypes.c_int),
        ("bias", ctypes.c_double),
        ("ptr", ctypes.c_void_p),
    ]


def test_plans_validate_against_cubin(co90):
    out = _FakeTensor()
    axpy = kernel_layout(co90.kernel("axpy"), 0)
    table = {"axpy": (axpy.explicit_bytes, axpy.layout)}
    packed = sg_pack(table, ("axpy", (4, 1, 1), (128, 1, 1), 0, (out, out, 2.0, 7)), (), out)
    assert len(packed.kernarg) == 24 and [s[0] for s in packed.slots] == [0, 8]
    assert packed.kernarg[16:24] == b"\x00\x00\x00\x40\x07\x00\x00\x00"  # 2.0f, 7
    with pytest.raises(SgPlanError, match="arg 2: metadata says cuda_param size 4, plan passes a tensor"):
        sg_pack(table, ("axpy", (4, 1, 1), (128, 1, 1), 0, (out, out, out, 7)), (), out)
    ws = kernel_layout(co90.kernel("withstruct"), 0)
    table = {"withstruct": (ws.explicit_bytes, ws.layout)}
    packed = sg_pack(
        table, ("withstruct", 1, 32, 0, (3, (_P, {"scale": 1.5, "n": 2, "ptr": out}), 9, out)), (), out
    )
    assert packed.kernarg[0] == 3 and [s[0] for s in packed.slots] == [8 + _P.ptr.offset, 40]

    k = co90.kernel("axpy")
    ok = CheckedLaunch("s", "axpy", (4, 1, 1), (128, 1, 1), 4096, k.group_segment_fixed_size + 4096, 24)
    check_launch(k, ok, co90.max_shared_bytes)
    with pytest.raises(ValidationError, match=r"256 threads, the kernel's .max_flat_workgroup_size is 128"):
        check_launch(
            k, CheckedLaunch("s", "axpy", (4, 1, 1), (256, 1, 1), 0, 1024, 24), co90.max_shared_bytes
        )
    big = 227 * 1024
    with pytest.raises(ValidationError, match=r"exceeds the target's 232448 bytes"):
        check_launch(
            k, CheckedLaunch("s", "axpy", (1, 1, 1), (128, 1, 1), big, big + 1024, 24), co90.max_shared_bytes
        )


def test_reqntid_is_enforced(cubins):
    co = read_cubin(cubins["reqntid"].read_bytes())
    k = co.kernel("fixed")
    check_launch(k, CheckedLaunch("s", "fixed", (1, 1, 1), (64, 2, 1), 0, 0, 8), co.max_shared_bytes)
    with pytest.raises(
        ValidationError, match=r"reqd_workgroup_size is \(64, 2, 1\), plan launches block \(128, 1, 1\)"
    ):
        check_launch(k, CheckedLaunch("s", "fixed", (1, 1, 1), (128, 1, 1), 0, 0, 8), co.max_shared_bytes)


# --------------------------------------------------------------------------- inspect


def test_inspect_cli(cubins):
    path = str(cubins["sm_90"])
    r = CliRunner().invoke(cli, ["inspect", path], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "nvptx-nvidia-cuda--sm_90" in r.output and "kernel axpy" in r.output
    assert "raw name _Z4fillIdEvPT_S0_" in r.output or "kernel _Z4fillIdEvPT_S0_" in r.output
    assert "static shared 1024 B" in r.output and "launch bounds (128, 1, 1)" in r.output
    assert all(len(line) <= 100 for line in r.output.splitlines())
    r = CliRunner().invoke(cli, ["inspect", path, "--json", "--kernel", "withstruct", "--arch", "sm_90"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)["code_objects"][0]
    assert d["path"] == path and [k["name"] for k in d["kernels"]] == ["withstruct"]
    r = CliRunner().invoke(cli, ["inspect", path, "--arch", "gfx950"])
    assert r.exit_code != 0 and "code object is for sm_90, expected gfx950" in r.output


# --------------------------------------------------------------------------- bad input


def test_bad_headers(co90, cubins):
    data = cubins["sm_90"].read_bytes()
    for bad, msg in (
        (b"", "not an ELF file"),
        (data[:40], "truncated ELF: expected at least 64 header bytes, got 40"),
        (data[:4] + b"\x01" + data[5:], "ELF class: expected ELFCLASS64"),
        (
            data[:18] + (224).to_bytes(2, "little") + data[20:],
            "ELF machine: expected EM_CUDA \\(190\\), got 224",
        ),
        (data[:2000], "truncated ELF"),
    ):
        with pytest.raises(CodeObjectError, match=msg):
            read_cubin(bad, label="x.cubin")
    assert int.from_bytes(data[18:20], "little") == EM_CUDA


@pytest.mark.slow
def test_mutations_give_domain_errors(cubins):
    data = cubins["sm_90"].read_bytes()
    rng = random.Random(8)
    co = read_cubin(data)
    # the .nv.info sections are where the interesting parsing is: aim half the mutations there
    from io import BytesIO

    from elftools.elf.elffile import ELFFile

    info = [(s["sh_offset"], s["sh_size"]) for s in ELFFile(BytesIO(data)).iter_sections()
            if s.name.startswith(".nv.info")]
    assert len(info) == len(co.kernels) + 1
    outcomes = {"ok": 0, "error": 0}
    for i in range(2000):
        buf = bytearray(data)
        kind = i % 4
        if kind == 0:
            buf = buf[:rng.randrange(len(buf))]
        elif kind == 1:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif kind == 2:
            off, size = rng.choice(info)
            for _ in range(rng.randint(1, 4)):
                buf[off + rng.randrange(size)] = rng.choice((0, 1, 2, 3, 4, 5, 0xFF, rng.randrange(256)))
        else:  # section header table fields
            shoff = int.from_bytes(data[0x28:0x30], "little")
            pos = shoff + rng.randrange(int.from_bytes(data[0x3C:0x3E], "little") * 64)
            buf[pos] = rng.randrange(256)
        try:
            read_cubin(bytes(buf), label="m.cubin")
            outcomes["ok"] += 1
        except CodeObjectError as e:
            assert str(e).startswith("m.cubin: ") and "\n" not in str(e)
            outcomes["error"] += 1
    assert outcomes["error"] > 100 and outcomes["ok"] > 100
