"""submitgen's occupancy and register counts against LLVM 22 itself (docs/readers.md, "Occupancy").

Kernels spanning the ranges (1 to 512 unified VGPRs, AGPRs through inline-asm clobbers, SGPRs up
to the gfx9 maximum, static LDS from none to the whole CU, blocks of 64 to 1,024 threads) are
compiled by ``llc-22`` in one invocation per processor with the ``kernel-resource-usage``
remarks on. Each object is read by submitgen's reader; the remark's VGPRs/AGPRs/SGPRs/LDS must be
the metadata's and the remark's "Occupancy [waves/SIMD]" must be submitgen's waves per SIMD.

Apples to apples: LLVM's figure is the best over the kernel's ``amdgpu-flat-work-group-size``
range (``AMDGPUSubtarget::getOccupancyWithWorkGroupSizes``). Every kernel here fixes that range
to one size ("N,N", which the object records as ``.max_flat_workgroup_size`` N), and submitgen
computes at block N.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from submitgen.readers.amd import processors
from submitgen.readers.amd.reader import read_code_object

LLC = shutil.which("llc-22")
pytestmark = pytest.mark.skipif(LLC is None, reason="llc-22 (LLVM 22) is not installed")

_REMARK = re.compile(r"remark: \S+:0:0:\s+([^:]+): (.*)$")


def unified_total(arch_vgprs: int, agprs: int) -> int:
    """LLVM ``getTotalNumVGPRs`` on gfx90a+: arch VGPRs aligned to 4, then the AGPRs."""
    return -(-arch_vgprs // 4) * 4 + agprs if agprs else arch_vgprs


@dataclass(frozen=True)
class Spec:
    arch_vgprs: int  # highest arch VGPR clobbered + 1 (0: none)
    agprs: int  # highest AGPR clobbered + 1
    sgprs: int  # highest SGPR clobbered + 1
    lds: int  # static LDS bytes
    block: int  # amdgpu-flat-work-group-size "block,block"

    def unified(self, target: processors.Processor) -> int:
        """VGPRs per lane allocated at least: ``unified_total`` rounded up to the granule."""
        total = unified_total(self.arch_vgprs, self.agprs)
        return -(-max(total, 1) // target.vgpr_granule) * target.vgpr_granule


    def fits(self, target: processors.Processor) -> bool:
        """A block of this size can be resident at once (all its waves on one CU)."""
        waves = math.ceil(self.block / target.wavefront_size)
        need = math.ceil(waves / target.simds_per_cu)
        return target.vgprs_per_simd_lane // self.unified(target) >= need and self.lds <= target.lds_per_cu


def _specs(target: processors.Processor) -> list[Spec]:
    """A deterministic spread: lists of co-prime lengths walked together, plus the edges."""
    vgprs = (1, 8, 24, 33, 64, 65, 72, 84, 100, 128, 129, 168, 200, 256)
    agprs = (0, 0, 1, 4, 32, 64, 100, 128, 256)
    sgprs = (0, 40, 75, 80, 82, 90, 95, 100, 102)
    full = target.lds_per_cu
    lds = (0, 1, 512, 4096, 12000, 16384, 20000, 32768, 40000, 65536, full // 3, full // 2, full)
    blocks = (64, 128, 192, 256, 320, 512, 576, 768, 960, 1024, 384)
    n = len(vgprs) * 4
    walk = [Spec(vgprs[i % len(vgprs)], agprs[i % len(agprs)], sgprs[i % len(sgprs)],
                 min(lds[i % len(lds)], full), blocks[i % len(blocks)]) for i in range(n)]
    edges = [Spec(256, 256, 102, full, 64), Spec(256, 0, 0, 0, 512), Spec(128, 0, 0, 0, 1024),
             Spec(1, 0, 0, full, 1024), Spec(1, 0, 0, full // 2 + 1, 256), Spec(64, 64, 0, 0, 1024),
             Spec(8, 0, 102, 0, 256), Spec(8, 0, 96, 0, 64)]
    return [s for s in walk + edges if s.fits(target)]


def _kernel_ir(i: int, s: Spec) -> str:
    clobbers = [f"~{{{r}{n - 1}}}" for r, n in (("v", s.arch_vgprs), ("a", s.agprs), ("s", s.sgprs)) if n]
    lds_global, lds_use = "", ""
    if s.lds:
        lds_global = f"@lds{i} = internal addrspace(3) global [{s.lds} x i8] poison, align 16\n"
        lds_use = (f"  %g = getelementptr [{s.lds} x i8], ptr addrspace(3) @lds{i}, i32 0, i32 %x\n"
                   "  store volatile i8 1, ptr addrspace(3) %g\n")
    return (f"{lds_global}define amdgpu_kernel void @k{i}(ptr addrspace(1) %p, i32 %x) #{i} {{\n"
            f'  call void asm sideeffect "", "{",".join(clobbers)}"()\n{lds_use}  ret void\n}}\n'
            f'attributes #{i} = {{ "amdgpu-flat-work-group-size"="{s.block},{s.block}" }}\n')


def parse_remarks(text: str) -> dict[str, dict[str, str]]:
    """``-pass-remarks-analysis=kernel-resource-usage`` output -> {function: {item: value}}."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        m = _REMARK.search(line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if key == "Function Name":
            current = out.setdefault(value, {})
        else:
            current[key] = value
    return out


def compile_with_remarks(arch: str, ir: str, tmp: Path) -> tuple[bytes, dict[str, dict[str, str]]]:
    src, obj = tmp / f"{arch}.ll", tmp / f"{arch}.o"
    src.write_text('target triple = "amdgcn-amd-amdhsa"\n' + ir)
    r = subprocess.run([LLC, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-filetype=obj",
                        "-pass-remarks-analysis=kernel-resource-usage", str(src), "-o", str(obj)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return obj.read_bytes(), parse_remarks(r.stderr)


@pytest.fixture(scope="module", params=["gfx942", "gfx950"])
def compiled(request, tmp_path_factory):
    arch = request.param
    target = processors.get_processor(arch)
    specs = _specs(target)
    data, remarks = compile_with_remarks(
        arch, "".join(_kernel_ir(i, s) for i, s in enumerate(specs)), tmp_path_factory.mktemp(arch))
    co = read_code_object(data, label=f"{arch}.o")
    return target, specs, co, remarks


def test_occupancy_equals_llvm_remark(compiled):
    target, specs, co, remarks = compiled
    assert len(specs) >= 40 and len(remarks) == len(specs)
    seen = set()
    for i, spec in enumerate(specs):
        kernel, r = co.kernel(f"k{i}"), remarks[f"k{i}"]
        where = f"{target.name} k{i} {spec}"
        assert kernel.max_flat_workgroup_size == spec.block, where
        assert kernel.agpr_count == int(r["AGPRs"]), where
        assert kernel.sgpr_count == int(r["TotalSGPRs"]), where
        assert kernel.group_segment_fixed_size == int(r["LDS Size [bytes/block]"]) == spec.lds, where
        assert kernel.vgpr_count == unified_total(int(r["VGPRs"]), int(r["AGPRs"])), where
        # LLVM may allocate more than it counts (a kernel that LDS holds to 1 wave/SIMD gets more)
        assert kernel.descriptor.vgpr_alloc >= spec.unified(target), where
        occ = processors.occupancy(kernel, target, spec.block)
        assert occ.launchable, (where, occ.problems)
        assert occ.waves_per_simd == int(r["Occupancy [waves/SIMD]"]), (where, occ.limits)
        seen.update(occ.limited_by)
    # the set exercises every limit, each alone or with others
    assert seen >= {"hardware", "vgpr", "sgpr", "lds", "workgroup_slots"}, seen
    print(f"{target.name}: {len(specs)} kernels, occupancy equal to llc-22's remark")


def test_blocks_llvm_cannot_hold_are_not_launchable(tmp_path):
    """LLVM's remark counts VGPR waves per SIMD without asking whether a whole workgroup fits:
    256 unified VGPRs allow 2 waves per SIMD, and a 1,024-thread block needs 4 per SIMD at once.
    submitgen says the block cannot launch, and why; LLVM still prints 2."""
    spec = Spec(256, 0, 0, 0, 1024)
    data, remarks = compile_with_remarks("gfx950", _kernel_ir(0, spec), tmp_path)
    occ = processors.occupancy(read_code_object(data).kernel("k0"), "gfx950", 1024)
    assert remarks["k0"]["Occupancy [waves/SIMD]"] == "2"
    assert not occ.launchable and occ.waves_per_simd == 0
    assert occ.problems == ("a block of 1024 threads (16 waves) needs 4 waves per SIMD; 256 VGPRs allow 2",)


CORPUS = Path(__file__).parent / "corpus" / "aiter"


def _twin(kernel, arch: str) -> Spec:
    """An IR kernel LLVM sees with the resources of a third-party one: the descriptor's unified
    VGPR allocation split at ``accum_offset`` into arch VGPRs and AGPRs, its SGPRs (less the 6
    VCC/FLAT_SCRATCH/XNACK_MASK ones LLVM adds; LLVM takes at most 102 numbered ones, and every
count above 100 allows 7 waves), its static LDS, and its block."""
    kd = kernel.descriptor
    agprs = max(0, kd.vgpr_alloc - kd.accum_offset)
    arch_vgprs = kd.accum_offset if agprs else max(kd.vgpr_alloc, kernel.vgpr_count)
    block = processors.occupancy(kernel, arch).block_size  # .reqd_workgroup_size, else the max flat size
    sgprs = min(max(kernel.sgpr_count - 6, 0), 102)
    return Spec(arch_vgprs, agprs, sgprs, kernel.group_segment_fixed_size, block)


def test_corpus_occupancy_equals_llvm_on_twins(tmp_path):
    """Every kernel of the third-party corpus against LLVM's remark for its twin."""
    by_arch: dict[str, list] = {}
    for path in sorted(p for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco")):
        co = read_code_object(path.read_bytes(), label=str(path))
        by_arch.setdefault(co.processor, []).extend((path.name, k) for k in co.kernels)
    compared = 0
    for arch, kernels in sorted(by_arch.items()):
        twins = [_twin(k, arch) for _, k in kernels]
        ir = "".join(_kernel_ir(i, s) for i, s in enumerate(twins))
        _, remarks = compile_with_remarks(arch, ir, tmp_path)
        for i, ((name, kernel), twin) in enumerate(zip(kernels, twins)):
            r, where = remarks[f"k{i}"], f"{arch} {name} {twin}"
            assert int(r["TotalSGPRs"]) == min(max(kernel.sgpr_count, 6), 108), where
            occ = processors.occupancy(kernel, arch, twin.block)
            assert occ.launchable, (where, occ.problems)
            assert occ.waves_per_simd == int(r["Occupancy [waves/SIMD]"]), (where, occ.limits)
            compared += 1
    assert compared == 28
    print(f"{compared} corpus kernels: occupancy equal to llc-22's remark on their twins")
