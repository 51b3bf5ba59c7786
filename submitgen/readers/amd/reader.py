"""AMDGPU HSA code object bytes -> ``CodeObject``: the header, the metadata note, each kernel's
descriptor and function symbol, and the cross-checks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from submitgen.errors import CodeObjectError
from submitgen.readers import elf
from submitgen.readers.amd.checks import kernel_findings, object_findings
from submitgen.readers.amd.descriptor import KD_SIZE, decode_descriptor
from submitgen.readers.amd.header import ElfHeader, parse_header
from submitgen.readers.amd.metadata import (
    NT_AMDGPU_METADATA,
    KernelMeta,
    decode_metadata_note,
    parse_metadata,
)
from submitgen.readers.amd.model import CodeObject, Kernel
from submitgen.readers.base import Finding


def read_code_object(data: bytes, *, label: str = "<bytes>") -> CodeObject:
    """Parse a code object. Raises ``CodeObjectError`` for input that is not a usable
    gfx9+ HSA code object; returns the model with ``findings`` for suspicious but readable ones."""
    data = bytes(data)
    header = parse_header(data, label)
    with elf.library_errors(label):
        return _read(data, header, label)


def _metadata_notes(image: elf.ElfImage, header: ElfHeader, findings: list[Finding]) -> bytes:
    """The metadata note a loader reads: the ``PT_NOTE`` segment's copy first (what the HIP
    runtime reads), else the ``.note`` section's. Two copies that disagree are an error finding."""
    def amdgpu(notes: Iterable[tuple[str, int, bytes]]) -> list[bytes]:
        return [desc for owner, ntype, desc in notes if owner == "AMDGPU" and ntype == NT_AMDGPU_METADATA]

    in_sections = amdgpu(image.notes())
    in_segments: list[bytes] = []
    if header.program_header_problem is None and header.elf_type == "ET_DYN":
        notes, problem = image.segment_notes()
        in_segments = amdgpu(notes)
        if problem:
            findings.append(Finding("error", "note-segment", problem))
    for where, copies in (("PT_NOTE segments", in_segments), ("SHT_NOTE sections", in_sections)):
        if len(copies) > 1:
            msg = f"more than one NT_AMDGPU_METADATA note in the {where}; the first is read"
            findings.append(Finding("warning", "duplicate-note", msg))
    if not in_segments and not in_sections:
        raise CodeObjectError(f"{image.label}: no NT_AMDGPU_METADATA note (owner 'AMDGPU', type 32): "
                              "expected one in a PT_NOTE segment or a SHT_NOTE section")
    if in_segments and in_sections and in_segments[0] != in_sections[0]:
        findings.append(Finding("error", "note-mismatch", "the metadata note of the PT_NOTE segment (what "
                                "the loader reads, shown here) and of the .note section differ"))
    return (in_segments or in_sections)[0]


def _read(data: bytes, header: ElfHeader, label: str) -> CodeObject:
    image = elf.ElfImage(data, label)
    findings: list[Finding] = []
    desc = _metadata_notes(image, header, findings)
    metadata, kmetas = parse_metadata(decode_metadata_note(desc, label), label)
    findings += object_findings(header, metadata)
    order = (".dynsym", ".symtab") if header.elf_type == "ET_DYN" else (".symtab", ".dynsym")
    symbols = image.symbols(order)
    kernels: list[Kernel] = []
    seen: set[str] = set()
    names = frozenset(m.name for m in kmetas)
    for meta in kmetas:
        if meta.name in seen:
            findings.append(
                Finding("error", "duplicate-kernel", f"kernel {meta.name!r} appears twice in the metadata")
            )
            continue
        seen.add(meta.name)
        k = _kernel(image, header, symbols, meta, names)
        kernels.append(k)
        findings.extend(k.findings)
    listed = {k.symbol for k in kernels}
    for sname, sym in symbols.items():
        if sname.endswith(".kd") and sname not in listed and sym.type == "STT_OBJECT":
            findings.append(Finding("warning", "kernel-without-metadata",
                                    f"descriptor symbol {sname!r} has no kernel in the metadata"))
    return CodeObject(label=label, size=len(data), sha256=hashlib.sha256(data).hexdigest(), header=header,
                      metadata=metadata, kernels=tuple(kernels), findings=tuple(findings))


def _kernel(
    image: elf.ElfImage, header: ElfHeader, symbols: dict[str, elf.Symbol], meta: KernelMeta,
    others: frozenset[str] = frozenset(),
) -> Kernel:
    label, name = image.label, meta.name
    kd_sym = symbols.get(meta.symbol)
    if kd_sym is None:
        raise CodeObjectError(
            f"{label}: kernel {name!r}: descriptor symbol {meta.symbol!r} not found in the symbol table"
        )
    if kd_sym.size not in (0, KD_SIZE):
        raise CodeObjectError(f"{label}: kernel {name!r}: descriptor {meta.symbol!r} size: expected 64, "
                              f"got {kd_sym.size}")
    kd_bytes = image.read_at(kd_sym, KD_SIZE, relocatable=header.elf_type == "ET_REL")
    if kd_bytes is None:
        raise CodeObjectError(f"{label}: kernel {name!r}: descriptor {meta.symbol!r} at 0x{kd_sym.value:x}: "
                              "expected 64 bytes inside a loaded section, found none")
    kd = decode_descriptor(kd_bytes, kd_sym.value, header.processor)
    fsym = symbols.get(name)
    func = (fsym.value, fsym.size) if fsym is not None and fsym.type == "STT_FUNC" else None
    kf = kernel_findings(meta, kd, header, func, others)
    if func is None:
        kf.append(Finding("warning", "no-function-symbol", f"no STT_FUNC symbol {name!r}", name))
    return Kernel.from_meta(meta, descriptor=kd, function_address=func[0] if func else None,
                            code_size=func[1] if func else None, findings=tuple(kf))
