"""The ELF header of an AMDGPU HSA code object: machine, OS/ABI, code object version, ``e_flags``
(processor, xnack, sramecc, generic version). Layout: LLVM AMDGPUUsage, "ELF Code Object"."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.errors import CodeObjectError
from submitgen.readers import elf
from submitgen.readers.amd import processors

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
# e_flags fields (AMDGPUUsage, "AMDGPU ELF Header", code object v4+).
EF_AMDGPU_MACH = 0xFF
EF_AMDGPU_FEATURE_XNACK_SHIFT = 8
EF_AMDGPU_FEATURE_SRAMECC_SHIFT = 10
EF_AMDGPU_GENERIC_VERSION_SHIFT = 24
FEATURE_STATES = {0: "unsupported", 1: "any", 2: "off", 3: "on"}
SUPPORTED_ABI_VERSIONS = (2, 3, 4)  # code object v4, v5, v6


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
    program_header_problem: str | None = None  # why a loader could not map the segments

    @property
    def target_id(self) -> str:
        """``amdgcn-amd-amdhsa--gfx950:sramecc+`` (features alphabetical; ANY/unsupported omitted)."""
        tid = f"amdgcn-amd-amdhsa--{self.processor}"
        for feat, state in (("sramecc", self.sramecc), ("xnack", self.xnack)):
            if state in ("on", "off"):
                tid += f":{feat}{'+' if state == 'on' else '-'}"
        return tid


def parse_header(data: bytes, label: str = "<bytes>") -> ElfHeader:
    """Check and decode the ELF header; ``CodeObjectError`` for anything a loader refuses."""
    h = elf.read_header(data, label, EM_AMDGPU, "EM_AMDGPU")
    if h.osabi != ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(f"{label}: ELF OS/ABI: expected AMDGPU_HSA (64), got {h.osabi}")
    abiver = h.abi_version
    if abiver in (0, 1):
        raise CodeObjectError(
            f"{label}: code object v{abiver + 2} (ABI version {abiver}) is not supported: "
            f"expected v4, v5 or v6 (ABI version 2-4)"
        )
    if abiver not in SUPPORTED_ABI_VERSIONS:
        raise CodeObjectError(
            f"{label}: ELF ABI version: expected 2, 3 or 4 (code object v4-v6), got {abiver}"
        )
    if h.e_type not in (elf.ET_REL, elf.ET_DYN):
        raise CodeObjectError(f"{label}: ELF type: expected ET_DYN (3), got {h.e_type}")
    elf.check_section_table(h, len(data), label)
    flags = h.e_flags
    mach = flags & EF_AMDGPU_MACH
    return ElfHeader(
        elf_type=elf.ELF_TYPE_NAMES[h.e_type], abi_version=abiver, code_object_version=abiver + 2,
        e_flags=flags, mach=mach, processor=processors.MACH_NAMES.get(mach, f"unknown-0x{mach:02x}"),
        xnack=FEATURE_STATES[(flags >> EF_AMDGPU_FEATURE_XNACK_SHIFT) & 3],
        sramecc=FEATURE_STATES[(flags >> EF_AMDGPU_FEATURE_SRAMECC_SHIFT) & 3],
        generic_version=(flags >> EF_AMDGPU_GENERIC_VERSION_SHIFT) & 0xFF if abiver >= 4 else 0,
        program_header_problem=elf.program_header_problem(h, len(data)) if h.e_type == elf.ET_DYN else None,
    )
