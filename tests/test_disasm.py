"""inspect's instruction mix: counted from LLVM's disassembly of each AMD kernel, unknown (never
zero) without a disassembler new enough for the object's processor."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from submitgen.readers.disasm import find_disassembler, mix_of, parse_listing

CORPUS = Path(__file__).parent / "corpus" / "aiter"
TRITON_GEMM = CORPUS / "triton" / "gemm_afp4_wfp4_M1-N10240-K8192.hsaco"

LISTING = """
x.co:\tfile format elf64-amdgpu

Disassembly of section .text:

0000000000001800 <first>:
\ts_load_dwordx2 s[2:3], s[0:1], 0x0                         // 000000001800: C0060080 00000000
\tv_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21 // 000000001808:
\tv_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]// 000000001818: D3B50002 040A210C

0000000000001820 <a_local_label>:
\tv_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3] // 000000001820: D3B50002 040A210C
\tscratch_store_dword off, v1, s33 // 000000001828:
\tglobal_load_dwordx4 v[0:3], v4, s[2:3] // 000000001830:
\tds_read_b128 v[0:3], v4 // 000000001838:
\tv_add_f32_e32 v1, v2, v3 // 000000001840:
\ts_endpgm // 000000001844:
\t\t...
\ts_nop 0 // 000000001848:
\ts_nop 0 // 00000000184C:

0000000000001900 <second>:
\ts_endpgm // 000000001900:
\ts_code_end // 000000001904:
"""


def _inspect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "submitgen", "inspect", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_listing_is_counted_over_each_code_range():
    listing = parse_listing(LISTING)
    assert len(listing) == 13 and all(op != "..." for _, op in listing)
    first = mix_of(listing, 0x1800, 0x1848)  # st_size 0x48: the padding after it is not counted
    assert first.total == 9
    assert dict(first.categories) == {"matrix": 3, "scratch": 1, "global": 1, "lds": 1, "scalar": 2,
                                      "vector": 1, "other": 0}
    assert first.matrix_ops == (("v_mfma_f32_16x16x32_bf16", 2), ("v_mfma_scale_f32_16x16x128_f8f6f4", 1))
    assert mix_of(listing, 0x1800, 0x1900).total == 11  # up to the next function symbol
    second = mix_of(listing, 0x1900, None)  # no size, nothing after it: padding dropped
    assert second.total == 1 and second.matrix_ops == ()
    assert "v_mfma_f32_16x16x32_bf16 x2" in first.text()


needs_objdump = pytest.mark.skipif(find_disassembler() is None,
                                   reason="no llvm-objdump >= 20 (Debian: apt-get install llvm-22)")


@needs_objdump
def test_mix_agrees_with_the_disassembly_itself():
    tool = find_disassembler()
    assert tool is not None
    raw = subprocess.run([tool.path, "-d", "--mcpu=gfx950", str(TRITON_GEMM)], capture_output=True, text=True,
                         check=True).stdout
    expected = len(re.findall(r"^\s+v_mfma_scale_f32_16x16x128_f8f6f4 ", raw, re.MULTILINE))
    assert expected > 0
    r = _inspect("--json", str(TRITON_GEMM))
    assert r.returncode == 0, r.stderr
    (co,) = json.loads(r.stdout)["code_objects"]
    (k,) = co["kernels"]
    assert co["instruction_mix_note"] is None
    assert k["instruction_mix"]["matrix_ops"] == {"v_mfma_scale_f32_16x16x128_f8f6f4": expected}
    assert k["instruction_mix"]["categories"]["scratch"] == 0
    text = _inspect(str(TRITON_GEMM)).stdout
    assert f"v_mfma_scale_f32_16x16x128_f8f6f4 x{expected}" in text


@pytest.mark.slow
def test_without_a_disassembler_the_mix_is_unknown_not_zero(tmp_path, compile_co):
    """No llvm-objdump: the mix is unknown, with the note that names the missing tool, never a
    count of zero."""
    obj = tmp_path / "k.co"
    source = ('#include <submitgen/device.h>\n'
              'extern "C" __global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n')
    obj.write_bytes(compile_co(source, arch="gfx1100"))
    env = {**os.environ, "SUBMITGEN_OBJDUMP": str(tmp_path / "missing-objdump")}
    r = _inspect("--json", str(obj), env=env)
    assert r.returncode == 0, r.stderr
    (co,) = json.loads(r.stdout)["code_objects"]
    assert co["kernels"][0]["instruction_mix"] is None
    assert co["instruction_mix_note"].startswith("no instruction mix: no llvm-objdump >= 20 found")
    text = _inspect(str(obj), env=env).stdout
    assert "note: no instruction mix: no llvm-objdump >= 20 found" in text
    assert "instructions " not in text


def test_no_disasm_skips_it():
    r = _inspect("--json", "--no-disasm", str(TRITON_GEMM))
    (co,) = json.loads(r.stdout)["code_objects"]
    assert co["kernels"][0]["instruction_mix"] is None and co["instruction_mix_note"] is None
