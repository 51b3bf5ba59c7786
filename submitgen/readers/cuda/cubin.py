"""NVIDIA cubin (CUDA ELF) bytes -> a frozen, typed model with the kernel interface the build uses:
the header (``e_flags``: the SM), and each kernel's parameters and resources from ``.nv.info``
(``nvinfo.py``). What a cubin says and does not say: docs/readers.md, "CUDA cubins"."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from typing import Any

from submitgen import textfmt
from submitgen.errors import CodeObjectError
from submitgen.readers import elf
from submitgen.readers.amd.processors import MAX_WORKGROUP_SIZE
from submitgen.readers.base import Add, Finding, ObjectInfo, check_arg_extent
from submitgen.readers.cuda import nvinfo
from submitgen.readers.cuda.model import CudaKernel, CudaParam

EM_CUDA = 190
EF_CUDA_ACCELERATORS = 0x8  # ABI version 8 (LLVM's BinaryFormat/ELF.h)
EF_CUDA_ACCELERATORS_V1 = 0x800  # ABI version 7 and below
SHT_CUDA_SHARED = 0x7000000A  # .nv.shared.NAME in relocatable (-rdc) cubins: no file bytes, like NOBITS
_NO_FILE_BYTES = ("SHT_NOBITS", SHT_CUDA_SHARED)
RESERVED_SHARED_BYTES = 1024  # per block, from sm_90 cubins on (docs/readers.md)

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


@dataclass(frozen=True)
class CubinHeader:
    elf_type: str  # "ET_EXEC" (loadable) or "ET_REL" (relocatable, -rdc output)
    osabi: int
    abi_version: int
    e_flags: int
    sm: int  # 90 for sm_90
    accelerator: bool = False  # architecture-specific code: sm_90a

    @property
    def processor(self) -> str:
        return f"sm_{self.sm}{'a' if self.accelerator else ''}"

    @property
    def target_id(self) -> str:
        return f"nvptx-nvidia-cuda--{self.processor}"


@dataclass(frozen=True)
class CubinObject(ObjectInfo):
    header: CubinHeader
    kernels: tuple[CudaKernel, ...]
    findings: tuple[Finding, ...]

    @property
    def max_shared_bytes(self) -> int:
        """Static + dynamic shared memory one block may use on this SM (48 KiB if unknown)."""
        return MAX_SHARED_BYTES.get(self.header.sm, PORTABLE_SHARED_BYTES)

    @property
    def version_label(self) -> str:
        return "cubin"

    @property
    def family(self) -> str:
        return f"sm_{self.header.sm}"  # sm_90a code runs on sm_90

    def processor_facts(self) -> None:
        """No AMD occupancy facts apply."""
        return None

    def occupancy_note(self) -> None:
        return None

    def header_json(self) -> dict[str, Any]:
        h = self.header
        return {
            "size": self.size,
            "sha256": self.sha256,
            "target": self.target_id,
            "processor": self.processor,
            "elf_type": h.elf_type,
            "osabi": h.osabi,
            "abi_version": h.abi_version,
            "e_flags": h.e_flags,
            "architecture_specific": h.accelerator,
            "max_shared_bytes": self.max_shared_bytes,
        }

    def header_lines(self) -> list[str]:
        n = len(self.kernels)
        return textfmt.wrap(f"{self.target_id}   cubin {self.header.elf_type}   {self.size} bytes   "
                            f"sha256 {self.sha256[:16]}   {n} kernel{'s' if n != 1 else ''}", "", "    ") + \
            [f"  shared memory per block: at most {self.max_shared_bytes} B (static + dynamic)"]


def parse_cubin_header(data: bytes, label: str = "<bytes>") -> CubinHeader:
    h = elf.read_header(data, label, EM_CUDA, "EM_CUDA")
    if h.e_type not in (elf.ET_REL, elf.ET_EXEC):
        raise CodeObjectError(f"{label}: ELF type: expected ET_EXEC (2), got {h.e_type}")
    elf.check_section_table(h, len(data), label)
    # nvcc 13 (EI_ABIVERSION 8) keeps the SM in bits 8..15 (0x6005a04: sm_90, verified on sm_80..sm_120);
    # older cubins (ABI version 7 and below) keep it in bits 0..7 (EF_CUDA_SM; not verified here).
    sm = (h.e_flags >> 8) & 0xFF if h.abi_version >= 8 else h.e_flags & 0xFF
    if sm < 20:
        raise CodeObjectError(
            f"{label}: e_flags 0x{h.e_flags:x}: expected an SM architecture of 20 or more, got {sm}"
        )
    accelerator = bool(h.e_flags & (EF_CUDA_ACCELERATORS if h.abi_version >= 8 else EF_CUDA_ACCELERATORS_V1))
    return CubinHeader(elf.ELF_TYPE_NAMES[h.e_type], h.osabi, h.abi_version, h.e_flags, sm, accelerator)


def read_cubin(data: bytes, *, label: str = "<bytes>") -> CubinObject:
    """Parse a cubin. Raises ``CodeObjectError`` for input that is not a readable CUDA ELF;
    returns the model with ``findings`` for suspicious but readable ones."""
    data = bytes(data)
    header = parse_cubin_header(data, label)
    with elf.library_errors(label):
        return _read(data, header, label)


def _object_findings(header: CubinHeader) -> list[Finding]:
    out = []
    if header.elf_type == "ET_REL":
        out.append(Finding("error", "not-linked",
                           "ELF type is ET_REL (relocatable, e.g. -rdc output); cuModuleLoadData needs "
                           "ET_EXEC: build with -cubin without -rdc, or link with nvlink"))
    if header.sm not in MAX_SHARED_BYTES:
        out.append(
            Finding(
                "warning",
                "unknown-processor",
                f"no shared memory limit known for {header.processor}; "
                f"assuming the portable {PORTABLE_SHARED_BYTES} bytes",
            )
        )
    return out


def _read(data: bytes, header: CubinHeader, label: str) -> CubinObject:
    image = elf.ElfImage(data, label, _NO_FILE_BYTES)
    compat = image.section(".nv.compat")
    if compat is not None and not header.accelerator and nvinfo.accelerator_target(compat.data(), label):
        header = replace(header, accelerator=True)
    symtab = image.symbol_table(".symtab")
    if symtab is None:
        raise CodeObjectError(f"{label}: no .symtab: expected a symbol table naming the kernels")
    nsyms = symtab.num_symbols()

    def sym_name(idx: int, where: str) -> str:
        if idx >= nsyms:
            raise CodeObjectError(
                f"{label}: {where}: symbol index {idx} is past the {nsyms} symbols of .symtab"
            )
        return symtab.get_symbol(idx).name

    findings = _object_findings(header)
    info = next((s for s in image.sections if s.name == ".nv.info" and _is_cuda_info(s)), None)
    tables = nvinfo.function_table(info.data() if info is not None else b"", label, sym_name)
    reserved = (
        RESERVED_SHARED_BYTES if any(s.name.startswith(".nv.shared.reserved") for s in image.sections) else 0
    )
    ctx = _Context(header, label, {s.name: s for s in image.sections}, tables, reserved)
    kernels: list[CudaKernel] = []
    seen: set[str] = set()
    for sec in image.sections:
        if not _is_cuda_info(sec) or not sec.name.startswith(".nv.info."):
            continue
        name = sec.name[len(".nv.info."):]
        if name in seen:
            findings.append(
                Finding("error", "duplicate-kernel", f"kernel {name!r} has two .nv.info sections")
            )
            continue
        seen.add(name)
        k = _read_kernel(sec, name, ctx)
        kernels.append(k)
        findings.extend(k.findings)
    if not kernels:
        findings.append(
            Finding("warning", "no-kernels", "no .nv.info.NAME section: the object has no kernels")
        )
    return CubinObject(label=label, size=len(data), sha256=hashlib.sha256(data).hexdigest(), header=header,
                       kernels=tuple(kernels), findings=tuple(findings))


@dataclass(frozen=True)
class _Context:
    header: CubinHeader
    label: str
    by_name: dict[str, Any]
    tables: dict[int, dict[str, int]]
    reserved: int


def _is_cuda_info(section: Any) -> bool:
    """A ``.nv.info`` section (pyelftools gives an unknown section type as its number)."""
    return bool(section["sh_type"] == nvinfo.SHT_CUDA_INFO)


def _params(a: nvinfo.KernelAttrs, add: Add) -> tuple[tuple[CudaParam, ...], int]:
    params: dict[int, CudaParam] = {}
    for p in a.params:
        if p.ordinal in params:
            add("error", "arg-layout", f"parameter {p.ordinal} is described twice")
            continue
        params[p.ordinal] = CudaParam(p.ordinal, p.offset, p.size)
    args = tuple(params[i] for i in sorted(params))
    if args and [x.index for x in args] != list(range(len(args))):
        add(
            "error",
            "arg-layout",
            f"parameter ordinals are {[x.index for x in args]}, expected 0..{len(args) - 1}",
        )
    param_size = a.param_size
    if param_size is None:
        param_size = max((x.end for x in args), default=0)
        if args:
            add(
                "warning",
                "no-param-size",
                "no CBANK_PARAM_SIZE attribute; using the end of the last parameter",
            )
    if a.cbank is not None and a.cbank[1] != param_size:
        add("error", "param-size-mismatch",
            f"PARAM_CBANK says {a.cbank[1]} bytes of parameters, CBANK_PARAM_SIZE says {param_size}")
    _param_layout(args, param_size, add)
    return args, param_size


def _param_layout(args: tuple[CudaParam, ...], param_size: int, add: Add) -> None:
    prev_end = 0
    for x in args:
        label = f"parameter {x.index}"
        if x.size == 0:
            add("error", "arg-layout", f"{label} has size 0")
        check_arg_extent(x, label, prev_end, param_size, add, previous="previous one",
                         beyond=f"the {param_size} parameter bytes")
        prev_end = max(prev_end, x.end)


def _static_shared(name: str, ctx: _Context, add: Add) -> tuple[int, int]:
    shared_sec = ctx.by_name.get(f".nv.shared.{name}")
    shared_size = shared_sec["sh_size"] if shared_sec is not None else 0
    static_shared = shared_size
    if ctx.reserved and shared_size:
        if shared_size < ctx.reserved:
            add(
                "warning",
                "shared-reserved",
                f".nv.shared.{name} is {shared_size} bytes, expected at least the {ctx.reserved} reserved "
                "bytes",
            )
        static_shared = max(0, shared_size - ctx.reserved)
    limit = MAX_SHARED_BYTES.get(ctx.header.sm, PORTABLE_SHARED_BYTES)
    if static_shared > limit:
        add("error", "lds-over-limit", f"static shared memory {static_shared} bytes exceeds "
                                       f"{ctx.header.processor}'s {limit} bytes per block")
    return shared_size, static_shared


def _block_limits(a: nvinfo.KernelAttrs, add: Add) -> int:
    for label, dims in (("REQNTID", a.reqntid), ("MAX_THREADS", a.max_threads),
                        ("CTA_PER_CLUSTER", a.cluster)):
        too_many = label != "CTA_PER_CLUSTER" and dims is not None and math.prod(dims) > MAX_WORKGROUP_SIZE
        if dims is not None and (0 in dims or too_many):
            add("error", "workgroup-size",
                f"{label} is {dims}, expected each 1.. and at most {MAX_WORKGROUP_SIZE} threads")
    dims = a.reqntid or a.max_threads
    return math.prod(dims) if dims is not None else MAX_WORKGROUP_SIZE


def _read_kernel(sec: Any, name: str, ctx: _Context) -> CudaKernel:
    out: list[Finding] = []

    def add(sev: str, code: str, msg: str) -> None:
        out.append(Finding(sev, code, msg, name))

    a = nvinfo.kernel_attrs(sec.data(), sec.name, ctx.label)
    args, param_size = _params(a, add)
    text = ctx.by_name.get(f".text.{name}")
    if text is None or text["sh_type"] != "SHT_PROGBITS":
        add("warning", "no-code", f"no .text.{name} section")
    shared_size, static_shared = _static_shared(name, ctx, add)
    regs = ctx.tables[nvinfo.EIATTR_REGCOUNT]
    frame = ctx.tables[nvinfo.EIATTR_FRAME_SIZE]
    if name not in regs:
        add("warning", "no-regcount", f"no REGCOUNT for {name!r} in .nv.info")
    local = ctx.tables[nvinfo.EIATTR_MIN_STACK_SIZE].get(name, frame.get(name, 0))
    if local:
        add("warning", "scratch", f"uses {local} bytes of local memory (stack) per thread")
    max_flat = _block_limits(a, add)
    return CudaKernel(
        name=name,
        args=args,
        kernarg_segment_size=param_size,
        group_segment_fixed_size=static_shared,
        private_segment_fixed_size=local,
        vgpr_count=regs.get(name, 0),
        max_flat_workgroup_size=max_flat,
        reqd_workgroup_size=a.reqntid,
        max_threads=a.max_threads,
        max_reg_count=a.maxreg,
        num_barriers=a.barriers,
        cluster_dims=a.cluster,
        frame_size=frame.get(name, 0),
        shared_section_size=shared_size,
        param_cbank_offset=a.cbank[0] if a.cbank else None,
        code_size=text["sh_size"] if text is not None else None,
        attributes=a.attributes,
        findings=tuple(out),
    )
