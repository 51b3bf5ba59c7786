"""Occupancy: how many waves of a kernel one SIMD holds at a given block size, as LLVM computes it.
Rules and sources: docs/readers.md, "Occupancy"; checked against LLVM 22's remarks by
tests/test_occupancy_llvm.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from submitgen.errors import SubmitgenError

if TYPE_CHECKING:
    from submitgen.readers.amd.processors import Processor


class KernelResources(Protocol):
    """What occupancy needs from a kernel (``codeobject.Kernel`` satisfies it)."""

    @property
    def vgpr_count(self) -> int: ...

    @property
    def sgpr_count(self) -> int: ...

    @property
    def group_segment_fixed_size(self) -> int: ...

    @property
    def max_flat_workgroup_size(self) -> int: ...


@dataclass(frozen=True)
class OccupancyLimit:
    """Waves per SIMD that one resource allows, with the arithmetic in words."""

    resource: str  # "hardware" | "vgpr" | "sgpr" | "lds" | "workgroup_slots"
    waves_per_simd: int
    detail: str


@dataclass(frozen=True)
class Occupancy:
    target: str
    block_size: int
    waves_per_workgroup: int
    waves_per_simd: int
    waves_per_cu: int
    workgroups_per_cu: int
    limited_by: tuple[str, ...]  # the resource(s) whose limit equals waves_per_simd
    limits: tuple[OccupancyLimit, ...]
    launchable: bool
    problems: tuple[str, ...]  # why a block of this size cannot run, if it cannot


def _round_up(x: int, granule: int) -> int:
    return -(-x // granule) * granule


def _sgpr_waves(sgprs: int) -> int:
    # GCNSubtarget::getOccupancyWithNumSGPRs for VI+.
    if sgprs <= 80:
        return 10
    if sgprs <= 88:
        return 9
    if sgprs <= 100:
        return 8
    return 7


@dataclass(frozen=True)
class _Launch:
    t: Processor
    block: int
    wpw: int  # waves per workgroup

    def per_simd(self, wgs_per_cu: int) -> int:
        """Waves on the busiest SIMD when ``wgs_per_cu`` workgroups share a CU: their waves spread
        over the SIMDs, rounded up, at least 1 (LLVM ``getOccupancyWithWorkGroupSizes``:
        ``clamp(divideCeil(waves per CU, EUs per CU), 1, max waves per EU)``)."""
        waves = -(-(wgs_per_cu * self.wpw) // self.t.simds_per_cu)
        return max(1, min(self.t.max_waves_per_simd, waves))


# Each resource: (its limit, the whole workgroups per CU it allows, why the block cannot run or None).
_Result = tuple[OccupancyLimit, int, "str | None"]


def _vgpr(kernel: KernelResources, x: _Launch) -> _Result:
    """LLVM ``getNumWavesPerEUWithNumVGPRs``: per SIMD, not rounded to whole workgroups. A
    workgroup's waves must all be resident at once, so a block needing more waves per SIMD than
    the VGPRs allow cannot launch (LLVM's remark does not say so)."""
    t, simds = x.t, x.t.simds_per_cu
    vgprs = _round_up(max(kernel.vgpr_count, 1), t.vgpr_granule)
    kd_alloc = getattr(getattr(kernel, "descriptor", None), "vgpr_alloc", 0) or 0
    src = f"{kernel.vgpr_count} VGPRs -> {vgprs} allocated (granule {t.vgpr_granule})"
    if kd_alloc > vgprs:  # the hardware allocates what the descriptor says
        vgprs = kd_alloc
        src = f"{kernel.vgpr_count} VGPRs, descriptor allocates {kd_alloc}"
    v_simd = min(t.max_waves_per_simd, t.vgprs_per_simd_lane // vgprs)
    v_wgs = (v_simd * simds) // x.wpw
    problem = None
    if vgprs > t.vgprs_per_simd_lane:
        problem = f"{kernel.vgpr_count} VGPRs exceed the {t.vgprs_per_simd_lane} a lane can address"
    elif v_wgs == 0:
        problem = (
            f"a block of {x.block} threads ({x.wpw} waves) needs {math.ceil(x.wpw / simds)} waves per SIMD; "
            f"{vgprs} VGPRs allow {v_simd}"
        )
    detail = f"{src}; {t.vgprs_per_simd_lane}/{vgprs} -> {v_simd} waves/SIMD"
    return OccupancyLimit("vgpr", v_simd, detail), v_wgs, problem


def _sgpr(kernel: KernelResources, x: _Launch) -> _Result:
    s_simd = min(_sgpr_waves(kernel.sgpr_count), x.t.max_waves_per_simd)
    s_wgs = (s_simd * x.t.simds_per_cu) // x.wpw
    detail = f"{kernel.sgpr_count} SGPRs -> {s_simd} waves/SIMD"
    return OccupancyLimit("sgpr", s_simd, detail), s_wgs, None


def _lds(lds: int, x: _Launch) -> _Result:
    """LLVM ``getOccupancyWithWorkGroupSizes``: whole workgroups by LDS, no allocation granule."""
    t = x.t
    if lds > t.lds_per_workgroup:
        return (OccupancyLimit("lds", 0, f"{lds} B > {t.lds_per_workgroup} B per workgroup"), 0,
                f"LDS {lds} bytes exceeds {t.name}'s {t.lds_per_workgroup} bytes per workgroup")
    l_wgs = t.lds_per_cu // max(lds, 1)
    detail = f"{t.lds_per_cu}/{lds} B = {l_wgs} workgroups/CU" if lds else "no LDS"
    return OccupancyLimit("lds", x.per_simd(l_wgs), detail), l_wgs, None


def _slots(x: _Launch) -> _Result:
    """LLVM ``IsaInfo::getMaxWorkGroupsPerCU``: a one-wave workgroup takes a wave slot only,
    larger ones a barrier too (16 per CU)."""
    t = x.t
    w_wgs = t.max_waves_per_cu if x.wpw == 1 else min(t.max_waves_per_cu // x.wpw, t.max_workgroups_per_cu)
    detail = f"{x.wpw} waves/workgroup -> at most {w_wgs} workgroups/CU"
    return OccupancyLimit("workgroup_slots", x.per_simd(w_wgs), detail), w_wgs, None


def required_block(kernel: KernelResources) -> int | None:
    """Threads per block ``.reqd_workgroup_size`` fixes (x * y * z), or None."""
    reqd = getattr(kernel, "reqd_workgroup_size", None)
    return math.prod(reqd) if reqd else None


def _block_problems(kernel: KernelResources, t: Processor, block_size: int) -> list[str]:
    problems = []
    if block_size > t.max_workgroup_size:
        problems.append(f"block of {block_size} threads exceeds {t.name}'s maximum of {t.max_workgroup_size}")
    if kernel.max_flat_workgroup_size and block_size > kernel.max_flat_workgroup_size:
        problems.append(f"block of {block_size} threads exceeds the kernel's max_flat_workgroup_size "
                        f"{kernel.max_flat_workgroup_size}")
    return problems


def occupancy(
    kernel: KernelResources, target: Processor | str, block_size: int | None = None, *, dynamic_lds: int = 0
) -> Occupancy:
    """Waves per SIMD for ``kernel`` launched with ``block_size`` threads (default: the block its
    ``.reqd_workgroup_size`` fixes, else its ``max_flat_workgroup_size`` capped at the target's
    1024) and ``dynamic_lds`` extra LDS bytes."""
    from submitgen.readers.amd.processors import get_processor  # lazy: processors imports this module

    t = get_processor(target) if isinstance(target, str) else target
    if block_size is None:
        cap = min(kernel.max_flat_workgroup_size or t.max_workgroup_size, t.max_workgroup_size)
        block_size = required_block(kernel) or cap
    if block_size < 1:
        raise SubmitgenError(f"block size: expected a positive number of threads, got {block_size}")
    problems = _block_problems(kernel, t, block_size)
    x = _Launch(t, block_size, math.ceil(block_size / t.wavefront_size))
    slots_cu = t.max_waves_per_cu
    limits = [OccupancyLimit("hardware", t.max_waves_per_simd, f"{t.max_waves_per_simd} waves per SIMD, "
                                                               f"{slots_cu} per CU")]
    wgs = slots_cu // x.wpw if x.wpw <= slots_cu else 0
    lds = kernel.group_segment_fixed_size + dynamic_lds
    for lim, lim_wgs, problem in (_vgpr(kernel, x), _sgpr(kernel, x), _lds(lds, x), _slots(x)):
        limits.append(lim)
        wgs = min(wgs, lim_wgs)
        if problem:
            problems.append(problem)
    waves = 0 if problems else min(lim.waves_per_simd for lim in limits)
    wgs = 0 if problems else wgs
    limited_by = tuple(lim.resource for lim in limits if lim.waves_per_simd == waves)
    if waves > 0 and len(limited_by) > 1 and "hardware" in limited_by:
        limited_by = ("hardware",)
    return Occupancy(
        target=t.name, block_size=block_size, waves_per_workgroup=x.wpw, waves_per_simd=waves,
        waves_per_cu=min(wgs * x.wpw, slots_cu), workgroups_per_cu=wgs, limited_by=limited_by,
        limits=tuple(limits), launchable=not problems, problems=tuple(problems),
    )
