"""Several code objects in one submission (a project's object plus other objects, one per Triton
specialization): embedded in one text or one each, whichever is shorter; every object loaded at
import; each launch name resolved in its own object (the stand-in runtime only finds a symbol in
the module that holds it); null pointers for None arguments and for Triton's trailing scratch
pointers; on the CUDA runtime, dynamic shared memory over 48 KiB enabled once at import."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from conftest import build_stub, run_script

from submitgen.backends.amd import HIP
from submitgen.backends.cuda import CUDA
from submitgen.launchers.builtin import CTYPES
from submitgen.options import Compress
from submitgen.pipeline import BuildOptions, build
from submitgen.problems import get_problem
from submitgen.project.launches import kernel_layout
from submitgen.readers.containers import load_code_objects
from submitgen.readers.joined import split_joined
from submitgen.render import provenance
from submitgen.render.embed import embed_images
from submitgen.render.template import KernelEntry, Pasted, RenderContext, render
from submitgen.runtime.pack import SgLaunchDefaults

TESTS = Path(__file__).resolve().parent
GOLDEN_CO = TESTS / "golden" / "mm_basic.co"
SCALE = """\
#include <submitgen/device.h>
extern "C" __global__ SG_LAUNCH_BOUNDS(256) void mm_scale(const float* a, float* out, const float* bias,
                                                            int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * 2.0f + (bias ? bias[i] : 0.0f);
}
"""
PLAN = """\
import ctypes

import torch

KERNELS = ("mm_tile", "mm_scale")


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, k = a.shape
    n = b.shape[0]
    partial = torch.empty((1, m, n), dtype=torch.float32, device=a.device)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [
        ("mm_tile", ((m * n + 255) // 256, 1, 1), (256, 1, 1), 0,
         (a, b_q, b_scale, partial, m, n, k, ctypes.c_float(0.5))),
        ("mm_scale", ((m * n + 255) // 256,), (256,), 0, (a, out, None, m * n)),
    ]
"""


@pytest.fixture(scope="module")
def fakehip(tmp_path_factory) -> Path:
    return build_stub(tmp_path_factory, "fakehip")


def run_dry(sub: Path, fakehip: Path, tmp: Path) -> tuple[list[dict], dict]:
    log = tmp / "hip.log"
    env = dict(os.environ, SUBMITGEN_HIP_LIBRARY=str(fakehip), SUBMITGEN_CUDA_LIBRARY=str(fakehip),
               SUBMITGEN_FAKEHIP_LOG=str(log))
    r = run_script(TESTS / "abi_driver.py", str(sub), "mxfp4-mm", str(tmp / "r.json"), env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return calls, json.loads((tmp / "r.json").read_text())


def test_embedding_keeps_the_shorter_of_one_text_and_one_each(compile_co):
    images = [GOLDEN_CO.read_bytes(), compile_co(SCALE)]
    e = embed_images(images, Compress.LZMA)
    assert e.chars == min(e.separate_chars, e.together_chars)
    assert e.images == tuple((__import__("hashlib").sha256(i).hexdigest(), len(i)) for i in images)
    if len(e.blobs) == 1:
        assert split_joined(b"".join(images)) == images


@pytest.mark.slow
def test_two_objects_through_the_build(compile_co, fakehip, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "launch.py").write_text(PLAN)
    scale = tmp_path / "scale.co"
    scale.write_bytes(compile_co(SCALE))
    sub = tmp_path / "s.py"
    built = build(BuildOptions(problem="mxfp4-mm", output=sub, kernels=proj, code_objects=(GOLDEN_CO, scale)))
    images = [GOLDEN_CO.read_bytes(), scale.read_bytes()]
    assert [o.data for o in load_code_objects(sub)] == images
    prov = provenance.read(built.text)
    assert prov.code_objects == tuple(__import__("hashlib").sha256(i).hexdigest() for i in images)

    calls, result = run_dry(sub, fakehip, tmp_path)
    loads = [c for c in calls if c["call"] == "hipModuleLoadData"]
    assert [bytes.fromhex(c["hex"]) for c in loads] == images, "every object loaded once, at import, in order"
    modules = {c["name"]: c["module"] for c in calls if c["call"] == "hipModuleGetFunction" and c["found"]}
    assert modules == {"mm_tile": loads[0]["module"], "mm_scale": loads[1]["module"]}
    functions = {c["function"]: c["name"] for c in calls if c["call"] == "hipModuleGetFunction"}
    launches = [c for c in calls if c["call"] == "hipModuleLaunchKernel"]
    assert len(launches) == 2 * len(result["shapes"])
    for shape, (tile, scale_launch) in zip(result["shapes"], zip(launches[::2], launches[1::2])):
        assert functions[tile["function"]] == "mm_tile" and functions[scale_launch["function"]] == "mm_scale"
        kernarg = bytes.fromhex(scale_launch["kernarg"])
        a_ptr, out_ptr, bias, n = struct.unpack_from("<QQQi", kernarg)
        assert (a_ptr, out_ptr, bias) == (shape["leaves"][0], shape["out"], 0), "None is a null pointer"


# ----------------------------------------------------------------------------- Triton objects

TRITON_SOURCE = """\
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + rn[None, :] * K + (k + rk)[:, None])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))
"""
TRITON_PLAN = """\
import ctypes

import torch


def plan(data):
    a, b, b_q, b_shuffle, b_scale = data
    m, k = a.shape
    n = b.shape[0]
    partial = torch.empty((1, m, n), dtype=torch.float32, device=a.device)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    return out, [
        ("mm_tile", ((m * n + 255) // 256, 1, 1), (256, 1, 1), 0,
         (a, b_q, b_scale, partial, m, n, k, ctypes.c_float(0.5))),
        ("mm_small", ((m + 15) // 16, (n + 63) // 64), None, None, (a, None, out, m, n, k)),
        ("mm_big", ((m + 127) // 128, (n + 127) // 128), None, None, (a, b, out, m, n, k)),
    ]
"""
SPECS = {  # launch name -> (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    "mm_small": (16, 64, 64, 4, 2),
    "mm_big": (128, 128, 128, 8, 2),
}


@pytest.fixture(scope="module")
def triton_objects(tmp_path_factory):
    pytest.importorskip("triton", reason="the [triton] extra compiles the specializations")
    from submitgen.toolchain.triton import TritonSpec, compile_triton

    folder = tmp_path_factory.mktemp("triton")
    src = folder / "mm.py"
    src.write_text(TRITON_SOURCE)
    sig = tuple((p, "*bf16") for p in ("a_ptr", "b_ptr", "c_ptr")) + tuple((p, "i32") for p in "MNK")
    sig += tuple((p, "constexpr") for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUBMITGEN_CACHE_DIR", str(folder / "cache"))
        for arch in ("gfx950", "sm_90"):
            for name, (bm, bn, bk, warps, stages) in SPECS.items():
                spec = TritonSpec(name, src, src.read_bytes(), "mm_kernel", sig,
                                  (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)), warps, stages)
                out[arch, name] = compile_triton(spec, arch)
    return out


def triton_context(
    arch: str, objects, scratch: dict[str, tuple[int, int]]
) -> tuple[RenderContext, list[bytes]]:
    from submitgen.readers.amd.reader import read_code_object
    from submitgen.readers.cuda.cubin import read_cubin

    reader = read_cubin if arch == "sm_90" else read_code_object
    problem = get_problem("mxfp4-mm")
    images = [GOLDEN_CO.read_bytes()] + [objects[arch, name].image for name in SPECS]
    kernels = [
        KernelEntry(
            "mm_tile",
            0,
            "mm_tile",
            48,
            kernel_layout(read_code_object(images[0]).kernel("mm_tile"), 0).layout,
        )
    ]
    for index, name in enumerate(SPECS, start=1):
        art = objects[arch, name]
        layout = kernel_layout(reader(art.image).kernel(art.symbol), index)
        global_scratch, profile_scratch = scratch.get(name, (art.global_scratch, art.profile_scratch))
        kernels.append(
            KernelEntry(
                name,
                index,
                art.symbol,
                layout.explicit_bytes,
                layout.layout,
                defaults=SgLaunchDefaults(
                    "Triton", art.num_warps * art.warp_size, art.shared, (global_scratch, profile_scratch)
                ),
                dynamic_shared=art.shared,
            )
        )
    blobs = embed_images(images, Compress.LZMA).blobs
    ctx = RenderContext(
        header_lines=problem.header_lines(),
        provenance=provenance.format_line({"co": ()}),
        version="0",
        project="triton",
        command="test",
        leaderboard=problem.leaderboard,
        target_id=arch,
        arch=arch,
        runtime=CUDA if arch == "sm_90" else HIP,
        launcher=CTYPES,
        compress=Compress.LZMA,
        blobs=blobs,
        kernels=tuple(kernels),
        pasted=Pasted(problem.leaves_source, problem.fallback_source, TRITON_PLAN, "t/p.py"),
        allow_fallback=True,
    )
    return ctx, images


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["gfx950", "sm_90"])
def test_triton_objects_load_launch_and_get_their_scratch(arch, triton_objects, fakehip, tmp_path):
    ctx, images = triton_context(arch, triton_objects, {"mm_big": (512, 0)})  # mm_big: a global scratch
    sub = tmp_path / "s.py"
    sub.write_text(render(ctx))
    calls, result = run_dry(sub, fakehip, tmp_path)
    loads = [c for c in calls if c["call"] == "hipModuleLoadData"]
    assert [bytes.fromhex(c["hex"]) for c in loads] == images
    got = [c for c in calls if c["call"] == "hipModuleGetFunction"]
    assert [(c["name"], c["module"], c["found"]) for c in got] == [
        ("mm_tile", loads[0]["module"], True), ("mm_kernel", loads[1]["module"], True),
        ("mm_kernel", loads[2]["module"], True)]
    function = {c["function"]: name for c, name in zip(got, ("mm_tile", *SPECS))}
    attributes = [(function[c["function"]], c["attribute"], c["value"]) for c in calls
                  if c["call"] == "cuFuncSetAttribute"]
    big_shared = triton_objects[arch, "mm_big"].shared
    large = [
        (n, 8, triton_objects[arch, n].shared) for n in SPECS if triton_objects[arch, n].shared > 48 * 1024
    ]
    assert attributes == (large if arch == "sm_90" else [])
    if arch == "sm_90":
        assert big_shared > 48 * 1024, "the test needs one kernel over 48 KiB"
    launches = [c for c in calls if c["call"] == "hipModuleLaunchKernel"]
    assert len(launches) == 3 * len(result["shapes"])
    scratch_seen = set()
    for shape, i in zip(result["shapes"], range(0, len(launches), 3)):
        small, big = launches[i + 1], launches[i + 2]
        for launch, name in ((small, "mm_small"), (big, "mm_big")):
            art = triton_objects[arch, name]
            assert function[launch["function"]] == name
            assert launch["block"] == [art.num_warps * art.warp_size, 1, 1] and launch["lds"] == art.shared
            kernarg = bytes.fromhex(launch["kernarg"])
            a_ptr, b_ptr, c_ptr = struct.unpack_from("<QQQ", kernarg)
            global_scratch, profile_scratch = struct.unpack_from("<QQ", kernarg, len(kernarg) - 16)
            assert a_ptr == shape["leaves"][0] and c_ptr == shape["out"] and profile_scratch == 0
            if name == "mm_small":
                assert b_ptr == 0 and global_scratch == 0, "None and a zero-size scratch are null pointers"
            else:
                assert b_ptr == shape["leaves"][1] and global_scratch != 0
                scratch_seen.add(global_scratch)
    assert len(scratch_seen) == len(result["shapes"]), "one scratch buffer per shape"
