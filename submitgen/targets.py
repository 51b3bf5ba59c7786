"""gfx942 (MI300X) and gfx950 (MI355X) hardware facts, and an occupancy estimate.

The occupancy model is LLVM's (``AMDGPUBaseInfo.cpp`` / ``GCNSubtarget``): waves per SIMD is the
minimum over the hardware cap, the VGPR file, the SGPR file, LDS and the workgroup slots of a CU,
each counted in whole workgroups (a workgroup's waves all live on one CU). The LDS and
workgroup-slot rounding is approximate (see ../shared/reference/codeobject.md §4.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from .errors import SubmitgenError, UnknownTargetError


@dataclass(frozen=True)
class Target:
    """Facts of one processor. Sizes in bytes, register counts per lane (VGPR) or per wave (SGPR)."""

    name: str
    marketing_name: str
    mach: int  # EF_AMDGPU_MACH value in e_flags
    compute_units: int
    simds_per_cu: int
    wavefront_size: int
    max_waves_per_simd: int
    lds_per_workgroup: int  # the most LDS one workgroup may use (static + dynamic)
    lds_per_cu: int
    lds_granule: int
    vgprs_per_simd_lane: int  # unified arch + acc VGPRs addressable per lane
    vgpr_granule: int
    vgpr_file_bytes_per_cu: int
    sgprs_per_simd: int
    sgpr_granule: int
    addressable_sgprs: int
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
    vgpr_file_bytes_per_cu=512 * 1024,
    sgprs_per_simd=800,
    sgpr_granule=16,
    addressable_sgprs=102,
    max_workgroup_size=1024,
    max_workgroups_per_cu=40,
)

TARGETS: dict[str, Target] = {
    "gfx942": Target(
        name="gfx942", marketing_name="MI300X/MI300A/MI325X (CDNA3)", mach=0x4C, compute_units=304,
        lds_per_workgroup=64 * 1024, lds_per_cu=64 * 1024, lds_granule=512, **_COMMON,
    ),
    "gfx950": Target(
        name="gfx950", marketing_name="MI350X/MI355X (CDNA4)", mach=0x4F, compute_units=256,
        lds_per_workgroup=160 * 1024, lds_per_cu=160 * 1024, lds_granule=1280, **_COMMON,
    ),
}


def get_target(name: str) -> Target:
    """The facts of ``name`` (``gfx950``, or a target ID such as ``gfx950:sramecc+``)."""
    proc = name.split(":", 1)[0].strip().lower()
    try:
        return TARGETS[proc]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target {name!r}: expected one of {', '.join(sorted(TARGETS))}"
        ) from None


class KernelResources(Protocol):
    """What occupancy needs from a kernel (``codeobject.Kernel`` satisfies it)."""

    vgpr_count: int
    sgpr_count: int
    group_segment_fixed_size: int
    max_flat_workgroup_size: int


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

    def limit(self, resource: str) -> OccupancyLimit:
        for lim in self.limits:
            if lim.resource == resource:
                return lim
        raise KeyError(resource)


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


def occupancy(
    kernel: KernelResources, target: Target | str, block_size: int | None = None, *, dynamic_lds: int = 0
) -> Occupancy:
    """Waves per SIMD for ``kernel`` launched with ``block_size`` threads (default: its
    ``max_flat_workgroup_size``, capped at the target's 1024) and ``dynamic_lds`` extra LDS bytes."""
    t = get_target(target) if isinstance(target, str) else target
    if block_size is None:
        block_size = min(kernel.max_flat_workgroup_size or t.max_workgroup_size, t.max_workgroup_size)
    if block_size < 1:
        raise SubmitgenError(f"block size: expected a positive number of threads, got {block_size}")
    problems: list[str] = []
    if block_size > t.max_workgroup_size:
        problems.append(f"block of {block_size} threads exceeds {t.name}'s maximum of {t.max_workgroup_size}")
    if kernel.max_flat_workgroup_size and block_size > kernel.max_flat_workgroup_size:
        problems.append(
            f"block of {block_size} threads exceeds the kernel's max_flat_workgroup_size "
            f"{kernel.max_flat_workgroup_size}"
        )
    wpw = math.ceil(block_size / t.wavefront_size)  # waves per workgroup
    simds = t.simds_per_cu
    slots_cu = t.max_waves_per_cu

    def per_simd(wgs_per_cu: int) -> int:
        return min(t.max_waves_per_simd, (wgs_per_cu * wpw) // simds)

    limits = [OccupancyLimit("hardware", t.max_waves_per_simd,
                             f"{t.max_waves_per_simd} waves per SIMD, {slots_cu} per CU")]

    vgprs = _round_up(max(kernel.vgpr_count, 1), t.vgpr_granule)
    kd = getattr(kernel, "descriptor", None)
    kd_alloc = getattr(kd, "vgpr_alloc", 0) or 0
    vgpr_src = f"{kernel.vgpr_count} VGPRs -> {vgprs} allocated (granule {t.vgpr_granule})"
    if kd_alloc > vgprs:  # the hardware allocates what the descriptor says
        vgprs = kd_alloc
        vgpr_src = f"{kernel.vgpr_count} VGPRs, descriptor allocates {kd_alloc}"
    v_simd = min(t.max_waves_per_simd, t.vgprs_per_simd_lane // vgprs) if vgprs <= t.vgprs_per_simd_lane else 0
    v_wgs = (v_simd * simds) // wpw
    if vgprs > t.vgprs_per_simd_lane:
        problems.append(f"{kernel.vgpr_count} VGPRs exceed the {t.vgprs_per_simd_lane} a lane can address")
    elif v_wgs == 0:
        problems.append(
            f"a block of {block_size} threads ({wpw} waves) needs {math.ceil(wpw / simds)} waves per SIMD; "
            f"{vgprs} VGPRs allow {v_simd}"
        )
    limits.append(OccupancyLimit(
        "vgpr", per_simd(v_wgs),
        f"{vgpr_src}; {t.vgprs_per_simd_lane}/{vgprs} -> {v_simd} waves/SIMD -> {v_wgs} workgroups/CU",
    ))

    s_simd = min(_sgpr_waves(kernel.sgpr_count), t.max_waves_per_simd)
    s_wgs = (s_simd * simds) // wpw
    limits.append(OccupancyLimit(
        "sgpr", per_simd(s_wgs),
        f"{kernel.sgpr_count} SGPRs -> {s_simd} waves/SIMD -> {s_wgs} workgroups/CU",
    ))

    lds = kernel.group_segment_fixed_size + dynamic_lds
    if lds > t.lds_per_workgroup:
        problems.append(f"LDS {lds} bytes exceeds {t.name}'s {t.lds_per_workgroup} bytes per workgroup")
        limits.append(OccupancyLimit("lds", 0, f"{lds} B > {t.lds_per_workgroup} B per workgroup"))
    elif lds == 0:
        limits.append(OccupancyLimit("lds", t.max_waves_per_simd, "no LDS"))
    else:
        lds_alloc = _round_up(lds, t.lds_granule)
        l_wgs = t.lds_per_cu // lds_alloc
        limits.append(OccupancyLimit(
            "lds", per_simd(l_wgs),
            f"{lds} B -> {lds_alloc} B allocated (granule {t.lds_granule}); "
            f"{t.lds_per_cu}/{lds_alloc} = {l_wgs} workgroups/CU",
        ))

    w_wgs = t.max_workgroups_per_cu if wpw == 1 else min(t.max_workgroups_per_cu // wpw, 16)
    limits.append(OccupancyLimit(
        "workgroup_slots", per_simd(w_wgs),
        f"{wpw} waves/workgroup -> at most {w_wgs} workgroups/CU",
    ))

    wgs = min(slots_cu // wpw if wpw <= slots_cu else 0, v_wgs, s_wgs, w_wgs,
              t.lds_per_cu // _round_up(lds, t.lds_granule) if 0 < lds <= t.lds_per_workgroup else slots_cu)
    if problems:
        wgs = 0
    waves = min(lim.waves_per_simd for lim in limits)
    if problems:
        waves = 0
    limited_by = tuple(lim.resource for lim in limits if lim.waves_per_simd == waves)
    if waves > 0 and len(limited_by) > 1 and "hardware" in limited_by:
        limited_by = ("hardware",)
    return Occupancy(
        target=t.name, block_size=block_size, waves_per_workgroup=wpw, waves_per_simd=waves,
        waves_per_cu=min(wgs * wpw, slots_cu), workgroups_per_cu=wgs, limited_by=limited_by,
        limits=tuple(limits), launchable=not problems, problems=tuple(problems),
    )
