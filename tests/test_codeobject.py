"""The code object model on kernels the tests compile, against their known shapes."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import msgpack
import pytest

from submitgen.errors import CodeObjectError
from submitgen.readers.amd import processors
from submitgen.readers.amd.descriptor import decode_descriptor
from submitgen.readers.amd.header import parse_header
from submitgen.readers.amd.metadata import parse_metadata
from submitgen.readers.amd.reader import read_code_object

EXPLICIT = [  # offset, size, value_kind of many_args(out, in, n, Params p, d, c, big, s)
    (0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 4, "by_value"), (24, 16, "by_value"),
    (40, 8, "by_value"), (48, 1, "by_value"), (56, 8, "by_value"), (64, 8, "global_buffer"),
]


@pytest.mark.parametrize("key,proc,cov", [("args_v6", "gfx950", 6), ("args_v5", "gfx950", 5),
                                          ("args_v4_942", "gfx942", 4), ("args_942", "gfx942", 6)])
def test_header_and_args(cos, key, proc, cov):
    co = read_code_object(cos[key], label=key)
    assert co.processor == proc
    assert co.header.code_object_version == cov
    assert co.header.elf_type == "ET_DYN"
    assert co.target_id == f"amdgcn-amd-amdhsa--{proc}"
    assert co.metadata.version == (1, 2 if cov >= 5 else 1)
    assert co.errors == ()
    k = co.kernel("many_args")
    assert k.symbol == "many_args.kd"
    assert [(a.offset, a.size, a.value_kind) for a in k.explicit_args] == EXPLICIT
    assert k.args[0].actual_access == "write_only" and k.args[0].address_space == "global"
    assert k.explicit_args_size == 72
    assert k.max_flat_workgroup_size == 256 and k.wavefront_size == 64
    assert k.group_segment_fixed_size == 0 and k.private_segment_fixed_size == 0
    assert k.descriptor.kernarg_size == k.kernarg_segment_size
    assert k.descriptor.entry_address == k.function_address and k.code_size > 0
    assert k.descriptor.vgpr_alloc >= k.vgpr_count > 0 and k.sgpr_count > 0
    assert not k.descriptor.wave32 and k.descriptor.user_sgpr_count >= k.descriptor.user_sgprs_needed
    if cov >= 5:  # __builtin_amdgcn_workgroup_size_x reads the v5 implicit block
        hidden = {a.value_kind: a for a in k.hidden_args}
        assert hidden["hidden_block_count_x"].offset == 72
        assert hidden["hidden_group_size_x"].offset == 84 and hidden["hidden_group_size_x"].size == 2
        assert hidden["hidden_grid_dims"].offset == 136
        assert k.kernarg_segment_size == 328
    else:
        assert k.kernarg_segment_size == 72


def test_mangled_name(cos):
    co = read_code_object(cos["args_v6"])
    k = co.kernel("_Z5scaleILi4EEvPfi")
    assert k.symbol == "_Z5scaleILi4EEvPfi.kd"
    assert k.demangled_name == "void scale<4>(float*, int)"
    assert co.kernel("void scale<4>(float*, int)") is k
    assert [(a.offset, a.size, a.value_kind) for a in k.args] == [(0, 8, "global_buffer"), (8, 4, "by_value")]
    assert k.max_flat_workgroup_size == 128


def test_missing_kernel_lists_names(cos):
    co = read_code_object(cos["args_v6"], label="k.co")
    with pytest.raises(
        CodeObjectError, match=r"k.co: no kernel named 'nope'; it has 'many_args', '_Z5scaleILi4EEvPfi'"
    ):
        co.kernel("nope")


def test_big_lds_and_high_vgpr(cos):
    co = read_code_object(cos["big"])
    big = co.kernel("big_lds")
    assert big.group_segment_fixed_size == 160000 > 150 * 1024
    assert big.descriptor.group_segment_fixed_size == 160000
    assert not [f for f in co.findings if f.code == "lds-over-limit"]
    occ = processors.occupancy(big, "gfx950", 256)
    assert occ.launchable and occ.waves_per_simd == 1 and "lds" in occ.limited_by
    occ942 = processors.occupancy(big, "gfx942", 256)
    assert not occ942.launchable and "65536" in occ942.problems[0]

    hv = co.kernel("hi_vgpr")
    assert hv.vgpr_count == 288 and hv.agpr_count == 32  # 256 arch (v255 used) + 32 AGPRs, unified
    assert hv.descriptor.accum_offset == 256 and hv.descriptor.vgpr_alloc == 288
    occ = processors.occupancy(hv, "gfx950", 64)
    assert occ.waves_per_simd == 1 and occ.limited_by == ("vgpr",)
    assert not processors.occupancy(hv, "gfx950", 1024).launchable


def test_lds_over_gfx942_limit_is_an_error_finding(cos):
    data = bytearray(cos["big"])
    flags = struct.unpack_from("<I", data, 48)[0]
    struct.pack_into("<I", data, 48, (flags & ~0xFF) | 0x4C)  # retarget e_flags to gfx942
    co = read_code_object(bytes(data), label="big942")
    assert co.processor == "gfx942"
    codes = {(f.code, f.kernel) for f in co.findings}
    assert ("lds-over-limit", "big_lds") in codes and ("target-mismatch", None) in codes
    f = next(f for f in co.errors if f.code == "lds-over-limit")
    assert f.message == "static LDS 160000 bytes exceeds gfx942's 65536 bytes per workgroup"
    with pytest.raises(CodeObjectError, match="big942"):
        co.require_loadable()


def test_opencl_names_and_types(cos):
    co = read_code_object(cos["opencl"])
    k = co.kernel("cl_axpy")
    assert k.language == "OpenCL C"
    got = [(a.name, a.type_name, a.offset, a.size, a.value_kind, a.address_space) for a in k.explicit_args]
    assert got == [
        ("y", "float*", 0, 8, "global_buffer", "global"),
        ("x", "float*", 8, 8, "global_buffer", "global"),
        ("a", "float", 16, 4, "by_value", None),
        ("n", "int", 20, 4, "by_value", None),
        ("tile", "float*", 24, 4, "dynamic_shared_pointer", "local"),
    ]
    assert k.args[4].pointee_align == 4


def _kd_offset(data: bytes, symbol: str) -> int:
    from io import BytesIO

    from elftools.elf.elffile import ELFFile
    elf = ELFFile(BytesIO(data))
    sym = elf.get_section_by_name(".dynsym").get_symbol_by_name(symbol)[0]
    sec = elf.get_section(sym["st_shndx"])
    return sec["sh_offset"] + sym["st_value"] - sec["sh_addr"]


def test_descriptor_metadata_disagreement(cos):
    data = bytearray(cos["args_v6"])
    off = _kd_offset(bytes(data), "many_args.kd")
    struct.pack_into("<I", data, off, 4096)  # group_segment_fixed_size
    co = read_code_object(bytes(data))
    msgs = [f.message for f in co.kernel("many_args").findings if f.code == "descriptor-mismatch"]
    assert msgs == ["group_segment_fixed_size: metadata says 0, kernel descriptor says 4096"]


def test_descriptor_decoding_recipe():
    # rsrc1: vgpr granules 2, sgpr granules 3; rsrc2: user sgpr 6, wg id x; rsrc3: accum 2; kcp 0x9
    kd = struct.pack("<IIIIq20sIIIHHI", 256, 16, 48, 0, 0x1000, b"\0" * 20, 2 | 1 << 16, 2 | 3 << 6,
                     6 << 1 | 1 << 7, 0x9, 2, 0)
    d = decode_descriptor(kd, 0x800, "gfx950")
    assert (d.vgpr_alloc, d.sgpr_alloc, d.accum_offset, d.agpr_alloc) == (24, 32, 12, 12)
    assert d.user_sgprs == ("private_segment_buffer", "kernarg_segment_ptr", "kernarg_preload")
    assert d.user_sgprs_needed == 8 and d.user_sgpr_count == 6 and d.tg_split
    assert d.entry_address == 0x1800 and d.workgroup_id_x and not d.wave32
    assert d.kernarg_preload_length == 2


def _header(e_flags: int, abi: int = 4, machine: int = 224, osabi: int = 64) -> bytes:
    h = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, osabi, abi, b"\0" * 7, 3, machine, 1,
                    0, 0, 64, e_flags, 64, 56, 0, 64, 1, 0)
    return h + b"\0" * 64


@pytest.mark.parametrize("flags,abi,tid,generic", [
    (0x54F, 4, "amdgcn-amd-amdhsa--gfx950", 0),
    (0xE4C, 3, "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", 0),
    (0x0100055F, 4, "amdgcn-amd-amdhsa--gfx9-4-generic", 1),
    (0x030, 2, "amdgcn-amd-amdhsa--gfx908", 0),
    (0x53F | 0x300, 2, "amdgcn-amd-amdhsa--gfx90a:xnack+", 0),
    (0x041, 3, "amdgcn-amd-amdhsa--gfx1100", 0),
    (0x04E, 3, "amdgcn-amd-amdhsa--gfx1201", 0),
])
def test_e_flags(flags, abi, tid, generic):
    h = parse_header(_header(flags, abi))
    assert h.target_id == tid and h.generic_version == generic and h.code_object_version == abi + 2


@pytest.mark.parametrize("abi,msg", [(1, "code object v3 (ABI version 1) is not supported"),
                                     (0, "code object v2 (ABI version 0) is not supported")])
def test_old_code_objects_refused(abi, msg):
    with pytest.raises(CodeObjectError) as e:
        parse_header(_header(0x54F, abi))
    assert str(e.value) == f"<bytes>: {msg}: expected v4, v5 or v6 (ABI version 2-4)"


def test_unknown_metadata_keys_are_kept():
    doc = {
        "amdhsa.version": [1, 2],
        "amdhsa.target": "amdgcn-amd-amdhsa--gfx950",
        "vendor.extra": [1, {"a": 2}],
        "amdhsa.kernels": [
            {
                ".name": "k",
                ".symbol": "k.kd",
                ".kernarg_segment_size": 8,
                ".kernarg_segment_align": 8,
                ".group_segment_fixed_size": 0,
                ".private_segment_fixed_size": 0,
                ".wavefront_size": 64,
                ".sgpr_count": 4,
                ".vgpr_count": 4,
                ".max_flat_workgroup_size": 64,
                ".new_key": "x",
                ".args": [{".offset": 0, ".size": 8, ".value_kind": "global_buffer", ".future": True}],
            }
        ],
    }
    md, kernels = parse_metadata(msgpack.unpackb(msgpack.packb(doc), raw=False))
    assert md.unknown["vendor.extra"] == (1, {"a": 2})
    assert kernels[0].unknown == {".new_key": "x"}
    assert kernels[0].args[0].unknown == {".future": True}


def test_metadata_type_errors_name_the_key():
    k = {".name": "k", ".symbol": "k.kd", ".kernarg_segment_size": 8, ".kernarg_segment_align": 8,
         ".group_segment_fixed_size": 0, ".private_segment_fixed_size": 0, ".wavefront_size": 64,
         ".sgpr_count": 4, ".vgpr_count": "many", ".max_flat_workgroup_size": 64}
    with pytest.raises(CodeObjectError) as e:
        parse_metadata({"amdhsa.version": [1, 2], "amdhsa.kernels": [k]}, "x.co")
    assert str(e.value) == "x.co: metadata kernel 'k' '.vgpr_count': expected an integer, got str 'many'"
    del k[".wavefront_size"]
    with pytest.raises(CodeObjectError) as e:
        parse_metadata({"amdhsa.version": [1, 2], "amdhsa.kernels": [k]}, "x.co")
    assert str(e.value) == "x.co: metadata kernel 'k': required key '.wavefront_size' is missing"


def _limit(occ, resource: str):
    return next(lim for lim in occ.limits if lim.resource == resource)


@dataclass
class _K:
    vgpr_count: int
    sgpr_count: int = 16
    group_segment_fixed_size: int = 0
    max_flat_workgroup_size: int = 1024


@pytest.mark.parametrize("vgprs,waves", [(64, 8), (72, 7), (80, 6), (96, 5), (128, 4), (168, 3),
                                         (256, 2), (512, 1)])
def test_vgpr_occupancy_table(vgprs, waves):
    occ = processors.occupancy(_K(vgprs), "gfx950", 64)
    assert _limit(occ, "vgpr").waves_per_simd == waves


def test_occupancy_other_limits():
    assert _limit(processors.occupancy(_K(8, sgpr_count=104), "gfx942", 64), "sgpr").waves_per_simd == 7
    occ = processors.occupancy(_K(8, group_segment_fixed_size=32 * 1024), "gfx942", 256)
    assert occ.waves_per_simd == 2 and occ.limited_by == ("lds",)
    occ = processors.occupancy(_K(8, group_segment_fixed_size=32 * 1024), "gfx950", 256)
    # LLVM counts LDS without a granule: 163840 // 32768 = 5 workgroups of 4 waves = 20 -> 5 per SIMD
    assert occ.waves_per_simd == 5 and occ.limited_by == ("lds",)
    assert processors.occupancy(_K(8), "gfx950", 64).limited_by == ("hardware",)
    assert not processors.occupancy(_K(200), "gfx950", 1024).launchable
    with pytest.raises(
        processors.UnknownTargetError, match="unknown target 'gfx1100': expected one of gfx942, gfx950"
    ):
        processors.get_processor("gfx1100")
