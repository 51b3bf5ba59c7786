"""The kernel model a cubin reader builds (``cubin.py``): ``CudaParam`` and ``CudaKernel``, in the
AMD ``Kernel``'s terms where they have a meaning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from submitgen import textfmt
from submitgen.readers.base import Finding
from submitgen.readers.demangle import demangle


@dataclass(frozen=True)
class CudaParam:
    """One kernel parameter: where it lies in the parameter buffer and how big it is."""

    index: int  # the parameter's ordinal in the kernel's signature
    offset: int
    size: int
    value_kind: str = "cuda_param"  # a cubin does not tell pointers from values
    type_name: str | None = None
    name: str | None = None

    @property
    def hidden(self) -> bool:
        return False

    @property
    def end(self) -> int:
        return self.offset + self.size


# to_json's keys read as they are, before and after "spills_recorded" (tuples become lists)
_JSON_KEYS = ("kernarg_segment_size", "explicit_args_size", "group_segment_fixed_size",
              "private_segment_fixed_size", "vgpr_count", "sgpr_count", "agpr_count", "sgpr_spill_count",
              "vgpr_spill_count")
_JSON_KEYS_AFTER = ("max_flat_workgroup_size", "reqd_workgroup_size", "max_threads", "max_reg_count",
                    "num_barriers", "cluster_dims", "frame_size", "shared_section_size", "param_cbank_offset",
                    "code_size")


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
    sgpr_count: int | None = None  # NVIDIA has no SGPRs or AGPRs, and a cubin records no spill counts
    agpr_count: int | None = None
    sgpr_spill_count: int | None = None
    vgpr_spill_count: int | None = None
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

    def to_json(self, demangled: str | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name, "demangled_name": demangled if demangled is not None else self.demangled_name,
            "args": [{"index": a.index, "offset": a.offset, "size": a.size, "value_kind": a.value_kind,
                      "hidden": False} for a in self.args],
        }
        d.update((k, textfmt.jsonable(getattr(self, k))) for k in _JSON_KEYS)
        d["spills_recorded"] = False
        d.update((k, textfmt.jsonable(getattr(self, k))) for k in _JSON_KEYS_AFTER)
        d["attributes"] = [f"0x{a:02x}" for a in self.attributes]
        return d

    def text_lines(self) -> list[str]:
        lines = [f"  code {self.code_size if self.code_size is not None else '?'} bytes"]
        if self.args:
            lines.append("    #  offset  size  kind")
            lines += [f"  {a.index:>3} {a.offset:>7} {a.size:>5}  {a.value_kind}" for a in self.args]
        else:
            lines.append("  no arguments")
        lines += textfmt.wrap(
            f"params {self.kernarg_segment_size} bytes ({len(self.args)} args)   "
            f"registers {self.vgpr_count}   static shared {self.group_segment_fixed_size} B   "
            f"local {self.private_segment_fixed_size} B   spills not recorded (ptxas -v prints them)"
        )
        extra = f"max block {self.max_flat_workgroup_size}"
        for label, v in (("required block", self.reqd_workgroup_size), ("launch bounds", self.max_threads),
                         ("cluster", self.cluster_dims), ("barriers", self.num_barriers)):
            if v:
                extra += f"   {label} {v}"
        return lines + textfmt.wrap(extra)
