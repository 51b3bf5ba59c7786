"""submitgen's kernel descriptor decode against LLVM 22's disassembler, field by field, on every
kernel of the third-party corpus (tests/corpus/aiter).

``llvm-objdump-22 -D -j .rodata`` prints each ``NAME.kd`` as ``.amdhsa_*`` assembler directives
(AMDGPUUsage, "Kernel Descriptor" and "AMDHSA Kernel Assembler Directives"). Every directive it
prints must map to a decoded field here and agree; a directive this test does not know fails it,
so nothing is skipped silently. ``.amdhsa_reserve_vcc`` and ``.amdhsa_reserve_xnack_mask`` are not
descriptor fields: the disassembler always prints 0 and folds them into ``next_free_sgpr``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from submitgen.readers.amd.descriptor import KernelDescriptor
from submitgen.readers.amd.reader import read_code_object

OBJDUMP = shutil.which("llvm-objdump-22")
pytestmark = pytest.mark.skipif(OBJDUMP is None, reason="llvm-objdump-22 (LLVM 22) is not installed")

CORPUS = Path(__file__).parent / "corpus" / "aiter"
OBJECTS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco"))
NOT_FIELDS = {"reserve_vcc", "reserve_xnack_mask"}
_USER_SGPRS = ("private_segment_buffer", "dispatch_ptr", "queue_ptr", "kernarg_segment_ptr", "dispatch_id",
               "flat_scratch_init", "private_segment_size")


def _decoded(kd: KernelDescriptor) -> dict[str, int]:
    """submitgen's decode under the directive names (without the ``.amdhsa_`` prefix)."""
    d = {
        "group_segment_fixed_size": kd.group_segment_fixed_size,
        "private_segment_fixed_size": kd.private_segment_fixed_size,
        "kernarg_size": kd.kernarg_size,
        "accum_offset": kd.accum_offset,
        "tg_split": int(kd.tg_split),
        "next_free_vgpr": kd.vgpr_alloc,
        "next_free_sgpr": kd.sgpr_alloc,
        "float_round_mode_32": kd.float_round_mode_32,
        "float_round_mode_16_64": kd.float_round_mode_16_64,
        "float_denorm_mode_32": kd.float_denorm_mode_32,
        "float_denorm_mode_16_64": kd.float_denorm_mode_16_64,
        "dx10_clamp": int(kd.enable_dx10_clamp),
        "ieee_mode": int(kd.enable_ieee_mode),
        "fp16_overflow": int(kd.fp16_overflow),
        "enable_private_segment": int(kd.enable_private_segment),
        "system_sgpr_workgroup_id_x": int(kd.workgroup_id_x),
        "system_sgpr_workgroup_id_y": int(kd.workgroup_id_y),
        "system_sgpr_workgroup_id_z": int(kd.workgroup_id_z),
        "system_sgpr_workgroup_info": int(kd.workgroup_info),
        "system_vgpr_workitem_id": kd.workitem_id_dims - 1,
        "uses_dynamic_stack": int(kd.uses_dynamic_stack),
        "user_sgpr_kernarg_preload_length": kd.kernarg_preload_length,
        "user_sgpr_kernarg_preload_offset": kd.kernarg_preload_offset,
        "user_sgpr_count": kd.user_sgpr_count,
        "wavefront_size32": int(kd.wave32),
    }
    d.update({f"user_sgpr_{name}": int(name in kd.user_sgprs) for name in _USER_SGPRS})
    d.update({f"exception_{name}": int(name in kd.exceptions) for name in (
        "fp_ieee_invalid_op", "fp_denorm_src", "fp_ieee_div_zero", "fp_ieee_overflow", "fp_ieee_underflow",
        "fp_ieee_inexact", "int_div_zero")})
    return d


def objdump_descriptors(paths: list[Path]) -> dict[tuple[str, str], dict[str, int]]:
    """{(object path, kernel symbol): {directive: value}} from one llvm-objdump-22 run."""
    r = subprocess.run([OBJDUMP, "-D", "-j", ".rodata", *map(str, paths)], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    out: dict[tuple[str, str], dict[str, int]] = {}
    source, current = "", None
    for line in r.stdout.splitlines():
        if m := re.match(r"^(\S.*):\s+file format ", line):
            source = m.group(1)
        elif m := re.match(r"^\.amdhsa_kernel (\S+)$", line.strip()):
            current = out.setdefault((source, m.group(1)), {})
        elif line.strip() == ".end_amdhsa_kernel":
            current = None
        elif current is not None and (m := re.match(r"^\.amdhsa_(\w+) (-?\d+)$", line.strip())):
            current[m.group(1)] = int(m.group(2))
    return out


def test_descriptor_decode_equals_llvm_objdump():
    theirs = objdump_descriptors(OBJECTS)
    kernels = fields = 0
    for path in OBJECTS:
        for kernel in read_code_object(path.read_bytes(), label=str(path)).kernels:
            directives = theirs.pop((str(path), kernel.name))
            ours = _decoded(kernel.descriptor)
            for name, want in directives.items():
                if name in NOT_FIELDS:
                    assert want == 0, (path.name, kernel.name, name)
                    continue
                assert name in ours, f"{path.name} {kernel.name}: directive .amdhsa_{name} is not checked"
                where = f"{path.name} {kernel.name} .amdhsa_{name}"
                assert ours[name] == want, f"{where}: llvm-objdump {want}, submitgen {ours[name]}"
                fields += 1
            kernels += 1
    assert theirs == {}, f"descriptors llvm-objdump printed that submitgen did not read: {sorted(theirs)}"
    assert kernels == 28 and fields >= 28 * 30
    print(f"{kernels} kernels of {len(OBJECTS)} objects, {fields} descriptor fields equal llvm-objdump-22's")
