"""The HIP kernel projects (examples/hip_mxfp4_mm, examples/hip_mixed_mla; the defaults before the
Triton ones): they compile for gfx950 and
gfx942 with the bundled clang and for sm_90 with nvcc, the code objects hold the kernels the plans
name (NAME and NAME.kd dynamic symbols, read back with pyelftools), each launch.py imports without
submitgen, and each plan runs on meta tensors for every test and benchmark shape and agrees with
the metadata. Their numerics are checked on an NVIDIA GPU by experiments/cuda_numerics.py."""

from __future__ import annotations

import ctypes
import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from submitgen.problems import get_problem
from submitgen.readers.amd.reader import read_code_object
from submitgen.rules import BANNED_WORD
from submitgen.toolchain.compile import compile_sources
from submitgen.toolchain.cuda import compile_cuda, find_nvcc

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "examples"
PROJECTS = {
    "mxfp4-mm": ("hip_mxfp4_mm", ("mxfp4_mm_m16", "mxfp4_mm_m32", "mxfp4_mm_m64", "mxfp4_mm_reduce")),
    "mixed-mla": ("hip_mixed_mla", ("mla_decode_split", "mla_reduce")),
}
EXTRA_GFX950 = {"mxfp4-mm": ("mxfp4_mm_mfma_probe",)}
"""Kernels compiled only for gfx950 (MXFP4 MFMA), in the code object but not in the plan."""


def _load_plan(kernel_dir: str):
    path = KERNELS / kernel_dir / "launch.py"
    spec = importlib.util.spec_from_file_location(f"_test_plan_{kernel_dir}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sources(kernel_dir: str) -> list[Path]:
    plan = _load_plan(kernel_dir)
    return [KERNELS / kernel_dir / s for s in plan.SOURCES]


@pytest.fixture(scope="module")
def code_objects():
    cache: dict[tuple[str, str], bytes] = {}

    def get(problem: str, arch: str) -> bytes:
        if (problem, arch) not in cache:
            result = compile_sources(_sources(PROJECTS[problem][0]), arch=arch)
            cache[(problem, arch)] = result.code_object
        return cache[(problem, arch)]

    return get


def _dynamic_symbols(co: bytes) -> set[str]:
    elf = ELFFile(io.BytesIO(co))
    dynsym = elf.get_section_by_name(".dynsym")
    assert dynsym is not None, "code object has no .dynsym"
    return {s.name for s in dynsym.iter_symbols() if s.name}


@pytest.mark.parametrize("arch", ["gfx950", "gfx942"])
@pytest.mark.parametrize("problem", sorted(PROJECTS))
def test_code_object_holds_the_kernels(code_objects, problem, arch):
    co = code_objects(problem, arch)
    symbols = _dynamic_symbols(co)
    kernel_dir, names = PROJECTS[problem]
    expected = names + (EXTRA_GFX950.get(problem, ()) if arch == "gfx950" else ())
    for name in expected:
        assert name in symbols, f"{arch} {kernel_dir}: no dynamic symbol {name} (have {sorted(symbols)})"
        assert f"{name}.kd" in symbols, f"{arch} {kernel_dir}: no kernel descriptor {name}.kd"
    if arch == "gfx942":
        for name in EXTRA_GFX950.get(problem, ()):
            assert name not in symbols, f"{name} is gfx950-only and must not be in the gfx942 code object"
    parsed = read_code_object(co)
    assert parsed.processor == arch
    for k in parsed.kernels:
        assert k.max_flat_workgroup_size <= 256
        assert k.private_segment_fixed_size == 0, (
            f"{k.name} spills to scratch ({k.private_segment_fixed_size} bytes)"
        )


@pytest.mark.slow
@pytest.mark.parametrize("problem", sorted(PROJECTS))
def test_plan_imports_without_submitgen(problem):
    """launch.py is pasted into submissions: it must import with submitgen unavailable."""
    path = KERNELS / PROJECTS[problem][0] / "launch.py"
    code = (
        "import importlib.util, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'submitgen':\n"
        "            raise ImportError('submitgen is not available in a submission')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n"
        f"spec = importlib.util.spec_from_file_location('plan', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "assert callable(m.plan) and m.KERNELS\n"
        "assert not [n for n in sys.modules if n.split('.')[0] == 'submitgen']\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    text = path.read_text()
    imports = set(re.findall(r"^\s*(?:import|from)\s+(\w+)", text, re.MULTILINE))
    assert imports <= {"torch", "ctypes", "math"}, imports


def _arg_kind(arg) -> str:
    import torch

    if isinstance(arg, torch.Tensor):
        return "global_buffer"
    return "by_value"


@pytest.mark.parametrize("problem", sorted(PROJECTS))
def test_plan_runs_on_meta_inputs_and_matches_metadata(code_objects, problem):
    import torch

    kernel_dir, names = PROJECTS[problem]
    plan = _load_plan(kernel_dir)
    assert tuple(plan.KERNELS) == names
    co = read_code_object(code_objects(problem, "gfx950"))
    kernels = {k.name: k for k in co.kernels}
    p = get_problem(problem)
    specs = (*p.tests, *p.benchmarks)
    assert len(specs) >= 10
    for spec in specs:
        data = p.meta_input(spec)
        out, launches = plan.plan(data)
        assert out.device.type == "meta" and out.dtype == torch.bfloat16
        assert launches, f"{p.shape_label(spec)}: no launches"
        for name, grid, block, lds, args in launches:
            where = f"{p.shape_label(spec)} {name}"
            assert name in names, where
            k = kernels[name]
            assert all(isinstance(g, int) and 0 < g < 2**31 for g in grid), (where, grid)
            assert len(block) == 3 and 0 < block[0] * block[1] * block[2] <= k.max_flat_workgroup_size, (
                where,
                block,
            )
            assert lds == 0
            explicit = [a for a in k.args if not a.value_kind.startswith("hidden_")]
            assert len(explicit) == len(args), (
                f"{where}: metadata has {len(explicit)} args, plan passes {len(args)}"
            )
            for meta_arg, arg in zip(explicit, args):
                assert meta_arg.value_kind == _arg_kind(arg), (where, meta_arg, arg)
                if isinstance(arg, tuple):
                    struct_cls, fields = arg
                    assert ctypes.sizeof(struct_cls) == meta_arg.size, (
                        where,
                        ctypes.sizeof(struct_cls),
                        meta_arg.size,
                    )
                    assert set(fields) == {f[0] for f in struct_cls._fields_}, where
                elif isinstance(arg, int):
                    assert meta_arg.size == 4 and -(2**31) <= arg < 2**31, (where, meta_arg, arg)


def test_mla_struct_layout_matches_the_c_struct():
    plan = _load_plan("hip_mixed_mla")
    offsets = {name: getattr(plan.MlaParams, name).offset for name, _ in plan.MlaParams._fields_}
    assert ctypes.sizeof(plan.MlaParams) == 64
    assert offsets == {"q": 0, "kv": 8, "kv_scale": 16, "part_o": 24, "part_lse": 32, "batch": 40,
                       "kv_len": 44, "num_splits": 48, "split_len": 52, "kv_fp8": 56, "sm_scale": 60}
    src = (KERNELS / "hip_mixed_mla" / "mixed_mla.hip").read_text()
    body = src[src.index("struct mla_params {"):]
    body = body[: body.index("};")]
    c_fields = re.findall(r"^\s*[\w\s\*]*?[\s\*](\w+);", body, re.MULTILINE)
    assert c_fields == [name for name, _ in plan.MlaParams._fields_]


def test_splits_cover_every_chunk_and_token():
    mm = _load_plan("hip_mxfp4_mm")
    for spec in (*get_problem("mxfp4-mm").tests, *get_problem("mxfp4-mm").benchmarks):
        _name, _bm, grid, per_split, splits = mm.tiles(spec["m"], spec["n"], spec["k"])
        chunks = spec["k"] // mm.KC
        assert grid[2] == splits and (splits - 1) * per_split < chunks <= splits * per_split
    mla = _load_plan("hip_mixed_mla")
    for spec in (*get_problem("mixed-mla").tests, *get_problem("mixed-mla").benchmarks):
        splits, split_len = mla.split_for(spec["batchsize"], spec["kvseqlen"])
        assert split_len % mla.TILE == 0
        assert (splits - 1) * split_len < spec["kvseqlen"] <= splits * split_len


def test_no_banned_word_under_kernels():
    for path in KERNELS.rglob("*"):
        if path.is_file():
            assert BANNED_WORD not in path.read_text(errors="replace").lower(), path


@pytest.mark.slow
@pytest.mark.skipif(
    find_nvcc() is None, reason="nvcc (CUDA toolkit) is not installed on this machine"
)
@pytest.mark.parametrize("problem", sorted(PROJECTS))
def test_kernels_compile_with_nvcc(problem):
    kernel_dir, names = PROJECTS[problem]
    cubin = compile_cuda(_sources(kernel_dir), arch="sm_90")
    elf = ELFFile(io.BytesIO(cubin))
    symbols = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()}
    for name in names:
        assert name in symbols, f"sm_90 cubin of {kernel_dir} lacks {name}"
