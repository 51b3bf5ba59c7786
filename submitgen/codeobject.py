"""AMDGPU HSA code object (``.co`` / ``.hsaco``) bytes -> a frozen, typed model.

``read_code_object(data)`` checks the ELF header (ELF64, little-endian, EM_AMDGPU, OS/ABI HSA,
code object v4/v5/v6), decodes ``e_flags`` into a target ID, decodes the ``NT_AMDGPU_METADATA``
msgpack note, finds every kernel's ``NAME.kd`` descriptor and decodes it, and cross-checks the
two. Input it cannot make sense of raises ``CodeObjectError`` (one line naming the thing, the
expected and the actual value); things that parse but look wrong become ``Finding``s.
Facts: ../shared/reference/codeobject.md."""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from io import BytesIO
from types import MappingProxyType
from typing import Any

import msgpack
from elftools.common.exceptions import ELFError, ELFParseError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from . import targets
from .errors import CodeObjectError

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
NT_AMDGPU_METADATA = 32
KD_SIZE = 64

# EF_AMDGPU_MACH values (llvm/include/llvm/BinaryFormat/ELF.h).
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
_UNIFIED_VGPR = {"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"}
_ARCHITECTED_FLAT_SCRATCH = {"gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"}
_FEATURE_STATES = {0: "unsupported", 1: "any", 2: "off", 3: "on"}

EXPLICIT_VALUE_KINDS = frozenset(
    {"by_value", "global_buffer", "dynamic_shared_pointer", "sampler", "image", "pipe", "queue"}
)

_HEADER = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Finding:
    """Something that parses but a loader or a careful user would object to."""

    severity: str  # "error" (will not load / launch), "warning", "info"
    code: str  # stable short id, e.g. "descriptor-mismatch", "lds-over-limit", "spills"
    message: str
    kernel: str | None = None


@dataclass(frozen=True)
class ElfHeader:
    elf_type: str  # "ET_DYN" (linked, loadable) or "ET_REL" (unlinked compiler output)
    abi_version: int  # EI_ABIVERSION
    code_object_version: int  # abi_version + 2
    e_flags: int
    mach: int
    processor: str  # "gfx950", "gfx9-4-generic", or "unknown-0xNN"
    xnack: str  # "any" | "on" | "off" | "unsupported"
    sramecc: str
    generic_version: int  # v6 generic code objects; 0 otherwise

    @property
    def target_id(self) -> str:
        """``amdgcn-amd-amdhsa--gfx950:sramecc+`` (features alphabetical; ANY/unsupported omitted)."""
        tid = f"amdgcn-amd-amdhsa--{self.processor}"
        for feat, state in (("sramecc", self.sramecc), ("xnack", self.xnack)):
            if state in ("on", "off"):
                tid += f":{feat}{'+' if state == 'on' else '-'}"
        return tid


@dataclass(frozen=True)
class KernelArg:
    """One entry of a kernel's ``.args`` (metadata names without the dot)."""

    index: int
    offset: int
    size: int
    value_kind: str
    name: str | None = None
    type_name: str | None = None
    address_space: str | None = None
    access: str | None = None
    actual_access: str | None = None
    pointee_align: int | None = None
    is_const: bool | None = None
    is_restrict: bool | None = None
    is_volatile: bool | None = None
    is_pipe: bool | None = None
    value_type: str | None = None
    unknown: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    @property
    def hidden(self) -> bool:
        return self.value_kind.startswith("hidden_")

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class KernelDescriptor:
    """The 64-byte ``NAME.kd``, raw fields and their decoding (codeobject.md §3)."""

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


@dataclass(frozen=True)
class Kernel:
    """One kernel: its metadata map (typed), its descriptor and its entry symbol."""

    name: str  # metadata .name: what hipModuleGetFunction takes
    symbol: str  # metadata .symbol: NAME.kd
    args: tuple[KernelArg, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    agpr_count: int
    max_flat_workgroup_size: int
    sgpr_spill_count: int = 0
    vgpr_spill_count: int = 0
    uniform_work_group_size: bool = False
    uses_dynamic_stack: bool | None = None
    workgroup_processor_mode: bool | None = None
    language: str | None = None
    language_version: tuple[int, ...] | None = None
    kind: str | None = None
    reqd_workgroup_size: tuple[int, ...] | None = None
    workgroup_size_hint: tuple[int, ...] | None = None
    vec_type_hint: str | None = None
    device_enqueue_symbol: str | None = None
    max_num_workgroups: tuple[int, int, int] | None = None
    cluster_dims: tuple[int, ...] | None = None
    descriptor: KernelDescriptor | None = None
    function_address: int | None = None  # value of the STT_FUNC symbol NAME
    code_size: int | None = None  # st_size of the STT_FUNC symbol NAME
    findings: tuple[Finding, ...] = ()
    unknown: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    @property
    def demangled_name(self) -> str:
        return demangle(self.name)

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if not a.hidden)

    @property
    def hidden_args(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if a.hidden)

    @property
    def explicit_args_size(self) -> int:
        """Bytes up to the end of the last explicit argument (what ``extra``/kernelParams carry)."""
        return max((a.end for a in self.explicit_args), default=0)


@dataclass(frozen=True)
class Metadata:
    version: tuple[int, ...]  # amdhsa.version
    target: str | None  # amdhsa.target
    printf: tuple[str, ...] = ()
    unknown: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)


class KernelLookup:
    """Lookups shared by AMD code objects and CUDA cubins: both have ``source``, a ``header``
    (with ``processor`` and ``target_id``), ``kernels`` (each with ``name``, ``symbol``,
    ``demangled_name``) and ``findings``."""

    source: str
    header: Any
    kernels: tuple
    findings: tuple

    @property
    def target_id(self) -> str:
        return self.header.target_id

    @property
    def processor(self) -> str:
        return self.header.processor

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    def kernel(self, name: str):
        """The kernel whose name (or symbol, or unique demangled name, with or without its
        argument list) is ``name``; a ``CodeObjectError`` listing the kernels otherwise."""
        for k in self.kernels:
            if name in (k.name, k.symbol):
                return k
        by_demangled = [k for k in self.kernels if name in (k.demangled_name, k.demangled_name.split("(")[0])]
        if len(by_demangled) == 1:
            return by_demangled[0]
        names = ", ".join(repr(k.name) for k in self.kernels) or "none"
        raise CodeObjectError(f"{self.source}: no kernel named {name!r}; it has {names}")

    def require_loadable(self) -> None:
        """Raise ``CodeObjectError`` with the first error finding, if any."""
        if self.errors:
            f = self.errors[0]
            where = f"kernel {f.kernel!r}: " if f.kernel else ""
            raise CodeObjectError(f"{self.source}: {where}{f.message}")


@dataclass(frozen=True)
class CodeObject(KernelLookup):
    source: str
    size: int
    sha256: str
    header: ElfHeader
    metadata: Metadata
    kernels: tuple[Kernel, ...]
    findings: tuple[Finding, ...]  # object-level findings plus every kernel's

    @property
    def code_object_version(self) -> int:
        return self.header.code_object_version

    def target(self) -> targets.Target | None:
        """Hardware facts for this object's processor, or None when submitgen has none."""
        return targets.TARGETS.get(self.header.processor)


# --------------------------------------------------------------------------- demangling


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """Demangle an Itanium C++ name with ``c++filt``/``llvm-cxxfilt`` when present; else ``name``."""
    if not name.startswith("_Z"):
        return name
    return demangle_many((name,))[0]


def demangle_many(names: tuple[str, ...]) -> tuple[str, ...]:
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    mangled = [n for n in names if n.startswith("_Z") and "\n" not in n]
    if not tool or not mangled:
        return names
    try:
        r = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True, text=True,
                           timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return names
    out = r.stdout.splitlines()
    if r.returncode != 0 or len(out) != len(mangled):
        return names
    table = dict(zip(mangled, out))
    return tuple(table.get(n, n) for n in names)


# --------------------------------------------------------------------------- header


def elf64_header_fields(data: bytes, source: str, machine: int, machine_name: str) -> tuple:
    """The unpacked Elf64_Ehdr of ``data`` once magic, length, class, byte order and
    ``e_machine`` are checked (shared by AMD code objects and CUDA cubins)."""
    if len(data) < 4 or data[:4] != b"\x7fELF":
        raise CodeObjectError(f"{source}: not an ELF file: expected magic 7f454c46, got {data[:4].hex() or 'empty'}")
    if len(data) < _HEADER.size:
        raise CodeObjectError(
            f"{source}: truncated ELF: expected at least {_HEADER.size} header bytes, got {len(data)}"
        )
    fields = _HEADER.unpack_from(data)
    ei_class, ei_data, e_machine = fields[1], fields[2], fields[8]
    if ei_class != 2:
        raise CodeObjectError(f"{source}: ELF class: expected ELFCLASS64 (2), got {ei_class}")
    if ei_data != 1:
        raise CodeObjectError(f"{source}: ELF data encoding: expected little-endian (1), got {ei_data}")
    if e_machine != machine:
        raise CodeObjectError(f"{source}: ELF machine: expected {machine_name} ({machine}), got {e_machine}")
    return fields


def check_section_table(data: bytes, source: str, e_shoff: int, e_shentsize: int, e_shnum: int,
                        e_shstrndx: int) -> None:
    """The section header table exists, fits the file and names its string table (loaders size
    a bare ELF image from it)."""
    if e_shentsize != 64 or e_shnum == 0:
        raise CodeObjectError(
            f"{source}: section header table: expected 64-byte entries and at least one, "
            f"got e_shentsize {e_shentsize}, e_shnum {e_shnum}"
        )
    end = e_shoff + e_shentsize * e_shnum
    if end > len(data):
        raise CodeObjectError(
            f"{source}: truncated ELF: section header table ends at byte {end}, file has {len(data)} bytes"
        )
    if e_shstrndx >= e_shnum:
        raise CodeObjectError(f"{source}: e_shstrndx: expected below e_shnum {e_shnum}, got {e_shstrndx}")


def parse_header(data: bytes, source: str = "<bytes>") -> ElfHeader:
    """Check and decode the ELF header; ``CodeObjectError`` for anything a loader refuses."""
    (_, _class, _data, _ver, osabi, abiver, _pad, e_type, _machine, _ev, _entry, e_phoff, e_shoff,
     e_flags, _ehsize, _phentsize, _phnum, e_shentsize, e_shnum, e_shstrndx) = elf64_header_fields(
        data, source, EM_AMDGPU, "EM_AMDGPU")
    if osabi != ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(f"{source}: ELF OS/ABI: expected AMDGPU_HSA (64), got {osabi}")
    if abiver in (0, 1):
        raise CodeObjectError(
            f"{source}: code object v{abiver + 2} (ABI version {abiver}) is not supported: "
            f"expected v4, v5 or v6 (ABI version 2-4)"
        )
    if abiver not in (2, 3, 4):
        raise CodeObjectError(f"{source}: ELF ABI version: expected 2, 3 or 4 (code object v4-v6), got {abiver}")
    if e_type not in (1, 3):
        raise CodeObjectError(f"{source}: ELF type: expected ET_DYN (3), got {e_type}")
    check_section_table(data, source, e_shoff, e_shentsize, e_shnum, e_shstrndx)
    mach = e_flags & 0xFF
    processor = MACH_NAMES.get(mach, f"unknown-0x{mach:02x}")
    xnack = _FEATURE_STATES[(e_flags >> 8) & 3]
    sramecc = _FEATURE_STATES[(e_flags >> 10) & 3]
    generic = (e_flags >> 24) & 0xFF if abiver >= 4 else 0
    return ElfHeader(
        elf_type="ET_DYN" if e_type == 3 else "ET_REL", abi_version=abiver, code_object_version=abiver + 2,
        e_flags=e_flags, mach=mach, processor=processor, xnack=xnack, sramecc=sramecc, generic_version=generic,
    )


# --------------------------------------------------------------------------- metadata


class _Map:
    """Typed reads from one msgpack map, naming the place on error; remembers keys used."""

    def __init__(self, m: Any, where: str, source: str):
        if not isinstance(m, dict):
            raise CodeObjectError(f"{source}: metadata {where}: expected a map, got {type(m).__name__}")
        self.m, self.where, self.source, self.used = m, where, source, set()

    def _get(self, key: str, required: bool):
        self.used.add(key)
        if key not in self.m:
            if required:
                raise CodeObjectError(f"{self.source}: metadata {self.where}: required key '{key}' is missing")
            return None
        return self.m[key]

    def _bad(self, key: str, expected: str, v: Any) -> CodeObjectError:
        shown = repr(v)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return CodeObjectError(
            f"{self.source}: metadata {self.where} '{key}': expected {expected}, got {type(v).__name__} {shown}"
        )

    def int(self, key: str, required: bool = False, default: int | None = None) -> int | None:
        v = self._get(key, required)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._bad(key, "an integer", v)
        if v < 0:
            raise self._bad(key, "a non-negative integer", v)
        return v

    def str(self, key: str, required: bool = False) -> str | None:
        v = self._get(key, required)
        if v is None:
            return None
        if not isinstance(v, str):
            raise self._bad(key, "a string", v)
        return v

    def bool(self, key: str) -> bool | None:
        v = self._get(key, False)
        if v is None:
            return None
        if isinstance(v, bool):
            return v
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise self._bad(key, "a boolean", v)

    def ints(self, key: str, length: int | None = None) -> tuple[int, ...] | None:
        v = self._get(key, False)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v) \
                or (length is not None and len(v) != length):
            raise self._bad(key, f"a list of {length or 'some'} integers", v)
        return tuple(v)

    def list(self, key: str, required: bool = False) -> list | None:
        v = self._get(key, required)
        if v is None:
            return None
        if not isinstance(v, list):
            raise self._bad(key, "a list", v)
        return v

    def unknown(self) -> Mapping[str, Any]:
        return MappingProxyType({k: _freeze(v) for k, v in self.m.items() if k not in self.used})


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return MappingProxyType({k: _freeze(x) for k, x in v.items()})
    return v


def decode_metadata_note(desc: bytes, source: str = "<bytes>") -> Any:
    try:
        return msgpack.unpackb(desc, raw=False, strict_map_key=True)
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError,
            UnicodeDecodeError) as e:
        detail = f"{type(e).__name__}: {str(e)[:80]}" if str(e) else type(e).__name__
        raise CodeObjectError(
            f"{source}: NT_AMDGPU_METADATA note: expected a msgpack map, got undecodable bytes ({detail})"
        ) from None


def _parse_arg(raw: Any, index: int, kname: str, source: str) -> KernelArg:
    m = _Map(raw, f"kernel {kname!r} arg {index}", source)
    return KernelArg(
        index=index, offset=m.int(".offset", True), size=m.int(".size", True),
        value_kind=m.str(".value_kind", True), name=m.str(".name"), type_name=m.str(".type_name"),
        address_space=m.str(".address_space"), access=m.str(".access"), actual_access=m.str(".actual_access"),
        pointee_align=m.int(".pointee_align"), is_const=m.bool(".is_const"), is_restrict=m.bool(".is_restrict"),
        is_volatile=m.bool(".is_volatile"), is_pipe=m.bool(".is_pipe"), value_type=m.str(".value_type"),
        unknown=m.unknown(),
    )


def _parse_kernel_meta(raw: Any, index: int, source: str) -> dict[str, Any]:
    m = _Map(raw, f"kernel {index}", source)
    name = m.str(".name", True)
    m.where = f"kernel {name!r}"
    args_raw = m.list(".args") or []
    mnw = [m.int(f".max_num_workgroups_{d}") for d in "xyz"]
    return dict(
        name=name, symbol=m.str(".symbol", True),
        args=tuple(_parse_arg(a, i, name, source) for i, a in enumerate(args_raw)),
        kernarg_segment_size=m.int(".kernarg_segment_size", True),
        kernarg_segment_align=m.int(".kernarg_segment_align", True),
        group_segment_fixed_size=m.int(".group_segment_fixed_size", True),
        private_segment_fixed_size=m.int(".private_segment_fixed_size", True),
        wavefront_size=m.int(".wavefront_size", True), sgpr_count=m.int(".sgpr_count", True),
        vgpr_count=m.int(".vgpr_count", True), agpr_count=m.int(".agpr_count", default=0),
        max_flat_workgroup_size=m.int(".max_flat_workgroup_size", True),
        sgpr_spill_count=m.int(".sgpr_spill_count", default=0), vgpr_spill_count=m.int(".vgpr_spill_count", default=0),
        uniform_work_group_size=bool(m.int(".uniform_work_group_size", default=0)),
        uses_dynamic_stack=m.bool(".uses_dynamic_stack"), workgroup_processor_mode=m.bool(".workgroup_processor_mode"),
        language=m.str(".language"), language_version=m.ints(".language_version"), kind=m.str(".kind"),
        reqd_workgroup_size=m.ints(".reqd_workgroup_size", 3), workgroup_size_hint=m.ints(".workgroup_size_hint", 3),
        vec_type_hint=m.str(".vec_type_hint"), device_enqueue_symbol=m.str(".device_enqueue_symbol"),
        max_num_workgroups=tuple(x or 0 for x in mnw) if any(x is not None for x in mnw) else None,
        cluster_dims=m.ints(".cluster_dims", 3), unknown=m.unknown(),
    )


def parse_metadata(doc: Any, source: str = "<bytes>") -> tuple[Metadata, list[dict[str, Any]]]:
    m = _Map(doc, "root", source)
    version = m.ints("amdhsa.version", None)
    if version is None:
        raise CodeObjectError(f"{source}: metadata: required key 'amdhsa.version' is missing")
    if len(version) != 2:
        raise CodeObjectError(f"{source}: metadata 'amdhsa.version': expected [major, minor], got {list(version)}")
    target = m.str("amdhsa.target")
    printf = m.list("amdhsa.printf") or []
    if not all(isinstance(p, str) for p in printf):
        raise CodeObjectError(f"{source}: metadata 'amdhsa.printf': expected a list of strings")
    kernels_raw = m.list("amdhsa.kernels") or []
    kernels = [_parse_kernel_meta(k, i, source) for i, k in enumerate(kernels_raw)]
    return Metadata(version=version, target=target, printf=tuple(printf), unknown=m.unknown()), kernels


# --------------------------------------------------------------------------- descriptor


def vgpr_encoding_granule(processor: str, *, wave32: bool) -> int:
    """VGPRs per unit of rsrc1's GRANULATED_WORKITEM_VGPR_COUNT (AMDGPUUsage, compute_pgm_rsrc1):
    8 on the unified arch+acc file (gfx90a, gfx94x, gfx950), 4 on other GFX9, and on GFX10+ 8 in
    wave32 and 4 in wave64."""
    if processor in _UNIFIED_VGPR:
        return 8
    if processor.startswith("gfx1"):
        return 8 if wave32 else 4
    return 4


def decode_descriptor(kd: bytes, address: int, processor: str) -> KernelDescriptor:
    """Decode 64 descriptor bytes (callers guarantee the length)."""
    (group, private, kernarg, res0, entry, res1, rsrc3, rsrc1, rsrc2, kcp, preload, res2) = struct.unpack(
        "<IIIIq20sIIIHHI", kd
    )
    unified = processor in _UNIFIED_VGPR
    vg = rsrc1 & 0x3F
    vgpr_alloc = (vg + 1) * vgpr_encoding_granule(processor, wave32=bool(kcp & 0x400))
    is_gfx9 = processor.startswith("gfx9")
    sgpr_alloc = (((rsrc1 >> 6) & 0xF) + 1) * 8 if is_gfx9 else 0
    accum = ((rsrc3 & 0x3F) + 1) * 4 if unified else None
    user = []
    need = 0
    for bit, label, n in ((0, "private_segment_buffer", 4), (1, "dispatch_ptr", 2), (2, "queue_ptr", 2),
                          (3, "kernarg_segment_ptr", 2), (4, "dispatch_id", 2), (5, "flat_scratch_init", 2),
                          (6, "private_segment_size", 1)):
        if kcp >> bit & 1:
            user.append(label)
            need += n
    plen, poff = preload & 0x7F, preload >> 7
    need += plen
    return KernelDescriptor(
        address=address, group_segment_fixed_size=group, private_segment_fixed_size=private, kernarg_size=kernarg,
        kernel_code_entry_byte_offset=entry, compute_pgm_rsrc1=rsrc1, compute_pgm_rsrc2=rsrc2,
        compute_pgm_rsrc3=rsrc3, kernel_code_properties=kcp, kernarg_preload=preload,
        reserved_nonzero=bool(res0 or res2 or any(res1) or kcp & 0xF380),
        vgpr_granules=vg, vgpr_alloc=vgpr_alloc, sgpr_alloc=sgpr_alloc, accum_offset=accum,
        agpr_alloc=max(0, vgpr_alloc - accum) if accum is not None else 0,
        float_round_mode_32=rsrc1 >> 12 & 3, float_round_mode_16_64=rsrc1 >> 14 & 3,
        float_denorm_mode_32=rsrc1 >> 16 & 3, float_denorm_mode_16_64=rsrc1 >> 18 & 3,
        enable_dx10_clamp=bool(rsrc1 >> 21 & 1), enable_ieee_mode=bool(rsrc1 >> 23 & 1),
        fp16_overflow=bool(rsrc1 >> 26 & 1),
        enable_private_segment=bool(rsrc2 & 1), user_sgpr_count=rsrc2 >> 1 & 0x1F,
        enable_trap_handler=bool(rsrc2 >> 6 & 1), workgroup_id_x=bool(rsrc2 >> 7 & 1),
        workgroup_id_y=bool(rsrc2 >> 8 & 1), workgroup_id_z=bool(rsrc2 >> 9 & 1),
        workgroup_info=bool(rsrc2 >> 10 & 1), workitem_id_dims=(rsrc2 >> 11 & 3) + 1,
        granulated_lds_size=rsrc2 >> 15 & 0x1FF, tg_split=bool(rsrc3 >> 16 & 1) if unified else False,
        user_sgprs=tuple(user) + (("kernarg_preload",) if plen else ()), user_sgprs_needed=need,
        wave32=bool(kcp >> 10 & 1), uses_dynamic_stack=bool(kcp >> 11 & 1),
        kernarg_preload_length=plen, kernarg_preload_offset=poff,
    )


def _check_kernel(meta: dict[str, Any], kd: KernelDescriptor | None, header: ElfHeader,
                  func: tuple[int, int] | None) -> list[Finding]:
    """Descriptor/metadata cross-checks and resource warnings for one kernel."""
    name = meta["name"]
    out: list[Finding] = []

    def add(sev: str, code: str, msg: str) -> None:
        out.append(Finding(sev, code, msg, name))

    if meta["symbol"] != name + ".kd":
        add("warning", "symbol-name", f".symbol is {meta['symbol']!r}, expected {name + '.kd'!r}")
    if kd is not None:
        for field_name, kd_val in (("group_segment_fixed_size", kd.group_segment_fixed_size),
                                   ("private_segment_fixed_size", kd.private_segment_fixed_size),
                                   ("kernarg_segment_size", kd.kernarg_size)):
            mv = meta[field_name]
            if kd_val != mv and not (field_name == "kernarg_segment_size" and kd_val == 0):
                add("error", "descriptor-mismatch",
                    f"{field_name}: metadata says {mv}, kernel descriptor says {kd_val}")
        granule = vgpr_encoding_granule(header.processor, wave32=kd.wave32)
        need = -(-meta["vgpr_count"] // granule) * granule
        if kd.vgpr_alloc < need:
            add("error", "descriptor-mismatch",
                f"VGPRs: metadata .vgpr_count {meta['vgpr_count']} needs {need} allocated, "
                f"descriptor allocates {kd.vgpr_alloc}")
        if kd.accum_offset is not None and meta["agpr_count"] and kd.accum_offset + meta["agpr_count"] > kd.vgpr_alloc:
            add("error", "descriptor-mismatch",
                f"AGPRs: accum_offset {kd.accum_offset} + .agpr_count {meta['agpr_count']} exceeds "
                f"the {kd.vgpr_alloc} VGPRs allocated")
        if kd.user_sgpr_count < kd.user_sgprs_needed:
            add("error", "descriptor-mismatch",
                f"USER_SGPR_COUNT {kd.user_sgpr_count} is below the {kd.user_sgprs_needed} SGPRs its inputs need")
        wave = 32 if kd.wave32 else 64
        if wave != meta["wavefront_size"]:
            add("error", "descriptor-mismatch",
                f"wavefront size: metadata says {meta['wavefront_size']}, descriptor says wave{wave}")
        if meta["uses_dynamic_stack"] is not None and meta["uses_dynamic_stack"] != kd.uses_dynamic_stack:
            add("warning", "descriptor-mismatch",
                f"uses_dynamic_stack: metadata says {meta['uses_dynamic_stack']}, "
                f"descriptor says {kd.uses_dynamic_stack}")
        if kd.granulated_lds_size:
            add("warning", "descriptor-field", f"rsrc2 GRANULATED_LDS_SIZE is {kd.granulated_lds_size}, expected 0")
        if header.processor in _ARCHITECTED_FLAT_SCRATCH and kd.kernel_code_properties & 0x21:
            add("error", "descriptor-field",
                "private_segment_buffer/flat_scratch_init user SGPRs set; "
                f"{header.processor} has architected flat scratch (expected clear)")
        if header.processor.startswith("gfx9") and kd.wave32:
            add("error", "descriptor-field", f"ENABLE_WAVEFRONT_SIZE32 set; {header.processor} is wave64 only")
        if kd.reserved_nonzero:
            add("warning", "descriptor-field", "reserved descriptor bytes or bits are not zero")
        if kd.kernarg_preload_length:
            add("info", "kernarg-preload",
                f"{kd.kernarg_preload_length} kernarg dwords preloaded into SGPRs "
                "(the firmware skips a 256-byte compatibility prologue)")
        if header.elf_type == "ET_DYN":
            if kd.entry_address % 256:
                add("error", "entry-alignment", f"entry address 0x{kd.entry_address:x} is not 256-byte aligned")
            if func is not None and func[0] != kd.entry_address:
                add("error", "descriptor-mismatch",
                    f"descriptor entry 0x{kd.entry_address:x} is not the function symbol's address 0x{func[0]:x}")
    if meta["wavefront_size"] != 64 and header.processor.startswith("gfx9"):
        add("error", "wavefront-size", f".wavefront_size is {meta['wavefront_size']}, expected 64 on {header.processor}")
    if meta["max_flat_workgroup_size"] > 1024 or meta["max_flat_workgroup_size"] == 0:
        add("error", "workgroup-size", f".max_flat_workgroup_size is {meta['max_flat_workgroup_size']}, expected 1..1024")
    tgt = targets.TARGETS.get(header.processor)
    lds = meta["group_segment_fixed_size"]
    if tgt is not None and lds > tgt.lds_per_workgroup:
        add("error", "lds-over-limit",
            f"static LDS {lds} bytes exceeds {tgt.name}'s {tgt.lds_per_workgroup} bytes per workgroup")
    if meta["private_segment_fixed_size"]:
        add("warning", "scratch", f"uses {meta['private_segment_fixed_size']} bytes of scratch per work-item")
    if meta["uses_dynamic_stack"]:
        add("warning", "dynamic-stack", "uses a dynamic stack (scratch size unknown at compile time)")
    spills = [f"{meta[k]} {k[:4].upper()}" for k in ("vgpr_spill_count", "sgpr_spill_count") if meta[k]]
    if spills:
        add("warning", "spills", "spills " + " and ".join(spills) + " registers")
    # argument layout
    prev_end, prev_name = 0, None
    explicit_end = 0
    seen_hidden = False
    for a in meta["args"]:
        label = f"arg {a.index}" + (f" '{a.name}'" if a.name else "")
        if a.offset < prev_end:
            add("error", "arg-layout", f"{label} at offset {a.offset} overlaps the previous argument ending at {prev_end}")
        if a.size and a.size & (a.size - 1) == 0 and a.size <= 8 and a.offset % a.size:
            add("warning", "arg-layout", f"{label} at offset {a.offset} is not aligned to its size {a.size}")
        if a.end > meta["kernarg_segment_size"]:
            add("error", "arg-layout",
                f"{label} ends at byte {a.end}, beyond .kernarg_segment_size {meta['kernarg_segment_size']}")
        if a.hidden:
            seen_hidden = True
        else:
            if seen_hidden:
                add("warning", "arg-layout", f"{label} is an explicit argument after hidden ones")
            explicit_end = max(explicit_end, a.end)
            if a.value_kind not in EXPLICIT_VALUE_KINDS:
                add("warning", "arg-kind", f"{label} has unknown .value_kind {a.value_kind!r}")
        prev_end, prev_name = max(prev_end, a.end), a.name
    del prev_name, explicit_end
    return out


# --------------------------------------------------------------------------- ELF walking


_LIB_ERRORS = (ELFError, ELFParseError, struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError,
               AttributeError, TypeError, OverflowError, AssertionError)


def _symbols(elf: ELFFile, elf_type: str) -> dict[str, tuple[str, int, int, Any]]:
    """name -> (type, value, size, shndx) from .dynsym (linked) or .symtab (ET_REL)."""
    out: dict[str, tuple[str, int, int, Any]] = {}
    order = (".dynsym", ".symtab") if elf_type == "ET_DYN" else (".symtab", ".dynsym")
    for secname in order:
        sec = elf.get_section_by_name(secname)
        if not isinstance(sec, SymbolTableSection):
            continue
        for sym in sec.iter_symbols():
            if not sym.name or sym.name in out:
                continue
            info = sym.entry["st_info"]
            out[sym.name] = (info["type"], sym.entry["st_value"], sym.entry["st_size"], sym.entry["st_shndx"])
        if out:
            break
    return out


def _read_at(elf: ELFFile, data: bytes, sym: tuple[str, int, int, Any], elf_type: str, size: int) -> bytes | None:
    """``size`` bytes at a symbol's address, through the section that holds it."""
    _, value, _, shndx = sym
    if elf_type == "ET_REL":
        if not isinstance(shndx, int) or shndx >= elf.num_sections():
            return None
        sec = elf.get_section(shndx)
        if sec["sh_type"] == "SHT_NOBITS" or value + size > sec["sh_size"]:
            return None
        off = sec["sh_offset"] + value
    else:
        off = None
        for sec in elf.iter_sections():
            if sec["sh_type"] == "SHT_NOBITS" or not sec["sh_addr"]:
                continue
            if sec["sh_addr"] <= value and value + size <= sec["sh_addr"] + sec["sh_size"]:
                off = sec["sh_offset"] + value - sec["sh_addr"]
                break
        if off is None:
            return None
    chunk = data[off:off + size]
    return chunk if len(chunk) == size else None


def read_code_object(data: bytes, *, source: str = "<bytes>") -> CodeObject:
    """Parse a code object. Raises ``CodeObjectError`` for input that is not a usable
    gfx9+ HSA code object; returns the model with ``findings`` for suspicious but readable ones."""
    data = bytes(data)
    header = parse_header(data, source)
    try:
        return _read(data, header, source)
    except CodeObjectError:
        raise
    except _LIB_ERRORS as e:
        raise CodeObjectError(f"{source}: malformed ELF: {type(e).__name__}: {str(e)[:120]}") from None


def _read(data: bytes, header: ElfHeader, source: str) -> CodeObject:
    elf = ELFFile(BytesIO(data))
    findings: list[Finding] = []
    notes_desc: bytes | None = None
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOBITS" and sec["sh_offset"] + sec["sh_size"] > len(data):
            raise CodeObjectError(
                f"{source}: truncated ELF: section {sec.name or '#?'!r} ends at byte "
                f"{sec['sh_offset'] + sec['sh_size']}, file has {len(data)} bytes"
            )
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOTE":
            continue
        for note in _iter_notes(sec, source):
            if note[0] == "AMDGPU" and note[1] == NT_AMDGPU_METADATA:
                if notes_desc is not None:
                    findings.append(Finding("warning", "duplicate-note", "more than one NT_AMDGPU_METADATA note"))
                    continue
                notes_desc = note[2]
    if notes_desc is None:
        raise CodeObjectError(
            f"{source}: no NT_AMDGPU_METADATA note (owner 'AMDGPU', type 32): expected one in a SHT_NOTE section"
        )
    metadata, kmetas = parse_metadata(decode_metadata_note(notes_desc, source), source)

    if header.elf_type == "ET_REL":
        findings.append(Finding("error", "not-linked",
                                "ELF type is ET_REL (unlinked compiler output); the loader needs ET_DYN: "
                                "link it with ld.lld -shared"))
    if metadata.version[0] != 1:
        findings.append(Finding("warning", "metadata-version",
                                f"amdhsa.version is {list(metadata.version)}, expected major 1"))
    if metadata.target is not None:
        note_proc = metadata.target.rsplit("--", 1)[-1] if "--" in metadata.target else metadata.target
        if note_proc != header.target_id.rsplit("--", 1)[-1]:
            findings.append(Finding("warning", "target-mismatch",
                                    f"amdhsa.target is {metadata.target!r}, e_flags say {header.target_id!r}"))
    if header.processor.startswith("unknown"):
        findings.append(Finding("warning", "unknown-processor",
                                f"e_flags 0x{header.e_flags:x}: unknown EF_AMDGPU_MACH 0x{header.mach:02x}"))
    elif header.processor.endswith("-generic") and header.code_object_version < 6:
        findings.append(Finding("error", "generic-needs-v6",
                                f"{header.processor} needs code object v6, this is v{header.code_object_version}"))

    symbols = _symbols(elf, header.elf_type)
    kernels: list[Kernel] = []
    seen: set[str] = set()
    for meta in kmetas:
        name = meta["name"]
        if name in seen:
            findings.append(Finding("error", "duplicate-kernel", f"kernel {name!r} appears twice in the metadata"))
            continue
        seen.add(name)
        kd_sym = symbols.get(meta["symbol"])
        if kd_sym is None:
            raise CodeObjectError(
                f"{source}: kernel {name!r}: descriptor symbol {meta['symbol']!r} not found in the symbol table"
            )
        if kd_sym[2] not in (0, KD_SIZE):
            raise CodeObjectError(
                f"{source}: kernel {name!r}: descriptor {meta['symbol']!r} size: expected 64, got {kd_sym[2]}"
            )
        kd_bytes = _read_at(elf, data, kd_sym, header.elf_type, KD_SIZE)
        if kd_bytes is None:
            raise CodeObjectError(
                f"{source}: kernel {name!r}: descriptor {meta['symbol']!r} at 0x{kd_sym[1]:x}: expected 64 bytes "
                "inside a loaded section, found none"
            )
        kd = decode_descriptor(kd_bytes, kd_sym[1], header.processor)
        fsym = symbols.get(name)
        func = (fsym[1], fsym[2]) if fsym is not None and fsym[0] == "STT_FUNC" else None
        kf = _check_kernel(meta, kd, header, func)
        if func is None:
            kf.append(Finding("warning", "no-function-symbol", f"no STT_FUNC symbol {name!r}", name))
        kernels.append(Kernel(**meta, descriptor=kd, function_address=func[0] if func else None,
                              code_size=func[1] if func else None, findings=tuple(kf)))
        findings.extend(kf)
    listed = {k.symbol for k in kernels}
    for sname, (stype, *_rest) in symbols.items():
        if sname.endswith(".kd") and sname not in listed and stype == "STT_OBJECT":
            findings.append(Finding("warning", "kernel-without-metadata",
                                    f"descriptor symbol {sname!r} has no kernel in the metadata"))
    return CodeObject(
        source=source, size=len(data), sha256=hashlib.sha256(data).hexdigest(), header=header,
        metadata=metadata, kernels=tuple(kernels), findings=tuple(findings),
    )


def _iter_notes(sec: Any, source: str):
    """(name, type, desc) of each note in a SHT_NOTE section, bounds-checked."""
    raw = sec.data()
    pos, n = 0, len(raw)
    while pos + 12 <= n:
        namesz, descsz, ntype = struct.unpack_from("<III", raw, pos)
        name_end = pos + 12 + namesz
        desc_start = pos + 12 + ((namesz + 3) & ~3)
        desc_end = desc_start + descsz
        if desc_end > n:
            raise CodeObjectError(
                f"{source}: note in {sec.name!r} at byte {pos}: descriptor of {descsz} bytes runs past the "
                f"section end ({n} bytes)"
            )
        name = raw[pos + 12:name_end].rstrip(b"\0").decode("latin-1")
        yield name, ntype, raw[desc_start:desc_end]
        pos = (desc_end + 3) & ~3
    if 0 < n - pos < 12 and any(raw[pos:]):
        raise CodeObjectError(f"{source}: note section {sec.name!r}: {n - pos} stray bytes after the last note")
