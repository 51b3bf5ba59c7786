"""NVIDIA cubin (CUDA ELF) bytes -> a frozen, typed model with the interface the build uses.

``read_cubin(data)`` checks the ELF header (ELF64, little-endian, EM_CUDA 190), takes the SM
architecture from ``e_flags``, and reads each kernel's parameters and resources from the
``.nv.info`` sections. Pure Python: pyelftools for the ELF (sections, symbols), the ``.nv.info``
records decoded here. Input it cannot make sense of raises ``CodeObjectError``; things that parse
but look wrong become ``Finding``s (the same class the AMD reader uses).

The ``.nv.info`` format, as found on cubins from nvcc 13.0 (sm_80 .. sm_120) and cross-checked
against ``cuobjdump -elf`` (13.5) and against the CUDA driver's own answers on an H200
(``cuFuncGetParamInfo``, ``cuFuncGetAttribute`` NUM_REGS / SHARED_SIZE_BYTES /
LOCAL_SIZE_BYTES / REQUIRED_CLUSTER_*):

* A section of type ``SHT_CUDA_INFO`` (0x70000000) is a run of records, each
  ``u8 format, u8 attribute`` followed by: format 1 (NVAL), 2 (BVAL), 3 (HVAL): a ``u16``
  value, 4 bytes in all; format 4 (SVAL): a ``u16`` size and that many payload bytes.
* ``.nv.info`` (whole object) holds per-function records whose payload starts with a ``u32``
  symbol index into ``.symtab``: 0x2f REGCOUNT (sym, u32 registers per thread), 0x11 FRAME_SIZE
  (sym, u32 bytes), 0x12 MIN_STACK_SIZE (sym, u32 bytes: the kernel's whole call chain).
* ``.nv.info.NAME`` (``sh_info`` = the index of ``.text.NAME``) holds the kernel's own:
  0x17 KPARAM_INFO (``u32`` index, ``u16`` ordinal, ``u16`` offset, ``u32`` flags whose bits
  18..31 are the size in bytes; one record per parameter, in any order), 0x19 CBANK_PARAM_SIZE
  (HVAL: bytes of parameters), 0x0a PARAM_CBANK (``u32`` symbol of ``.nv.constant0.NAME``,
  ``u16`` offset of the parameters in constant bank 0, ``u16`` size), 0x05 MAX_THREADS
  (``__launch_bounds__``: 3 x ``u32``), 0x10 REQNTID (PTX ``.reqntid``: 3 x ``u32``),
  0x1b MAXREG_COUNT (HVAL), 0x4c NUM_BARRIERS (BVAL), 0x3d CTA_PER_CLUSTER
  (``__cluster_dims__``: 3 x ``u32``). Other attributes are kept by id only.
* ``.nv.shared.NAME`` (NOBITS) is the kernel's static shared memory. From sm_90 on (the object
  has a ``.nv.shared.reserved.*`` section) it also holds the 1 KiB the driver reserves per block;
  the driver reports the size less that 1 KiB (checked on an H200), and so does this reader.

A cubin does not say whether a parameter is a pointer or a value: every parameter has
``value_kind="cuda_param"``. The packer (``runtime/pack.py``) accepts a tensor for an 8-byte
``cuda_param`` and an int / float / ctypes struct for one of any size. No register spill counts
are recorded in a cubin (ptxas prints them, the ELF does not keep them): they read 0."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .codeobject import Finding, KernelLookup, check_section_table, demangle, elf64_header_fields
from .errors import CodeObjectError

EM_CUDA = 190
SHT_CUDA_INFO = 0x70000000
SHT_CUDA_SHARED = 0x7000000A  # .nv.shared.NAME in relocatable (-rdc) cubins: no file bytes, like NOBITS
_NO_FILE_BYTES = ("SHT_NOBITS", SHT_CUDA_SHARED)
RESERVED_SHARED_BYTES = 1024  # per block, from sm_90 cubins on (see the module docstring)
DEFAULT_MAX_THREADS = 1024

# .nv.info formats and the attribute ids this reader relies on.
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_MAX_THREADS = 0x05
EIATTR_PARAM_CBANK = 0x0A
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_REGCOUNT = 0x2F
EIATTR_CTA_PER_CLUSTER = 0x3D
EIATTR_NUM_BARRIERS = 0x4C

# Maximum shared memory per thread block (static + dynamic, with the opt-in), in bytes, by SM.
# Source: NVIDIA's CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
# table, row "Maximum amount of shared memory per thread block" (sm_90: 227 KiB matches
# CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 232448 read on an H200).
MAX_SHARED_BYTES: dict[int, int] = {
    75: 64 * 1024,
    80: 163 * 1024, 87: 163 * 1024,
    86: 99 * 1024, 89: 99 * 1024,
    90: 227 * 1024, 100: 227 * 1024,
    120: 99 * 1024,
}
# What every CUDA device allows a block without opting in (the same guide): used for unknown SMs.
PORTABLE_SHARED_BYTES = 48 * 1024

_LIB_ERRORS = (ELFError, ELFParseError, struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError,
               AttributeError, TypeError, OverflowError, AssertionError, RecursionError)


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class CudaParam:
    """One kernel parameter: where it lies in the parameter buffer and how big it is."""

    index: int  # the parameter's ordinal in the kernel's signature
    offset: int
    size: int
    value_kind: str = "cuda_param"  # a cubin does not tell pointers from values
    type_name: str | None = None
    name: str | None = None
    pointee_log_align: int = 0  # KPARAM_INFO flags bits 0..7 (0 on every nvcc cubin seen)
    flags: int = 0  # the raw KPARAM_INFO flags word

    @property
    def hidden(self) -> bool:
        return False

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class CudaKernel:
    """One ``__global__`` entry point, in the AMD ``Kernel``'s terms where they have a meaning."""

    name: str  # the entry symbol: what cuModuleGetFunction takes (extern "C" or mangled)
    args: tuple[CudaParam, ...]
    kernarg_segment_size: int  # CBANK_PARAM_SIZE: bytes of parameters
    group_segment_fixed_size: int  # static shared memory, bytes (without the reserved 1 KiB)
    private_segment_fixed_size: int  # local memory (stack) per thread, bytes
    vgpr_count: int  # registers per thread (REGCOUNT)
    max_flat_workgroup_size: int  # threads per block the kernel allows (REQNTID / MAX_THREADS, else 1024)
    reqd_workgroup_size: tuple[int, int, int] | None = None  # REQNTID
    max_threads: tuple[int, int, int] | None = None  # MAX_THREADS (__launch_bounds__)
    max_reg_count: int | None = None  # MAXREG_COUNT
    num_barriers: int = 0
    cluster_dims: tuple[int, int, int] | None = None  # CTA_PER_CLUSTER (__cluster_dims__)
    frame_size: int = 0  # FRAME_SIZE of the kernel function itself
    shared_section_size: int = 0  # .nv.shared.NAME size as stored (with any reserved bytes)
    param_cbank_offset: int | None = None  # where parameters start in constant bank 0
    code_size: int | None = None  # size of .text.NAME
    attributes: tuple[int, ...] = ()  # every attribute id in .nv.info.NAME, in file order
    findings: tuple[Finding, ...] = ()
    sgpr_count: int = 0
    agpr_count: int = 0
    sgpr_spill_count: int = 0
    vgpr_spill_count: int = 0
    wavefront_size: int = 32
    kernarg_segment_align: int = 8
    language: str = "CUDA"

    @property
    def symbol(self) -> str:
        return self.name

    @property
    def demangled_name(self) -> str:
        return demangle(self.name)

    @property
    def explicit_args(self) -> tuple[CudaParam, ...]:
        return self.args

    @property
    def hidden_args(self) -> tuple[CudaParam, ...]:
        return ()

    @property
    def explicit_args_size(self) -> int:
        return max((a.end for a in self.args), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "demangled_name": self.demangled_name,
            "args": [{"index": a.index, "offset": a.offset, "size": a.size, "value_kind": a.value_kind,
                      "hidden": False} for a in self.args],
            "kernarg_segment_size": self.kernarg_segment_size, "explicit_args_size": self.explicit_args_size,
            "group_segment_fixed_size": self.group_segment_fixed_size,
            "private_segment_fixed_size": self.private_segment_fixed_size,
            "vgpr_count": self.vgpr_count, "sgpr_count": 0, "agpr_count": 0,
            "sgpr_spill_count": 0, "vgpr_spill_count": 0,
            "max_flat_workgroup_size": self.max_flat_workgroup_size,
            "reqd_workgroup_size": list(self.reqd_workgroup_size) if self.reqd_workgroup_size else None,
            "max_threads": list(self.max_threads) if self.max_threads else None,
            "max_reg_count": self.max_reg_count, "num_barriers": self.num_barriers,
            "cluster_dims": list(self.cluster_dims) if self.cluster_dims else None,
            "frame_size": self.frame_size, "shared_section_size": self.shared_section_size,
            "param_cbank_offset": self.param_cbank_offset, "code_size": self.code_size,
            "attributes": [f"0x{a:02x}" for a in self.attributes],
            "findings": [_finding_json(f) for f in self.findings],
        }


@dataclass(frozen=True)
class CubinHeader:
    elf_type: str  # "ET_EXEC" (loadable) or "ET_REL" (relocatable, -rdc output)
    osabi: int
    abi_version: int
    e_flags: int
    sm: int  # 90 for sm_90

    @property
    def processor(self) -> str:
        return f"sm_{self.sm}"

    @property
    def target_id(self) -> str:
        return f"nvptx-nvidia-cuda--{self.processor}"


@dataclass(frozen=True)
class CubinObject(KernelLookup):
    source: str
    size: int
    sha256: str
    header: CubinHeader
    kernels: tuple[CudaKernel, ...]
    findings: tuple[Finding, ...]  # object-level findings plus every kernel's

    @property
    def max_shared_bytes(self) -> int:
        """Static + dynamic shared memory one block may use on this SM (48 KiB if unknown)."""
        return MAX_SHARED_BYTES.get(self.header.sm, PORTABLE_SHARED_BYTES)

    def target(self) -> None:
        """No AMD hardware facts apply (``report.inspect_sources`` asks for them)."""
        return None

    def to_json(self) -> dict[str, Any]:
        h = self.header
        return {
            "source": self.source, "size": self.size, "sha256": self.sha256,
            "target": self.target_id, "processor": self.processor, "elf_type": h.elf_type,
            "osabi": h.osabi, "abi_version": h.abi_version, "e_flags": h.e_flags,
            "max_shared_bytes": self.max_shared_bytes,
            "kernels": [k.to_json() for k in self.kernels],
            "findings": [_finding_json(f) for f in self.findings if f.kernel is None],
        }


def _finding_json(f: Finding) -> dict[str, Any]:
    return {"severity": f.severity, "code": f.code, "message": f.message, "kernel": f.kernel}


# --------------------------------------------------------------------------- header


def is_cubin(data: bytes) -> bool:
    """An ELF whose e_machine is EM_CUDA (the header is checked by ``read_cubin``)."""
    return len(data) >= 20 and data[:4] == b"\x7fELF" and struct.unpack_from("<H", data, 18)[0] == EM_CUDA


def parse_cubin_header(data: bytes, source: str = "<bytes>") -> CubinHeader:
    (_, _class, _data, _ver, osabi, abiver, _pad, e_type, _machine, _ev, _entry, _phoff, e_shoff,
     e_flags, _ehsize, _phentsize, _phnum, e_shentsize, e_shnum, e_shstrndx) = elf64_header_fields(
        data, source, EM_CUDA, "EM_CUDA")
    if e_type not in (1, 2):
        raise CodeObjectError(f"{source}: ELF type: expected ET_EXEC (2), got {e_type}")
    check_section_table(data, source, e_shoff, e_shentsize, e_shnum, e_shstrndx)
    # nvcc 13 (EI_ABIVERSION 8) keeps the SM in bits 8..15 (0x6005a04: sm_90, verified on sm_80..sm_120);
    # older cubins (ABI version 7 and below) keep it in bits 0..7 (EF_CUDA_SM; not verified here).
    sm = (e_flags >> 8) & 0xFF if abiver >= 8 else e_flags & 0xFF
    if sm < 20:
        raise CodeObjectError(f"{source}: e_flags 0x{e_flags:x}: expected an SM architecture of 20 or more, got {sm}")
    return CubinHeader("ET_EXEC" if e_type == 2 else "ET_REL", osabi, abiver, e_flags, sm)


# --------------------------------------------------------------------------- .nv.info


@dataclass(frozen=True)
class NvInfoAttr:
    fmt: int
    attr: int
    value: int | bytes  # u16 for NVAL/BVAL/HVAL, payload bytes for SVAL


def parse_nv_info(raw: bytes, where: str, source: str = "<bytes>") -> tuple[NvInfoAttr, ...]:
    """The records of one ``.nv.info*`` section, bounds-checked."""
    out: list[NvInfoAttr] = []
    pos, n = 0, len(raw)
    while pos < n:
        if pos + 4 > n:
            raise CodeObjectError(
                f"{source}: {where} at byte {pos}: expected a 4-byte record header, {n - pos} bytes left"
            )
        fmt, attr, half = raw[pos], raw[pos + 1], struct.unpack_from("<H", raw, pos + 2)[0]
        if fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            out.append(NvInfoAttr(fmt, attr, half))
            pos += 4
        elif fmt == EIFMT_SVAL:
            if pos + 4 + half > n:
                raise CodeObjectError(
                    f"{source}: {where} attribute 0x{attr:02x} at byte {pos}: payload of {half} bytes runs past "
                    f"the section end ({n} bytes)"
                )
            out.append(NvInfoAttr(fmt, attr, raw[pos + 4:pos + 4 + half]))
            pos += 4 + half
        else:
            raise CodeObjectError(f"{source}: {where} at byte {pos}: record format: expected 1..4, got {fmt}")
    return tuple(out)


def _payload(a: NvInfoAttr, size: int, where: str, source: str) -> bytes:
    if not isinstance(a.value, bytes) or len(a.value) < size:
        got = f"{len(a.value)} bytes" if isinstance(a.value, bytes) else f"format {a.fmt}"
        raise CodeObjectError(
            f"{source}: {where} attribute 0x{a.attr:02x}: expected a payload of {size} bytes, got {got}"
        )
    return a.value


def _half(a: NvInfoAttr, where: str, source: str) -> int:
    if isinstance(a.value, bytes):
        raise CodeObjectError(f"{source}: {where} attribute 0x{a.attr:02x}: expected a 16-bit value, got a payload")
    return a.value


def _dims(a: NvInfoAttr, where: str, source: str) -> tuple[int, int, int]:
    return struct.unpack_from("<III", _payload(a, 12, where, source))  # type: ignore[return-value]


# --------------------------------------------------------------------------- reading


def read_cubin(data: bytes, *, source: str = "<bytes>") -> CubinObject:
    """Parse a cubin. Raises ``CodeObjectError`` for input that is not a readable CUDA ELF;
    returns the model with ``findings`` for suspicious but readable ones."""
    data = bytes(data)
    header = parse_cubin_header(data, source)
    try:
        return _read(data, header, source)
    except CodeObjectError:
        raise
    except _LIB_ERRORS as e:
        raise CodeObjectError(f"{source}: malformed ELF: {type(e).__name__}: {str(e)[:120]}") from None


def _read(data: bytes, header: CubinHeader, source: str) -> CubinObject:
    elf = ELFFile(BytesIO(data))
    sections = list(elf.iter_sections())
    for sec in sections:
        if sec["sh_type"] not in _NO_FILE_BYTES and sec["sh_offset"] + sec["sh_size"] > len(data):
            raise CodeObjectError(
                f"{source}: truncated ELF: section {sec.name or '#?'!r} ends at byte "
                f"{sec['sh_offset'] + sec['sh_size']}, file has {len(data)} bytes"
            )
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        raise CodeObjectError(f"{source}: no .symtab: expected a symbol table naming the kernels")
    nsyms = symtab.num_symbols()

    def sym_name(idx: int, where: str) -> str:
        if idx >= nsyms:
            raise CodeObjectError(f"{source}: {where}: symbol index {idx} is past the {nsyms} symbols of .symtab")
        return symtab.get_symbol(idx).name

    findings: list[Finding] = []
    if header.elf_type == "ET_REL":
        findings.append(Finding("error", "not-linked",
                                "ELF type is ET_REL (relocatable, e.g. -rdc output); cuModuleLoadData needs "
                                "ET_EXEC: build with -cubin without -rdc, or link with nvlink"))
    if header.sm not in MAX_SHARED_BYTES:
        findings.append(Finding("warning", "unknown-processor",
                                f"no shared memory limit known for {header.processor}; assuming the portable "
                                f"{PORTABLE_SHARED_BYTES} bytes"))

    # Whole-object .nv.info: per-function registers and stack, keyed by symbol name.
    regs: dict[str, int] = {}
    frame: dict[str, int] = {}
    stack: dict[str, int] = {}
    for sec in sections:
        if sec.name == ".nv.info" and sec["sh_type"] == SHT_CUDA_INFO:
            for a in parse_nv_info(sec.data(), ".nv.info", source):
                table = {EIATTR_REGCOUNT: regs, EIATTR_FRAME_SIZE: frame, EIATTR_MIN_STACK_SIZE: stack}.get(a.attr)
                if table is not None:
                    sym, val = struct.unpack_from("<II", _payload(a, 8, ".nv.info", source))
                    table[sym_name(sym, f".nv.info attribute 0x{a.attr:02x}")] = val

    reserved = RESERVED_SHARED_BYTES if any(s.name.startswith(".nv.shared.reserved") for s in sections) else 0
    by_name = {s.name: s for s in sections}
    kernels: list[CudaKernel] = []
    seen: set[str] = set()
    for sec in sections:
        if sec["sh_type"] != SHT_CUDA_INFO or not sec.name.startswith(".nv.info."):
            continue
        name = sec.name[len(".nv.info."):]
        if name in seen:
            findings.append(Finding("error", "duplicate-kernel", f"kernel {name!r} has two .nv.info sections"))
            continue
        seen.add(name)
        k = _read_kernel(sec, name, by_name, regs, frame, stack, reserved, header, source)
        kernels.append(k)
        findings.extend(k.findings)
    if not kernels:
        findings.append(Finding("warning", "no-kernels", "no .nv.info.NAME section: the object has no kernels"))
    return CubinObject(source=source, size=len(data), sha256=hashlib.sha256(data).hexdigest(), header=header,
                       kernels=tuple(kernels), findings=tuple(findings))


def _read_kernel(sec: Any, name: str, by_name: dict[str, Any], regs: dict[str, int], frame: dict[str, int],
                 stack: dict[str, int], reserved: int, header: CubinHeader, source: str) -> CudaKernel:
    where = f"{sec.name}"
    out: list[Finding] = []

    def add(sev: str, code: str, msg: str) -> None:
        out.append(Finding(sev, code, msg, name))

    attrs = parse_nv_info(sec.data(), where, source)
    params: dict[int, CudaParam] = {}
    param_size: int | None = None
    cbank: tuple[int, int] | None = None
    max_threads = reqntid = cluster = None
    maxreg: int | None = None
    barriers = 0
    for a in attrs:
        if a.attr == EIATTR_KPARAM_INFO:
            _idx, ordinal, offset, flags = struct.unpack_from("<IHHI", _payload(a, 12, where, source))
            if ordinal in params:
                add("error", "arg-layout", f"parameter {ordinal} is described twice")
                continue
            params[ordinal] = CudaParam(ordinal, offset, flags >> 18, pointee_log_align=flags & 0xFF, flags=flags)
        elif a.attr == EIATTR_CBANK_PARAM_SIZE:
            param_size = _half(a, where, source)
        elif a.attr == EIATTR_PARAM_CBANK:
            _sym, off, size = struct.unpack_from("<IHH", _payload(a, 8, where, source))
            cbank = (off, size)
        elif a.attr == EIATTR_MAX_THREADS:
            max_threads = _dims(a, where, source)
        elif a.attr == EIATTR_REQNTID:
            reqntid = _dims(a, where, source)
        elif a.attr == EIATTR_CTA_PER_CLUSTER:
            cluster = _dims(a, where, source)
        elif a.attr == EIATTR_MAXREG_COUNT:
            maxreg = _half(a, where, source)
        elif a.attr == EIATTR_NUM_BARRIERS:
            barriers = _half(a, where, source)
    args = tuple(params[i] for i in sorted(params))
    if args and [a.index for a in args] != list(range(len(args))):
        add("error", "arg-layout", f"parameter ordinals are {[a.index for a in args]}, expected 0..{len(args) - 1}")
    if param_size is None:
        param_size = max((a.end for a in args), default=0)
        if args:
            add("warning", "no-param-size", "no CBANK_PARAM_SIZE attribute; using the end of the last parameter")
    if cbank is not None and cbank[1] != param_size:
        add("error", "param-size-mismatch",
            f"PARAM_CBANK says {cbank[1]} bytes of parameters, CBANK_PARAM_SIZE says {param_size}")
    prev_end = 0
    for a in args:
        label = f"parameter {a.index}"
        if a.size == 0:
            add("error", "arg-layout", f"{label} has size 0")
        if a.offset < prev_end:
            add("error", "arg-layout", f"{label} at offset {a.offset} overlaps the previous one ending at {prev_end}")
        if a.size and a.size & (a.size - 1) == 0 and a.size <= 8 and a.offset % a.size:
            add("warning", "arg-layout", f"{label} at offset {a.offset} is not aligned to its size {a.size}")
        if a.end > param_size:
            add("error", "arg-layout", f"{label} ends at byte {a.end}, beyond the {param_size} parameter bytes")
        prev_end = max(prev_end, a.end)

    text = by_name.get(f".text.{name}")
    if text is None or text["sh_type"] != "SHT_PROGBITS":
        add("warning", "no-code", f"no .text.{name} section")
    shared_sec = by_name.get(f".nv.shared.{name}")
    shared_size = shared_sec["sh_size"] if shared_sec is not None else 0
    static_shared = shared_size
    if reserved and shared_size:
        if shared_size < reserved:
            add("warning", "shared-reserved",
                f".nv.shared.{name} is {shared_size} bytes, expected at least the {reserved} reserved bytes")
        static_shared = max(0, shared_size - reserved)
    limit = MAX_SHARED_BYTES.get(header.sm, PORTABLE_SHARED_BYTES)
    if static_shared > limit:
        add("error", "lds-over-limit", f"static shared memory {static_shared} bytes exceeds {header.processor}'s "
                                       f"{limit} bytes per block")
    if name not in regs:
        add("warning", "no-regcount", f"no REGCOUNT for {name!r} in .nv.info")
    local = stack.get(name, frame.get(name, 0))
    if local:
        add("warning", "scratch", f"uses {local} bytes of local memory (stack) per thread")
    for label, dims in (("REQNTID", reqntid), ("MAX_THREADS", max_threads), ("CTA_PER_CLUSTER", cluster)):
        if dims is not None and (0 in dims or (label != "CTA_PER_CLUSTER" and dims[0] * dims[1] * dims[2] > 1024)):
            add("error", "workgroup-size", f"{label} is {dims}, expected each 1.. and at most 1024 threads")
    if reqntid is not None:
        max_flat = reqntid[0] * reqntid[1] * reqntid[2]
    elif max_threads is not None:
        max_flat = max_threads[0] * max_threads[1] * max_threads[2]
    else:
        max_flat = DEFAULT_MAX_THREADS
    return CudaKernel(
        name=name, args=args, kernarg_segment_size=param_size, group_segment_fixed_size=static_shared,
        private_segment_fixed_size=local, vgpr_count=regs.get(name, 0), max_flat_workgroup_size=max_flat,
        reqd_workgroup_size=reqntid, max_threads=max_threads, max_reg_count=maxreg, num_barriers=barriers,
        cluster_dims=cluster, frame_size=frame.get(name, 0), shared_section_size=shared_size,
        param_cbank_offset=cbank[0] if cbank else None,
        code_size=text["sh_size"] if text is not None else None,
        attributes=tuple(a.attr for a in attrs), findings=tuple(out),
    )


def render_text(co: CubinObject, kernels: tuple[CudaKernel, ...] | None = None, provenance: str | None = None) -> str:
    """``submitgen inspect`` text for one cubin (lines of at most 100 columns)."""
    lines = [_cut(provenance or co.source)]
    n = len(co.kernels)
    lines.append(_cut(f"{co.target_id}   cubin {co.header.elf_type}   {co.size} bytes   sha256 {co.sha256[:16]}   "
                      f"{n} kernel{'s' if n != 1 else ''}"))
    lines.append(f"  shared memory per block: at most {co.max_shared_bytes} B (static + dynamic)")
    for f in co.findings:
        if f.kernel is None:
            lines.append(_cut(f"  {f.severity}: {f.message}"))
    for k in co.kernels if kernels is None else kernels:
        lines.append("")
        dem = k.demangled_name
        lines.append(_cut(f"kernel {dem}"))
        if dem != k.name:
            lines.append(_cut(f"  raw name {k.name}"))
        lines.append(f"  code {k.code_size if k.code_size is not None else '?'} bytes")
        if k.args:
            lines.append("    #  offset  size  kind")
            lines += [f"  {a.index:>3} {a.offset:>7} {a.size:>5}  {a.value_kind}" for a in k.args]
        else:
            lines.append("  no arguments")
        lines.append(_cut(f"  params {k.kernarg_segment_size} bytes ({len(k.args)} args)   registers {k.vgpr_count}   "
                          f"static shared {k.group_segment_fixed_size} B   local {k.private_segment_fixed_size} B"))
        extra = f"  max block {k.max_flat_workgroup_size}"
        if k.reqd_workgroup_size:
            extra += f"   required block {k.reqd_workgroup_size}"
        if k.max_threads:
            extra += f"   launch bounds {k.max_threads}"
        if k.cluster_dims:
            extra += f"   cluster {k.cluster_dims}"
        if k.num_barriers:
            extra += f"   barriers {k.num_barriers}"
        lines.append(_cut(extra))
        for f in k.findings:
            lines.append(_cut(f"  {f.severity}: {f.message}"))
    return "\n".join(lines)


def _cut(s: str, n: int = 100) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
