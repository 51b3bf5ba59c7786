"""The instruction mix counts a kernel's whole code range (its entry to ``st_size``, or to the next
function symbol when the symbol has no size), not up to its first local label; the ``s_nop``
padding after ``st_size`` and llvm-objdump's ``...`` are not instructions. Checked against
llvm-objdump itself, run over each function's range from llvm-readelf's symbol table, on a kernel
compiled here with MFMAs behind two local labels, and on an aiter kernel (a size-0 symbol with
seven local labels and 96 MFMAs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "aiter"
AITER = CORPUS / "hsa" / "gfx942" / "bf16gemm" / "bf16gemm_outf32_tn_32x64_pf3.co"
OBJDUMP, READELF = shutil.which("llvm-objdump-22"), shutil.which("llvm-readelf-22")
pytestmark = pytest.mark.skipif(not (OBJDUMP and READELF), reason="needs llvm-objdump-22 and llvm-readelf-22")

SRC = r"""
typedef float v4f __attribute__((ext_vector_type(4)));
typedef __bf16 v8bf __attribute__((ext_vector_type(8)));
extern "C" __attribute__((global, amdgpu_flat_work_group_size(1, 256)))
void mm(const v8bf* a, const v8bf* b, v4f* c) {
  int t = __builtin_amdgcn_workitem_id_x();
  v4f acc = {0, 0, 0, 0};
  v8bf x = a[t], y = b[t];
  asm volatile("sg_first_label:\n\ts_nop 0" ::: "memory");
  acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(x, y, acc, 0, 0, 0);
  asm volatile("sg_second_label:\n\tv_mfma_f32_16x16x32_bf16 %0, %1, %2, %0\n\ts_nop 7"
               : "+v"(acc) : "v"(x), "v"(y));
  acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(x, y, acc, 0, 0, 0);
  c[t] = acc;
}
extern "C" __attribute__((global)) void other(float* x) { x[0] = 1.0f; }
"""


def functions(path: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run([READELF, "-sW", str(path)], capture_output=True, text=True, check=True).stdout
    return {f[7]: (int(f[1], 16), int(f[2])) for f in (line.split() for line in out.splitlines())
            if len(f) == 8 and f[3] == "FUNC"}


def objdump_range(path: Path, mcpu: str, start: int, stop: int | None) -> list[str]:
    """Mnemonics llvm-objdump prints between two addresses (the whole .text when ``stop`` is None)."""
    args = [OBJDUMP, "-d", f"--mcpu={mcpu}", "--no-show-raw-insn", f"--start-address={start:#x}"]
    args += [f"--stop-address={stop:#x}"] if stop is not None else []
    out = subprocess.run([*args, str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.startswith("\t") and line.strip() and line.strip() != "..."]


def inspect_json(path: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "submitgen", "inspect", "--json", str(path)],
                       capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (co,) = json.loads(r.stdout)["code_objects"]
    return {k["name"]: k["instruction_mix"] for k in co["kernels"]}


@pytest.fixture(scope="module")
def labelled(compile_co, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mix") / "mm.co"
    path.write_bytes(compile_co(SRC))
    return path


def test_a_kernel_is_counted_past_its_local_labels_and_not_into_its_padding(labelled):
    syms = subprocess.run([READELF, "-sW", str(labelled)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"NOTYPE\s+LOCAL\s+DEFAULT\s+\d+ sg_first_label", syms)  # a real local label in .text
    funcs = functions(labelled)
    mix = inspect_json(labelled)
    for name in ("mm", "other"):
        start, size = funcs[name]
        assert size > 0
        ops = objdump_range(labelled, "gfx950", start, start + size)
        matrix = sum(op.startswith("v_mfma") for op in ops)
        assert mix[name]["instructions"] == len(ops), name
        assert mix[name]["categories"]["matrix"] == matrix, name
        assert sum(mix[name]["matrix_ops"].values()) == matrix
    assert mix["mm"]["matrix_ops"] == {"v_mfma_f32_16x16x32_bf16": 3}
    padded = objdump_range(labelled, "gfx950", funcs["other"][0], None)
    assert len(padded) > mix["other"]["instructions"] + 100  # the s_nop run after st_size stays out


def test_a_size_zero_aiter_kernel_is_counted_to_the_end_of_its_code():
    ((name, (start, size)),) = functions(AITER).items()
    assert size == 0
    ops = objdump_range(AITER, "gfx942", start, None)
    mix = inspect_json(AITER)[name]
    assert mix["instructions"] == len(ops) == 1086
    assert mix["matrix_ops"] == {"v_mfma_f32_16x16x16_bf16": 96} == {
        "v_mfma_f32_16x16x16_bf16": sum(op == "v_mfma_f32_16x16x16_bf16" for op in ops)}


def functions_of(image: bytes, tmp: Path) -> dict[str, tuple[int, int]]:
    path = tmp / "f.co"
    path.write_bytes(image)
    return functions(path)
