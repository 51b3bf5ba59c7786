"""AMDGPU HSA code object (``.co`` / ``.hsaco``) bytes -> a frozen, typed model.

``read_code_object(data)`` checks the ELF header (ELF64, little-endian, EM_AMDGPU, OS/ABI HSA,
code object v4/v5/v6), decodes ``e_flags`` into a target ID, decodes the ``NT_AMDGPU_METADATA``
msgpack note, finds every kernel's ``NAME.kd`` descriptor and decodes it, and cross-checks the
two. Input it cannot make sense of raises ``CodeObjectError`` (one line naming the thing, the
expected and the actual value); things that parse but look wrong become ``Finding``s.

Modules: ``header`` (ELF header, ``e_flags``), ``metadata`` (the msgpack note -> ``KernelMeta``),
``descriptor`` (the 64-byte ``NAME.kd``), ``checks`` (cross-checks -> findings), ``model``
(``Kernel``, ``CodeObject``), ``reader`` (bytes -> ``CodeObject``). Sources: docs/readers.md."""

import importlib
from typing import Any

_EXPORTS = {
    "amd.checks": ("EXPLICIT_VALUE_KINDS",),
    "amd.descriptor": ("KD_SIZE", "KernelDescriptor", "decode_descriptor", "vgpr_encoding_granule"),
    "amd.header": ("ELFOSABI_AMDGPU_HSA", "EM_AMDGPU", "ElfHeader", "parse_header"),
    "amd.metadata": ("NT_AMDGPU_METADATA", "ArgMeta", "KernelMeta", "Metadata", "decode_metadata_note",
                     "parse_metadata"),
    "amd.model": ("CodeObject", "Kernel", "KernelArg"),
    "amd.processors": ("MACH_NAMES",),
    "amd.reader": ("read_code_object",),
    "base": ("Finding", "KernelLookup"),
    "demangle": ("demangle", "demangle_many"),
}
_WHERE = {name: f"submitgen.readers.{module}" for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """The names above load on first use, so that ``readers.amd.processors`` (the CLI's limits)
    imports none of the reader (pyelftools, msgpack)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
