"""A read AMD code object: ``Kernel`` (metadata + descriptor + symbol facts + findings) and
``CodeObject``, both satisfying ``kernelinfo``'s interfaces, including how inspect shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from submitgen import textfmt
from submitgen.readers.amd import processors
from submitgen.readers.amd.descriptor import KernelDescriptor
from submitgen.readers.amd.header import ElfHeader
from submitgen.readers.amd.metadata import ArgMeta, KernelMeta, Metadata
from submitgen.readers.base import Finding, ObjectInfo
from submitgen.readers.demangle import demangle

_ALWAYS = (
    "agpr_count",
    "sgpr_spill_count",
    "vgpr_spill_count",
    "uniform_work_group_size",
)  # null when absent
_META_JSON_KEYS = (
    "name",
    "symbol",
    "language",
    "language_version",
    "kind",
    "kernarg_segment_size",
    "kernarg_segment_align",
    "group_segment_fixed_size",
    "private_segment_fixed_size",
    "wavefront_size",
    "sgpr_count",
    "vgpr_count",
    "agpr_count",
    "sgpr_spill_count",
    "vgpr_spill_count",
    "max_flat_workgroup_size",
    "uniform_work_group_size",
    "uses_dynamic_stack",
    "workgroup_processor_mode",
    "reqd_workgroup_size",
    "workgroup_size_hint",
    "vec_type_hint",
    "device_enqueue_symbol",
    "cluster_dims",
)
_ARG_JSON_KEYS = (
    "name",
    "type_name",
    "address_space",
    "access",
    "actual_access",
    "pointee_align",
    "is_const",
    "is_restrict",
    "is_volatile",
    "is_pipe",
    "value_type",
)


@dataclass(frozen=True)
class Kernel(KernelMeta):
    """One kernel: its metadata (``KernelMeta``), its descriptor and its entry symbol."""

    descriptor: KernelDescriptor | None = None
    function_address: int | None = None  # value of the STT_FUNC symbol NAME
    code_size: int | None = None  # st_size of the STT_FUNC symbol NAME
    findings: tuple[Finding, ...] = ()

    @classmethod
    def from_meta(cls, meta: KernelMeta, **extra: Any) -> Kernel:
        return cls(**{f.name: getattr(meta, f.name) for f in fields(KernelMeta)}, **extra)

    @property
    def demangled_name(self) -> str:
        return demangle(self.name)

    @property
    def agpr_count_derived(self) -> int | None:
        """AGPRs the descriptor allocates above ``accum_offset`` in the unified VGPR file, when
        the metadata has no ``.agpr_count`` (None otherwise, or without a unified file)."""
        kd = self.descriptor
        if self.agpr_count is not None or kd is None or kd.accum_offset is None:
            return None
        return max(0, kd.vgpr_alloc - kd.accum_offset)

    def to_json(self, demangled: str) -> dict[str, Any]:
        """The kernel's JSON (docs/inspect-json.md)."""
        d: dict[str, Any] = {}
        for key in _META_JSON_KEYS:
            v = getattr(self, key)
            if v is not None or key in _ALWAYS:
                d[key] = textfmt.jsonable(v)
        d["agpr_count_derived"] = self.agpr_count_derived
        if self.max_num_workgroups is not None:
            for axis, v in zip("xyz", self.max_num_workgroups):
                d[f"max_num_workgroups_{axis}"] = v
        d["args"] = [_arg_json(a) for a in self.args]
        _unknown(d, self.unknown)
        d["demangled_name"] = demangled
        d["explicit_args_size"] = self.explicit_args_size
        d["explicit_arg_count"] = len(self.explicit_args)
        d["hidden_arg_count"] = len(self.hidden_args)
        d["code_size"] = self.code_size
        d["function_address"] = self.function_address
        d["descriptor"] = _descriptor_json(self.descriptor) if self.descriptor else None
        return d

    def text_lines(self) -> list[str]:
        lines = textfmt.wrap(f"symbol {self.symbol}   language {self.language or '-'}   "
                             f"code {self.code_size if self.code_size is not None else '?'} bytes"
                             + ("   uniform_work_group_size" if self.uniform_work_group_size else ""))
        lines += _arg_rows(self) if self.args else ["  no arguments"]
        hidden = self.kernarg_segment_size - self.explicit_args_size
        lines += textfmt.wrap(
            f"kernarg {self.explicit_args_size} bytes explicit ({len(self.explicit_args)} args), "
            f"{self.kernarg_segment_size} total ({hidden} hidden/padding), "
            f"align {self.kernarg_segment_align}"
        )
        lines += textfmt.wrap(
            f"LDS {self.group_segment_fixed_size} B   scratch {self.private_segment_fixed_size} B   "
            f"VGPR {self.vgpr_count}   AGPR {self._agpr_text()}   SGPR {self.sgpr_count}   "
            f"spills {_opt(self.vgpr_spill_count)} VGPR {_opt(self.sgpr_spill_count)} SGPR   "
            f"wave{self.wavefront_size}   max block {self.max_flat_workgroup_size}"
            + (f"   required block {self.reqd_workgroup_size}" if self.reqd_workgroup_size else "")
        )
        kd = self.descriptor
        if kd is not None:
            lines += textfmt.wrap(
                f"descriptor: vgpr_alloc {kd.vgpr_alloc}  sgpr_alloc {kd.sgpr_alloc}  "
                f"accum_offset {kd.accum_offset if kd.accum_offset is not None else '-'}  "
                f"user SGPRs {kd.user_sgpr_count} ({', '.join(kd.user_sgprs) or 'none'})  "
                f"wave{32 if kd.wave32 else 64}  kernarg_preload {kd.kernarg_preload_length}  "
                f"entry {kd.kernel_code_entry_byte_offset:+#x}  rsrc1 {kd.compute_pgm_rsrc1:#010x} "
                f"rsrc2 {kd.compute_pgm_rsrc2:#010x} rsrc3 {kd.compute_pgm_rsrc3:#010x}"
            )
        return lines

    def _agpr_text(self) -> str:
        derived = self.agpr_count_derived
        if derived is not None:
            return f"{derived} (derived from the descriptor)"
        return _opt(self.agpr_count)


def _opt(v: int | None) -> str:
    """An optional metadata count as inspect shows it: ``-`` when the metadata does not say."""
    return "-" if v is None else str(v)


@dataclass(frozen=True)
class CodeObject(ObjectInfo):
    header: ElfHeader
    kernels: tuple[Kernel, ...]
    findings: tuple[Finding, ...]
    metadata: Metadata

    @property
    def version_label(self) -> str:
        return f"code object v{self.header.code_object_version}"

    def processor_facts(self) -> processors.Processor | None:
        """Hardware facts for this object's processor, or None when submitgen has none."""
        return processors.PROCESSORS.get(self.header.processor)

    def occupancy_note(self) -> str | None:
        return f"occupancy: no target facts for {self.processor} (try --arch gfx950)"

    def header_json(self) -> dict[str, Any]:
        h = self.header
        meta: dict[str, Any] = {"version": list(self.metadata.version), "target": self.metadata.target,
                                "printf": list(self.metadata.printf)}
        _unknown(meta, self.metadata.unknown)
        return {
            "size": self.size, "sha256": self.sha256,
            "target": h.target_id, "processor": h.processor, "xnack": h.xnack, "sramecc": h.sramecc,
            "code_object_version": h.code_object_version, "abi_version": h.abi_version, "e_flags": h.e_flags,
            "elf_type": h.elf_type, "generic_version": h.generic_version, "metadata": meta,
        }

    def header_lines(self) -> list[str]:
        h, n = self.header, len(self.kernels)
        return textfmt.wrap(f"{h.target_id}   code object v{h.code_object_version}   {h.elf_type}   "
                            f"metadata {'.'.join(map(str, self.metadata.version))}   {self.size} bytes   "
                            f"{n} kernel{'s' if n != 1 else ''}   sha256 {self.sha256[:12]}")


def _unknown(target: dict[str, Any], unknown: Mapping[Any, Any]) -> None:
    for raw, v in unknown.items():
        k = textfmt.json_key(raw)
        key = k[1:] if k.startswith(".") else k
        target[key if key not in target else k] = textfmt.jsonable(v)


def _arg_json(a: ArgMeta) -> dict[str, Any]:
    d: dict[str, Any] = {"index": a.index, "offset": a.offset, "size": a.size, "value_kind": a.value_kind}
    for k in _ARG_JSON_KEYS:
        v = getattr(a, k)
        if v is not None:
            d[k] = v
    _unknown(d, a.unknown)
    d["hidden"] = a.hidden
    return d


def _descriptor_json(kd: KernelDescriptor) -> dict[str, Any]:
    """The descriptor's fields and entry address."""
    d = {f.name: textfmt.jsonable(getattr(kd, f.name)) for f in fields(KernelDescriptor)}
    d["entry_address"] = kd.entry_address
    return d


def _arg_rows(k: Kernel) -> list[str]:
    rows = ["    #  offset  size  kind                       name / type"]
    for a in k.args:
        kind = a.value_kind + (f" ({a.address_space})" if a.address_space and not a.hidden else "")
        label = " ".join(x for x in (a.name, f"[{a.type_name}]" if a.type_name else None) if x)
        if a.hidden:
            label = "(hidden)"
        if a.access or a.actual_access:
            label += f" {a.actual_access or a.access}"
        rows.append(
            textfmt.cut(
                f"  {a.index:>3} {a.offset:>7} {a.size:>5}  {textfmt.cut(kind, 26):<26} {label}".rstrip()
            )
        )
    return rows
