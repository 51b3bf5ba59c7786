"""AMDGPU HSA code object bytes -> ``CodeObject``: the header, the metadata note, each kernel's
descriptor and function symbol, and the cross-checks."""

from __future__ import annotations

import hashlib

from .. import elf
from ..errors import CodeObjectError
from ..kernelinfo import Finding
from .checks import kernel_findings, object_findings
from .descriptor import KD_SIZE, decode_descriptor
from .header import ElfHeader, parse_header
from .metadata import NT_AMDGPU_METADATA, KernelMeta, decode_metadata_note, parse_metadata
from .model import CodeObject, Kernel


def read_code_object(data: bytes, *, source: str = "<bytes>") -> CodeObject:
    """Parse a code object. Raises ``CodeObjectError`` for input that is not a usable
    gfx9+ HSA code object; returns the model with ``findings`` for suspicious but readable ones."""
    data = bytes(data)
    header = parse_header(data, source)
    with elf.library_errors(source):
        return _read(data, header, source)


def _metadata_note(image: elf.ElfImage, findings: list[Finding]) -> bytes:
    found: bytes | None = None
    for owner, ntype, desc in image.notes():
        if owner == "AMDGPU" and ntype == NT_AMDGPU_METADATA:
            if found is not None:
                findings.append(Finding("warning", "duplicate-note", "more than one NT_AMDGPU_METADATA note"))
                continue
            found = desc
    if found is None:
        raise CodeObjectError(f"{image.source}: no NT_AMDGPU_METADATA note (owner 'AMDGPU', type 32): "
                              "expected one in a SHT_NOTE section")
    return found


def _read(data: bytes, header: ElfHeader, source: str) -> CodeObject:
    image = elf.ElfImage(data, source)
    findings: list[Finding] = []
    desc = _metadata_note(image, findings)
    metadata, kmetas = parse_metadata(decode_metadata_note(desc, source), source)
    findings += object_findings(header, metadata)
    order = (".dynsym", ".symtab") if header.elf_type == "ET_DYN" else (".symtab", ".dynsym")
    symbols = image.symbols(order)
    kernels: list[Kernel] = []
    seen: set[str] = set()
    for meta in kmetas:
        if meta.name in seen:
            findings.append(
                Finding("error", "duplicate-kernel", f"kernel {meta.name!r} appears twice in the metadata")
            )
            continue
        seen.add(meta.name)
        k = _kernel(image, header, symbols, meta)
        kernels.append(k)
        findings.extend(k.findings)
    listed = {k.symbol for k in kernels}
    for sname, sym in symbols.items():
        if sname.endswith(".kd") and sname not in listed and sym.type == "STT_OBJECT":
            findings.append(Finding("warning", "kernel-without-metadata",
                                    f"descriptor symbol {sname!r} has no kernel in the metadata"))
    return CodeObject(source=source, size=len(data), sha256=hashlib.sha256(data).hexdigest(), header=header,
                      metadata=metadata, kernels=tuple(kernels), findings=tuple(findings))


def _kernel(
    image: elf.ElfImage, header: ElfHeader, symbols: dict[str, elf.Symbol], meta: KernelMeta
) -> Kernel:
    source, name = image.source, meta.name
    kd_sym = symbols.get(meta.symbol)
    if kd_sym is None:
        raise CodeObjectError(
            f"{source}: kernel {name!r}: descriptor symbol {meta.symbol!r} not found in the symbol table"
        )
    if kd_sym.size not in (0, KD_SIZE):
        raise CodeObjectError(f"{source}: kernel {name!r}: descriptor {meta.symbol!r} size: expected 64, "
                              f"got {kd_sym.size}")
    kd_bytes = image.read_at(kd_sym, KD_SIZE, relocatable=header.elf_type == "ET_REL")
    if kd_bytes is None:
        raise CodeObjectError(f"{source}: kernel {name!r}: descriptor {meta.symbol!r} at 0x{kd_sym.value:x}: "
                              "expected 64 bytes inside a loaded section, found none")
    kd = decode_descriptor(kd_bytes, kd_sym.value, header.processor)
    fsym = symbols.get(name)
    func = (fsym.value, fsym.size) if fsym is not None and fsym.type == "STT_FUNC" else None
    kf = kernel_findings(meta, kd, header, func)
    if func is None:
        kf.append(Finding("warning", "no-function-symbol", f"no STT_FUNC symbol {name!r}", name))
    return Kernel.from_meta(meta, descriptor=kd, function_address=func[0] if func else None,
                            code_size=func[1] if func else None, findings=tuple(kf))
