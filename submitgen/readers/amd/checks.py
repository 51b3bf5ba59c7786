"""Cross-checks of one code object: metadata against the kernel descriptor and the symbols,
resource limits, argument layout, and object-level facts. Each problem is a ``Finding``;
``error`` ones are what a loader refuses or a launch cannot survive."""

from __future__ import annotations

from submitgen.readers.amd import processors
from submitgen.readers.amd.descriptor import (
    KCP_FLAT_SCRATCH_INIT,
    KCP_PRIVATE_SEGMENT_BUFFER,
    KernelDescriptor,
    vgpr_encoding_granule,
)
from submitgen.readers.amd.header import ElfHeader
from submitgen.readers.amd.metadata import KernelMeta, Metadata
from submitgen.readers.base import Add, Finding, check_arg_extent

EXPLICIT_VALUE_KINDS = frozenset(
    {"by_value", "global_buffer", "dynamic_shared_pointer", "sampler", "image", "pipe", "queue"}
)

# The largest kernarg segment accepted: submitgen's bound, not the hardware's. AMD documents no
# hardware limit (the segment is memory the runtime fills, read through a 64-bit pointer; the
# descriptor's kernarg_size is a u32); 4 KiB is CUDA's __global__ parameter limit before CUDA 12.1
# (which raised it to 32,764 B on Volta+). The aiter corpus's largest is 704 bytes (docs/readers.md).
MAX_KERNARG_SEGMENT_SIZE = 4096


def note_target(target: str) -> tuple[str, frozenset[str]]:
    """(processor, features) of an ``amdhsa.target`` string in either spelling LLVM writes
    (docs/readers.md, "amdhsa.target"; the processor may itself hold dashes, as in
    ``gfx9-4-generic``). A bare ``gfx950[:features]`` is taken as the target ID."""
    parts = target.split("-", 4)
    tid = parts[4] if len(parts) == 5 and parts[0].startswith(("amdgcn", "amdgpu")) else target
    proc, *features = tid.split(":")
    return proc, frozenset(features)


def object_findings(header: ElfHeader, metadata: Metadata) -> list[Finding]:
    """Findings about the object as a whole (header and metadata root)."""
    out: list[Finding] = []
    if header.program_header_problem:
        out.append(Finding("error", "no-program-headers", header.program_header_problem))
    if header.elf_type == "ET_REL":
        out.append(Finding("error", "not-linked", "ELF type is ET_REL (unlinked compiler output); the loader "
                                                  "needs ET_DYN: link it with ld.lld -shared"))
    if metadata.version[0] != 1:
        out.append(Finding("warning", "metadata-version", f"amdhsa.version is {list(metadata.version)}, "
                                                          "expected major 1"))
    if metadata.target is not None and note_target(metadata.target) != note_target(header.target_id):
        # another processor is code for another ISA; other features only a different build of it
        other = note_target(metadata.target)[0] != header.processor
        out.append(Finding("error" if other else "warning", "target-mismatch",
                           f"amdhsa.target is {metadata.target!r}, e_flags say {header.target_id!r}"))
    if header.processor.startswith("unknown"):
        out.append(Finding("warning", "unknown-processor",
                           f"e_flags 0x{header.e_flags:x}: unknown EF_AMDGPU_MACH 0x{header.mach:02x}"))
    elif header.processor.endswith("-generic") and header.code_object_version < 6:
        out.append(Finding("error", "generic-needs-v6",
                           f"{header.processor} needs code object v6, this is v{header.code_object_version}"))
    return out


def kernel_findings(meta: KernelMeta, kd: KernelDescriptor | None, header: ElfHeader,
                    func: tuple[int, int] | None, others: frozenset[str] = frozenset()) -> list[Finding]:
    """Descriptor/metadata cross-checks and resource warnings for one kernel (``others``: the
    names of the object's kernels)."""
    out: list[Finding] = []

    def add(sev: str, code: str, msg: str) -> None:
        out.append(Finding(sev, code, msg, meta.name))

    if meta.symbol != meta.name + ".kd":
        target = meta.symbol.removesuffix(".kd")
        stolen = target != meta.name and target in others  # launching it would run that kernel's code
        add("error" if stolen else "warning", "symbol-name",
            f".symbol is {meta.symbol!r}, expected {meta.name + '.kd'!r}"
            + (f": the descriptor of kernel {target!r}" if stolen else ""))
    if kd is not None:
        _descriptor_vs_metadata(meta, kd, header, add)
        _descriptor_fields(kd, header, add)
        _entry(kd, header, func, add)
    _resources(meta, header, add)
    _registers_and_align(meta, header, add)
    _arg_layout(meta, add)
    return out


def _descriptor_vs_metadata(meta: KernelMeta, kd: KernelDescriptor, header: ElfHeader, add: Add) -> None:
    for field_name, kd_val in (("group_segment_fixed_size", kd.group_segment_fixed_size),
                               ("private_segment_fixed_size", kd.private_segment_fixed_size),
                               ("kernarg_segment_size", kd.kernarg_size)):
        mv = getattr(meta, field_name)
        if kd_val != mv and not (field_name == "kernarg_segment_size" and kd_val == 0):
            add(
                "error",
                "descriptor-mismatch",
                f"{field_name}: metadata says {mv}, kernel descriptor says {kd_val}",
            )
    if kd.kernarg_size > MAX_KERNARG_SEGMENT_SIZE:
        add("error", "kernarg-over-limit",
            f"descriptor kernarg_size is {kd.kernarg_size} bytes, expected at most "
            f"{MAX_KERNARG_SEGMENT_SIZE}")
    granule = vgpr_encoding_granule(header.processor, wave32=kd.wave32)
    need = -(-meta.vgpr_count // granule) * granule
    if kd.vgpr_alloc < need:
        add("error", "descriptor-mismatch", f"VGPRs: metadata .vgpr_count {meta.vgpr_count} needs {need} "
                                            f"allocated, descriptor allocates {kd.vgpr_alloc}")
    if kd.accum_offset is not None and meta.agpr_count and kd.accum_offset + meta.agpr_count > kd.vgpr_alloc:
        add("error", "descriptor-mismatch", f"AGPRs: accum_offset {kd.accum_offset} + .agpr_count "
                                            f"{meta.agpr_count} exceeds the {kd.vgpr_alloc} VGPRs allocated")
    if kd.user_sgpr_count < kd.user_sgprs_needed:
        add("error", "descriptor-mismatch",
            f"USER_SGPR_COUNT {kd.user_sgpr_count} is below the {kd.user_sgprs_needed} SGPRs its inputs need")
    wave = 32 if kd.wave32 else 64
    if wave != meta.wavefront_size:
        add("error", "descriptor-mismatch",
            f"wavefront size: metadata says {meta.wavefront_size}, descriptor says wave{wave}")
    if meta.uses_dynamic_stack is not None and meta.uses_dynamic_stack != kd.uses_dynamic_stack:
        add("warning", "descriptor-mismatch", f"uses_dynamic_stack: metadata says {meta.uses_dynamic_stack}, "
                                              f"descriptor says {kd.uses_dynamic_stack}")


def _descriptor_fields(kd: KernelDescriptor, header: ElfHeader, add: Add) -> None:
    proc = header.processor
    if kd.granulated_lds_size:
        add(
            "warning",
            "descriptor-field",
            f"rsrc2 GRANULATED_LDS_SIZE is {kd.granulated_lds_size}, expected 0",
        )
    if proc in processors.ARCHITECTED_FLAT_SCRATCH and \
            kd.kernel_code_properties & (KCP_PRIVATE_SEGMENT_BUFFER | KCP_FLAT_SCRATCH_INIT):
        add("error", "descriptor-field", "private_segment_buffer/flat_scratch_init user SGPRs set; "
                                         f"{proc} has architected flat scratch (expected clear)")
    if proc.startswith("gfx9") and kd.wave32:
        add("error", "descriptor-field", f"ENABLE_WAVEFRONT_SIZE32 set; {proc} is wave64 only")
    if kd.reserved_nonzero:
        add("warning", "descriptor-field", "reserved descriptor bytes or bits are not zero")
    if kd.kernarg_preload_length:
        add("info", "kernarg-preload", f"{kd.kernarg_preload_length} kernarg dwords preloaded into SGPRs "
                                       "(the firmware skips a 256-byte compatibility prologue)")


def _entry(kd: KernelDescriptor, header: ElfHeader, func: tuple[int, int] | None, add: Add) -> None:
    if header.elf_type != "ET_DYN":
        return
    if kd.entry_address % 256:
        add("error", "entry-alignment", f"entry address 0x{kd.entry_address:x} is not 256-byte aligned")
    if func is not None and func[0] != kd.entry_address:
        add("error", "descriptor-mismatch",
            f"descriptor entry 0x{kd.entry_address:x} is not the function symbol's address 0x{func[0]:x}")


def _resources(meta: KernelMeta, header: ElfHeader, add: Add) -> None:
    if meta.wavefront_size != 64 and header.processor.startswith("gfx9"):
        add(
            "error",
            "wavefront-size",
            f".wavefront_size is {meta.wavefront_size}, expected 64 on {header.processor}",
        )
    if meta.max_flat_workgroup_size > processors.MAX_WORKGROUP_SIZE or meta.max_flat_workgroup_size == 0:
        add("error", "workgroup-size", f".max_flat_workgroup_size is {meta.max_flat_workgroup_size}, "
                                       f"expected 1..{processors.MAX_WORKGROUP_SIZE}")
    tgt = processors.PROCESSORS.get(header.processor)
    lds = meta.group_segment_fixed_size
    if tgt is not None and lds > tgt.lds_per_workgroup:
        add("error", "lds-over-limit",
            f"static LDS {lds} bytes exceeds {tgt.name}'s {tgt.lds_per_workgroup} bytes per workgroup")
    if meta.private_segment_fixed_size > processors.MAX_SCRATCH_PER_LANE:
        add(
            "error",
            "scratch-over-limit",
            f".private_segment_fixed_size is {meta.private_segment_fixed_size} bytes, "
            f"expected at most {processors.MAX_SCRATCH_PER_LANE} per work-item",
        )
    elif meta.private_segment_fixed_size:
        add("warning", "scratch", f"uses {meta.private_segment_fixed_size} bytes of scratch per work-item")
    if meta.uses_dynamic_stack:
        add("warning", "dynamic-stack", "uses a dynamic stack (scratch size unknown at compile time)")
    spills = [
        f"{n} {label}" for n, label in ((meta.vgpr_spill_count, "VGPR"), (meta.sgpr_spill_count, "SGPR")) if n
    ]
    if spills:
        add("warning", "spills", "spills " + " and ".join(spills) + " registers")


def _registers_and_align(meta: KernelMeta, header: ElfHeader, add: Add) -> None:
    if header.processor.startswith("gfx9") and meta.sgpr_count > processors.MAX_SGPRS_PER_WAVE_GFX9:
        add("error", "sgpr-over-limit", f".sgpr_count is {meta.sgpr_count}, expected at most "
                                        f"{processors.MAX_SGPRS_PER_WAVE_GFX9} on {header.processor}")
    if meta.kernarg_segment_size > MAX_KERNARG_SEGMENT_SIZE:
        add("error", "kernarg-over-limit", f".kernarg_segment_size is {meta.kernarg_segment_size} bytes, "
                                           f"expected at most {MAX_KERNARG_SEGMENT_SIZE}")
    align = meta.kernarg_segment_align
    if align == 0 or align & (align - 1):
        add("error", "kernarg-align", f".kernarg_segment_align is {align}, expected a power of two")


def _arg_layout(meta: KernelMeta, add: Add) -> None:
    prev_end = 0
    seen_hidden = False
    for a in meta.args:
        label = f"arg {a.index}" + (f" '{a.name}'" if a.name else "")
        check_arg_extent(a, label, prev_end, meta.kernarg_segment_size, add, previous="previous argument",
                         beyond=f".kernarg_segment_size {meta.kernarg_segment_size}")
        if a.hidden:
            seen_hidden = True
        else:
            if seen_hidden:
                add("warning", "arg-layout", f"{label} is an explicit argument after hidden ones")
            if a.value_kind not in EXPLICIT_VALUE_KINDS:
                add("warning", "arg-kind", f"{label} has unknown .value_kind {a.value_kind!r}")
            elif a.value_kind == "global_buffer" and a.size != processors.POINTER_SIZE:
                add("error", "arg-size", f"{label} is a global_buffer of .size {a.size}, expected "
                                         f"{processors.POINTER_SIZE} (a 64-bit address)")
        prev_end = max(prev_end, a.end)
