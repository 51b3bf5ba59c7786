"""The 64-byte kernel descriptor (``NAME.kd``): raw fields and their decoding.

Layout and bit positions: LLVM AMDGPUUsage, "Kernel Descriptor" and the ``compute_pgm_rsrc1/2/3``
and ``kernel_code_properties`` tables (docs/readers.md)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from submitgen.readers.amd import processors

KD_SIZE = 64
_KD = struct.Struct("<IIIIq20sIIIHHI")

RSRC1_VGPR_GRANULES = (0, 0x3F)  # GRANULATED_WORKITEM_VGPR_COUNT
RSRC1_SGPR_GRANULES = (6, 0xF)  # GRANULATED_WAVEFRONT_SGPR_COUNT (GFX9)
# KernelDescriptor's fields read as they are from compute_pgm_rsrc1 / 2: (field, word, shift, mask);
# a one-bit field is a flag
_RSRC_FIELDS = (
    ("float_round_mode_32", 1, 12, 3), ("float_round_mode_16_64", 1, 14, 3),
    ("float_denorm_mode_32", 1, 16, 3), ("float_denorm_mode_16_64", 1, 18, 3),
    ("enable_dx10_clamp", 1, 21, 1), ("enable_ieee_mode", 1, 23, 1), ("fp16_overflow", 1, 26, 1),
    ("enable_private_segment", 2, 0, 1), ("user_sgpr_count", 2, 1, 0x1F), ("enable_trap_handler", 2, 6, 1),
    ("workgroup_id_x", 2, 7, 1), ("workgroup_id_y", 2, 8, 1), ("workgroup_id_z", 2, 9, 1),
    ("workgroup_info", 2, 10, 1), ("granulated_lds_size", 2, 15, 0x1FF),
)
RSRC2_VGPR_WORKITEM_ID = (11, 3)
RSRC2_EXCEPTIONS = (  # (bit, name): the exceptions that trap, bits 24-30
    (24, "fp_ieee_invalid_op"), (25, "fp_denorm_src"), (26, "fp_ieee_div_zero"), (27, "fp_ieee_overflow"),
    (28, "fp_ieee_underflow"), (29, "fp_ieee_inexact"), (30, "int_div_zero"),
)
# compute_pgm_rsrc3 (gfx90a, gfx94x, gfx950)
RSRC3_ACCUM_OFFSET = (0, 0x3F)
RSRC3_TG_SPLIT = (16, 1)
# kernel_code_properties
KCP_USER_SGPRS = (  # (bit, input, SGPRs it takes), in the order they are loaded
    (0, "private_segment_buffer", 4),
    (1, "dispatch_ptr", 2),
    (2, "queue_ptr", 2),
    (3, "kernarg_segment_ptr", 2),
    (4, "dispatch_id", 2),
    (5, "flat_scratch_init", 2),
    (6, "private_segment_size", 1),
)
KCP_PRIVATE_SEGMENT_BUFFER = 1 << 0
KCP_FLAT_SCRATCH_INIT = 1 << 5
KCP_ENABLE_WAVEFRONT_SIZE32 = 1 << 10
KCP_USES_DYNAMIC_STACK = 1 << 11
KCP_RESERVED = 0xF380
# kernarg_preload
PRELOAD_LENGTH = (0, 0x7F)  # dwords
PRELOAD_OFFSET = (7, 0x1FF)  # dwords


def bits(word: int, field: tuple[int, int]) -> int:
    shift, mask = field
    return word >> shift & mask


@dataclass(frozen=True)
class KernelDescriptor:
    """The 64-byte ``NAME.kd``, raw fields and their decoding."""

    address: int  # virtual address of the descriptor (section-relative in ET_REL)
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    compute_pgm_rsrc3: int
    kernel_code_properties: int
    kernarg_preload: int
    reserved_nonzero: bool
    # decoded
    vgpr_granules: int  # rsrc1[5:0]
    vgpr_alloc: int  # unified VGPRs per lane allocated
    sgpr_alloc: int  # rsrc1[9:6] with LLVM's granule 8 (0 on GFX10+)
    accum_offset: int | None  # rsrc3[5:0] -> first AGPR in the unified file (gfx90a/94x/950)
    agpr_alloc: int  # vgpr_alloc - accum_offset (meaningful when the kernel uses AGPRs)
    float_round_mode_32: int
    float_round_mode_16_64: int
    float_denorm_mode_32: int
    float_denorm_mode_16_64: int
    enable_dx10_clamp: bool
    enable_ieee_mode: bool
    fp16_overflow: bool
    enable_private_segment: bool
    user_sgpr_count: int  # rsrc2[5:1]
    enable_trap_handler: bool
    workgroup_id_x: bool
    workgroup_id_y: bool
    workgroup_id_z: bool
    workgroup_info: bool
    workitem_id_dims: int  # 1..3 (rsrc2[12:11] + 1)
    granulated_lds_size: int  # rsrc2[23:15], must be 0
    exceptions: tuple[str, ...]  # enabled rsrc2[30:24] exception traps, by name
    tg_split: bool
    user_sgprs: tuple[str, ...]  # enabled user SGPR inputs, in order
    user_sgprs_needed: int  # SGPRs those inputs take, plus preloaded kernargs
    wave32: bool
    uses_dynamic_stack: bool
    kernarg_preload_length: int  # dwords
    kernarg_preload_offset: int  # dwords

    @property
    def entry_address(self) -> int:
        return self.address + self.kernel_code_entry_byte_offset


def vgpr_encoding_granule(processor: str, *, wave32: bool) -> int:
    """VGPRs per unit of rsrc1's GRANULATED_WORKITEM_VGPR_COUNT (AMDGPUUsage, compute_pgm_rsrc1):
    8 on the unified arch+acc file (gfx90a, gfx94x, gfx950), 4 on other GFX9, and on GFX10+ 8 in
    wave32 and 4 in wave64."""
    if processor in processors.UNIFIED_VGPR:
        return 8
    if processor.startswith("gfx1"):
        return 8 if wave32 else 4
    return 4


def _user_sgprs(kcp: int, preload_len: int) -> tuple[tuple[str, ...], int]:
    user = [label for bit, label, _ in KCP_USER_SGPRS if kcp >> bit & 1]
    need = sum(n for bit, _, n in KCP_USER_SGPRS if kcp >> bit & 1) + preload_len
    return tuple(user) + (("kernarg_preload",) if preload_len else ()), need


def _fields(rsrc1: int, rsrc2: int) -> dict[str, Any]:
    return {name: (bool if mask == 1 else int)(bits((rsrc1, rsrc2)[word - 1], (shift, mask)))
            for name, word, shift, mask in _RSRC_FIELDS}


def decode_descriptor(kd: bytes, address: int, processor: str) -> KernelDescriptor:
    """Decode 64 descriptor bytes (callers guarantee the length)."""
    (group, private, kernarg, res0, entry, res1, rsrc3, rsrc1, rsrc2, kcp, preload, res2) = _KD.unpack(kd)
    unified = processor in processors.UNIFIED_VGPR
    wave32 = bool(kcp & KCP_ENABLE_WAVEFRONT_SIZE32)
    vg = bits(rsrc1, RSRC1_VGPR_GRANULES)
    vgpr_alloc = (vg + 1) * vgpr_encoding_granule(processor, wave32=wave32)
    sgpr_alloc = (bits(rsrc1, RSRC1_SGPR_GRANULES) + 1) * 8 if processor.startswith("gfx9") else 0
    accum = (bits(rsrc3, RSRC3_ACCUM_OFFSET) + 1) * 4 if unified else None
    plen = bits(preload, PRELOAD_LENGTH)
    user, need = _user_sgprs(kcp, plen)
    return KernelDescriptor(
        address=address,
        group_segment_fixed_size=group,
        private_segment_fixed_size=private,
        kernarg_size=kernarg,
        kernel_code_entry_byte_offset=entry,
        compute_pgm_rsrc1=rsrc1,
        compute_pgm_rsrc2=rsrc2,
        compute_pgm_rsrc3=rsrc3,
        kernel_code_properties=kcp,
        kernarg_preload=preload,
        reserved_nonzero=bool(res0 or res2 or any(res1) or kcp & KCP_RESERVED),
        vgpr_granules=vg,
        vgpr_alloc=vgpr_alloc,
        sgpr_alloc=sgpr_alloc,
        accum_offset=accum,
        agpr_alloc=max(0, vgpr_alloc - accum) if accum is not None else 0,
        **_fields(rsrc1, rsrc2),
        workitem_id_dims=bits(rsrc2, RSRC2_VGPR_WORKITEM_ID) + 1,
        exceptions=tuple(name for bit, name in RSRC2_EXCEPTIONS if rsrc2 >> bit & 1),
        tg_split=bool(bits(rsrc3, RSRC3_TG_SPLIT)) if unified else False,
        user_sgprs=user,
        user_sgprs_needed=need,
        wave32=wave32,
        uses_dynamic_stack=bool(kcp & KCP_USES_DYNAMIC_STACK),
        kernarg_preload_length=plen,
        kernarg_preload_offset=preload >> PRELOAD_OFFSET[0],
    )
