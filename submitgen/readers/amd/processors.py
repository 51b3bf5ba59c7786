"""gfx942 (MI300X) and gfx950 (MI355X) hardware facts (docs/readers.md, "Occupancy"), kept here
once: the ``EF_AMDGPU_MACH`` numbers, which processors have the unified VGPR/AGPR file and
architected flat scratch, what a generic target covers, and the block and grid limits."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.errors import UnknownTargetError
from submitgen.readers.amd.occupancy import KernelResources, Occupancy, OccupancyLimit, occupancy

MAX_WORKGROUP_SIZE = 1024  # threads per workgroup on every AMD processor (and every CUDA SM)
# Grid limits of a kernel launch (hipModuleLaunchKernel; docs/launch-limits.md): blocks in x, in y
# and z, and x blocks times x threads.
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65536
MAX_GLOBAL_X = 2**32 - 1
# Loader and hardware bounds every GFX9 kernel must respect (docs/readers.md, "Limits").
MAX_SGPRS_PER_WAVE_GFX9 = 112  # 102 addressable + VCC, FLAT_SCRATCH, XNACK_MASK, in granules of 16
MAX_SCRATCH_PER_LANE = 8191 * 1024 // 64  # COMPUTE_TMPRING_SIZE.WAVESIZE: 13 bits of 1 KiB per wave64
POINTER_SIZE = 8  # a global_buffer argument is a 64-bit address

# EF_AMDGPU_MACH values (LLVM llvm/include/llvm/BinaryFormat/ELF.h; AMDGPUUsage "AMDGPU ELF Header").
MACH_NAMES: dict[int, str] = {
    0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906", 0x030: "gfx908",
    0x031: "gfx909", 0x032: "gfx90c", 0x03F: "gfx90a", 0x040: "gfx940", 0x04B: "gfx941",
    0x04C: "gfx942", 0x04F: "gfx950",
    0x033: "gfx1010", 0x034: "gfx1011", 0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031",
    0x038: "gfx1032", 0x039: "gfx1033", 0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805",
    0x03D: "gfx1035", 0x03E: "gfx1034", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x04A: "gfx1151", 0x04E: "gfx1201", 0x055: "gfx1152", 0x058: "gfx1153",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x059: "gfx12-generic", 0x05F: "gfx9-4-generic",
}
# Processors whose VGPR file is unified arch+acc (granule 8, ACCUM_OFFSET in rsrc3).
UNIFIED_VGPR = frozenset({"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"})
ARCHITECTED_FLAT_SCRATCH = frozenset({"gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"})
# Processors a generic target covers (AMDGPUUsage "Generic Processors").
GENERIC_COVERS: dict[str, frozenset[str]] = {
    "gfx9-4-generic": frozenset({"gfx940", "gfx941", "gfx942", "gfx950"}),
    "gfx9-generic": frozenset({"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}),
}


@dataclass(frozen=True)
class Processor:
    """Facts of one processor. Sizes in bytes, register counts per lane (VGPR) or per wave (SGPR)."""

    name: str
    simds_per_cu: int
    wavefront_size: int
    max_waves_per_simd: int
    lds_per_workgroup: int  # the most LDS one workgroup may use (static + dynamic)
    lds_per_cu: int
    vgprs_per_simd_lane: int  # unified arch + acc VGPRs addressable per lane
    vgpr_granule: int
    max_workgroup_size: int
    max_workgroups_per_cu: int

    @property
    def max_waves_per_cu(self) -> int:
        return self.max_waves_per_simd * self.simds_per_cu


_COMMON = dict(
    simds_per_cu=4,
    wavefront_size=64,
    max_waves_per_simd=8,
    vgprs_per_simd_lane=512,
    vgpr_granule=8,
    max_workgroup_size=MAX_WORKGROUP_SIZE,
    max_workgroups_per_cu=16,  # workgroup barriers per CU (LLVM getMaxWorkGroupsPerCU)
)


def _cdna(name: str, lds: int) -> Processor:
    """A CDNA processor: ``lds`` bytes of LDS per CU, all of which one workgroup may use."""
    return Processor(name=name, lds_per_workgroup=lds, lds_per_cu=lds, **_COMMON)


PROCESSORS: dict[str, Processor] = {
    "gfx942": _cdna("gfx942", lds=64 * 1024),  # MI300X/MI300A/MI325X (CDNA3)
    "gfx950": _cdna("gfx950", lds=160 * 1024),  # MI350X/MI355X (CDNA4)
}


def get_processor(name: str) -> Processor:
    """The facts of ``name`` (``gfx950``, or a target ID such as ``gfx950:sramecc+``)."""
    proc = name.split(":", 1)[0].strip().lower()
    try:
        return PROCESSORS[proc]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target {name!r}: expected one of {', '.join(sorted(PROCESSORS))}"
        ) from None

__all__ = ["MACH_NAMES", "MAX_WORKGROUP_SIZE", "PROCESSORS", "KernelResources", "Occupancy",
           "OccupancyLimit", "Processor", "UnknownTargetError", "get_processor", "occupancy"]
