"""AMDGPU HSA code object (``.co`` / ``.hsaco``) bytes -> a frozen, typed model.

``read_code_object(data)`` checks the ELF header (ELF64, little-endian, EM_AMDGPU, OS/ABI HSA,
code object v4/v5/v6), decodes ``e_flags`` into a target ID, decodes the ``NT_AMDGPU_METADATA``
msgpack note, finds every kernel's ``NAME.kd`` descriptor and decodes it, and cross-checks the
two. Input it cannot make sense of raises ``CodeObjectError`` (one line naming the thing, the
expected and the actual value); things that parse but look wrong become ``Finding``s.

Modules: ``header`` (ELF header, ``e_flags``), ``metadata`` (the msgpack note -> ``KernelMeta``),
``descriptor`` (the 64-byte ``NAME.kd``), ``checks`` (cross-checks -> findings), ``model``
(``Kernel``, ``CodeObject``), ``reader`` (bytes -> ``CodeObject``). Sources: docs/readers.md."""

from submitgen.readers.amd.checks import EXPLICIT_VALUE_KINDS
from submitgen.readers.amd.descriptor import (
    KD_SIZE,
    KernelDescriptor,
    decode_descriptor,
    vgpr_encoding_granule,
)
from submitgen.readers.amd.header import ELFOSABI_AMDGPU_HSA, EM_AMDGPU, ElfHeader, parse_header
from submitgen.readers.amd.metadata import (
    NT_AMDGPU_METADATA,
    ArgMeta,
    KernelMeta,
    Metadata,
    decode_metadata_note,
    parse_metadata,
)
from submitgen.readers.amd.model import CodeObject, Kernel, KernelArg
from submitgen.readers.amd.processors import MACH_NAMES
from submitgen.readers.amd.reader import read_code_object
from submitgen.readers.base import Finding, KernelLookup
from submitgen.readers.demangle import demangle, demangle_many

__all__ = [
    "ELFOSABI_AMDGPU_HSA",
    "EM_AMDGPU",
    "EXPLICIT_VALUE_KINDS",
    "KD_SIZE",
    "MACH_NAMES",
    "NT_AMDGPU_METADATA",
    "ArgMeta",
    "CodeObject",
    "ElfHeader",
    "Finding",
    "Kernel",
    "KernelArg",
    "KernelDescriptor",
    "KernelLookup",
    "KernelMeta",
    "Metadata",
    "decode_descriptor",
    "decode_metadata_note",
    "demangle",
    "demangle_many",
    "parse_header",
    "parse_metadata",
    "read_code_object",
    "vgpr_encoding_granule",
]
