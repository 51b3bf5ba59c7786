"""The Triton kernel projects (kernels/mxfp4_mm, kernels/mixed_mla, examples/triton_mxfp4_mm).

- Every specialization compiles for gfx950 with the installed Triton; the code object has no
  scratch and no spills, and runs at least 2 waves per SIMD at the plan's block (num_warps x 64)
  and dynamic LDS (Triton's ``shared``); the GEMMs are on the MXFP4 MFMA (``v_mfma_scale_*``
  only) and the MLA decode on MFMA, counted in the assembly Triton emitted for that object.
- Every plan, on every test and benchmark shape, launches only specializations it declares,
  with block and LDS left to the compiler and one argument per non-constexpr parameter.
- On CPU (Triton's interpreter): the in-kernel A quantization is byte-identical to the
  reference quantizer on tie and saturation cases, and both mxfp4-mm plans match the reference,
  the default one with its TRITON as built for gfx950 and as built for sm_90 (A as bf16 values).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from submitgen.problems import get_problem
from submitgen.project.load import _for_arch
from submitgen.readers.amd import processors
from submitgen.readers.amd.reader import read_code_object

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = {
    "mxfp4_mm": (ROOT / "kernels" / "mxfp4_mm", "mxfp4-mm"),
    "mixed_mla": (ROOT / "kernels" / "mixed_mla", "mixed-mla"),
    "triton_mxfp4_mm": (ROOT / "examples" / "triton_mxfp4_mm", "mxfp4-mm"),
}
# kernel -> the matrix instructions it must use (a regex over the mnemonics) and must not use
MFMA_RULES = {
    "mxfp4_mm_kernel": (r"v_mfma_scale_f32_\w+_f8f6f4", r"v_mfma_(?!scale)"),
    "mla_decode_kernel": (r"v_mfma_\w+", None),
}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _specs():
    for proj, (folder, _problem) in PROJECTS.items():
        launch = _module(folder / "launch.py", f"_tk_launch_{proj}")
        for name in launch.TRITON:
            yield pytest.param(proj, name, id=f"{proj}-{name}")


def _plain(signature: dict) -> dict:
    return {k: v.removesuffix(":16") for k, v in signature.items()}


def _hints(signature: dict) -> dict:
    """Triton's AOT spelling of the ':16' hints (16-byte aligned pointer, int divisible by 16)."""
    return {(i,): [["tt.divisibility", 16]] for i, v in enumerate(signature.values()) if v.endswith(":16")}


def _compile_gfx950(folder: Path, entry: dict):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kmod = _module(folder / entry["source"], f"_tk_src_{folder.name}")
    fn = getattr(kmod, entry["kernel"])
    src = ASTSource(fn=fn, signature=_plain(entry["signature"]), constexprs=dict(entry["constexprs"]),
                    attrs=_hints(entry["signature"]))
    opts = {"num_warps": entry["num_warps"], "num_stages": entry["num_stages"], **entry.get("options", {})}
    return triton.compile(src, target=GPUTarget("hip", "gfx950", 64), options=opts)


@pytest.mark.parametrize("proj,name", list(_specs()))
def test_gfx950_specialization_resources(proj: str, name: str) -> None:
    folder, _ = PROJECTS[proj]
    entry = _module(folder / "launch.py", f"_tk_launch_{proj}").TRITON[name]
    compiled = _compile_gfx950(folder, entry)
    co = read_code_object(compiled.asm["hsaco"], label=f"{proj}:{name}")
    (kernel,) = co.kernels
    assert kernel.name == entry["kernel"]
    assert (kernel.private_segment_fixed_size, kernel.vgpr_spill_count, kernel.sgpr_spill_count) == (0, 0, 0)
    block = entry["num_warps"] * 64
    occ = processors.occupancy(kernel, "gfx950", block, dynamic_lds=compiled.metadata.shared)
    assert occ.launchable and occ.waves_per_simd >= 2, (
        name,
        kernel.vgpr_count,
        compiled.metadata.shared,
        occ.limits,
    )
    want, refuse = MFMA_RULES.get(entry["kernel"], (None, None))
    mnemonics = re.findall(r"^\s+(v_mfma\w*)", compiled.asm["amdgcn"], re.MULTILINE)
    if want:
        assert mnemonics and all(re.fullmatch(want, m) for m in mnemonics), (name, sorted(set(mnemonics)))
    if refuse:
        assert not [m for m in mnemonics if re.match(refuse, m)]
    if proj == "mxfp4_mm" and entry["kernel"] == "mxfp4_mm_kernel":
        # the split-K arrival counter: an agent-scope release before the atomic (L2 written back
        # after this wave's stores) and an acquire after it (L1/L2 invalidated before the last
        # split reads the others' partial sums)
        release_atomic_acquire = (r"buffer_wbl2 sc1\s+s_waitcnt vmcnt\(0\)\s+global_atomic_add\b[^\n]*\n"
                                  r"\s+s_waitcnt vmcnt\(0\)\s+buffer_inv sc1")
        assert re.search(release_atomic_acquire, compiled.asm["amdgcn"]), name


def test_plan_constants_match_the_specializations() -> None:
    """launch.py's module constants that the plans compute with equal the literal TRITON values."""
    mm = _module(PROJECTS["mxfp4_mm"][0] / "launch.py", "_tk_const_mm")
    gemms = [e for e in mm.TRITON.values() if e["kernel"] == "mxfp4_mm_kernel"]
    assert gemms and all(e["constexprs"]["BK"] == mm.BK for e in gemms)
    for arch in ("gfx950", "sm_90"):
        table = _for_arch(mm.TRITON, arch, Path("launch.py"))
        quant = table["mm_quant_a"]["constexprs"]
        assert (quant["BR"], quant["BK"]) == (mm.QUANT_ROWS, mm.QUANT_K)
        for name, e in table.items():
            if e["kernel"] == "mxfp4_mm_kernel":
                assert isinstance(e["plan"]["target"], int) and e["plan"]["target"] > 0, (arch, name)
                # the pre-pass writes what the GEMM reads: e2m1 bytes and scales, or bf16 values
                assert not e["constexprs"]["A_PREQ"] or e["constexprs"]["A_BF16"] == quant["OUT_BF16"]
    # gfx950 multiplies e2m1 by e2m1 (the MXFP4 MFMA); sm_90 has no fp4 unit
    assert not any(e["constexprs"].get("A_BF16") for e in _for_arch(mm.TRITON, "gfx950", Path("l")).values())
    mla = _module(PROJECTS["mixed_mla"][0] / "launch.py", "_tk_const_mla")
    assert mla.TRITON["mla_decode"]["constexprs"]["BN"] == mla.BN
    assert mla.TRITON["mla_reduce"]["constexprs"]["SPLITS"] == mla.MAX_SPLITS
    assert mla.TRITON["mla_reduce_wide"]["constexprs"]["SPLITS"] == mla.MAX_SPLITS
    assert mla.DV % mla.WIDE_BV == 0
    assert max(mla.split_for(b, kv)[0] for b in (1, 4, 256) for kv in (1, 1024, 1 << 20)) <= mla.MAX_SPLITS


@pytest.mark.parametrize("arch", ["gfx950", "sm_90"])
@pytest.mark.parametrize("proj", list(PROJECTS))
def test_plan_launches_every_shape(proj: str, arch: str) -> None:
    folder, problem_name = PROJECTS[proj]
    launch = _module(folder / "launch.py", f"_tk_plan_{proj}_{arch}")
    launch.TRITON = _for_arch(launch.TRITON, arch, folder / "launch.py")  # as the build embeds it
    problem = get_problem(problem_name)
    for spec in problem.tests + problem.benchmarks:
        out, launches = launch.plan(problem.meta_input(spec))
        assert out.device.type == "meta" and launches, spec
        for name, grid, block, lds, args in launches:
            entry = launch.TRITON[name]
            assert (block, lds) == (None, None)
            assert len(grid) == 3 and all(isinstance(g, int) and g > 0 for g in grid)
            params = [p for p, t in entry["signature"].items() if t != "constexpr"]
            assert len(args) == len(params), (name, params, len(args))
            for p, a in zip(params, args, strict=True):
                if entry["signature"][p].startswith("*"):
                    assert a is None or isinstance(a, torch.Tensor), (name, p)
                else:
                    assert isinstance(a, (int, float)) and not isinstance(a, bool), (name, p, a)
                    if entry["signature"][p].endswith(":16"):
                        assert a % 16 == 0, (name, p, a, spec)


_INTERP = textwrap.dedent("""
    import importlib.util, os, sys
    import torch
    sys.path.insert(0, {root!r})
    from submitgen.problems import get_problem, mxfp4

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    bench = load(os.path.join({root!r}, "benchmarks", "bench_triton_kernels.py"), "bench")
    # ties and saturation: every e2m1 midpoint (and its neighbours) times a block scale, -0, huge
    mids = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 7.0, 0.0])
    row = torch.cat([mids * 2.0 ** e for e in (-3, 0, 4)] + [-mids, torch.tensor([-0.0, 1e30])])
    a = torch.cat([row, torch.randn(256 - row.numel()) * 3]).reshape(1, 256)
    a = torch.cat([a, -a, a * 0.5, torch.zeros_like(a)]).to(torch.bfloat16)
    bench._quant_e2m1 = load(os.path.join({root!r}, "kernels", "mxfp4_mm", "mxfp4_mm.py"), "kq")._quant_e2m1
    print("quant_bad", bench.quant_check(a))
    # the bf16 values the sm_90 build quantizes A to equal the reference's dequantized codes: blocks
    # whose amax is 6 (scale 1) holding every midpoint and its bf16 neighbours, at 2^-30..2^30
    import triton, triton.language as tl
    km_q = load(os.path.join({root!r}, "kernels", "mxfp4_mm", "mxfp4_mm.py"), "kq_bf16")

    @triton.jit
    def _bf16_probe(x_ptr, o_ptr, BK: tl.constexpr):
        offs = tl.program_id(0) * BK + tl.arange(0, BK)[None, :]
        tl.store(o_ptr + offs, km_q._quant_bf16(tl.load(x_ptr + offs).to(tl.float32), 1, BK).to(tl.float32))

    bf = torch.bfloat16
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0], dtype=bf)
    near = [torch.nextafter(ties, torch.tensor(v, dtype=bf)) for v in (100.0, -100.0)]
    six = torch.tensor([6.0], dtype=bf)
    blk = torch.cat([six, ties, near[0], -ties[:5], six, near[1], -ties, -near[0][:5]])  # two 32-blocks
    x = torch.cat([torch.stack([torch.cat([blk * 2.0 ** e] * 4) for e in range(-30, 31)]), a])
    got = torch.empty(x.shape, dtype=torch.float32)
    _bf16_probe[(x.shape[0],)](x, got, BK=256)
    print("bf16_bad", int((got != mxfp4.dequantize(*mxfp4.quantize(x, "even")).float()).sum()))
    problem = get_problem("mxfp4-mm")
    for proj in ("kernels/mxfp4_mm", "examples/triton_mxfp4_mm"):
        lm = load(os.path.join({root!r}, proj, "launch.py"), proj + "_l")
        km = load(os.path.join({root!r}, proj, "mxfp4_mm.py"), proj + "_k")
        for m, n, k in ((5, 96, 512), (40, 64, 256), (20, 4096, 256)):
            data = problem.generate_input({{"m": m, "n": n, "k": k, "seed": 7}})
            res = problem.check(bench.plan_runner(lm, km, data)(), data)
            print("check", proj, m, n, k, res.passed, res.mismatches)
    # the default plan as built for sm_90: A as bf16 values (in the GEMM, or from the pre-pass)
    from submitgen.project.load import _for_arch
    from pathlib import Path
    lm = load(os.path.join({root!r}, "kernels/mxfp4_mm", "launch.py"), "sm90_l")
    lm.TRITON = _for_arch(lm.TRITON, "sm_90", Path("launch.py"))
    km = load(os.path.join({root!r}, "kernels/mxfp4_mm", "mxfp4_mm.py"), "sm90_k")
    for m, n, k in ((5, 96, 512), (20, 4096, 256), (40, 64, 256)):
        data = problem.generate_input({{"m": m, "n": n, "k": k, "seed": 7}})
        res = problem.check(bench.plan_runner(lm, km, data)(), data)
        print("check sm_90", m, n, k, res.passed, res.mismatches)
    # unsplit (one block reaches the target): the bf16 store without workspace or counters
    lm = load(os.path.join({root!r}, "kernels/mxfp4_mm", "launch.py"), "unsplit_l")
    for entry in lm.TRITON.values():
        if "plan" in entry:
            entry["plan"]["target"] = 1
    km = load(os.path.join({root!r}, "kernels/mxfp4_mm", "mxfp4_mm.py"), "unsplit_k")
    data = problem.generate_input({{"m": 5, "n": 96, "k": 512, "seed": 7}})
    assert lm.config(5, 96, 512)[3] == 1
    res = problem.check(bench.plan_runner(lm, km, data)(), data)
    print("check unsplit", res.passed, res.mismatches)
""")


@pytest.mark.slow
def test_interpreter_quantization_and_plans(tmp_path: Path) -> None:
    script = tmp_path / "interp.py"
    script.write_text(_INTERP.format(root=str(ROOT)))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.split("\n")
    assert "quant_bad 0" in lines and "bf16_bad 0" in lines
    checks = [ln for ln in lines if ln.startswith("check")]
    assert len(checks) == 10 and all(ln.endswith("True 0") for ln in checks), checks
