"""inspect's instruction mix without llvm-objdump (issue 26 item 16): ``gfx9_decode`` counts each
kernel's instructions from the table ``gfx9_derive`` made from LLVM 22, and counts what the
llvm-objdump path counts; an object it is not sure of goes to llvm-objdump. The whole aiter wheel
is compared by benchmarks/compare_mix.py; here, the corpus sample and the table itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from submitgen.readers import disasm, elf
from submitgen.readers.amd import gfx9_decode, gfx9_derive
from submitgen.readers.disasm import Job, code_ranges

CORPUS = Path(__file__).resolve().parent / "corpus"
OBJECTS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco"))
EXAMPLE = CORPUS / "aiter" / "hsa" / "gfx942" / "bf16gemm" / "bf16gemm_outf32_tn_32x64_pf3.co"
needs_objdump = pytest.mark.skipif(disasm.find_disassembler() is None, reason="needs llvm-objdump >= 20")
needs_llvm_22 = pytest.mark.skipif(not (shutil.which("llvm-mc-22") and shutil.which("llvm-objdump-22")),
                                   reason="the table is LLVM 22's: needs llvm-mc-22 and llvm-objdump-22")


def _job(path: Path, image: bytes | None = None) -> Job:
    im = path.read_bytes() if image is None else image
    processor = "gfx942" if "gfx942" in path.parts else "gfx950"  # the Triton objects are gfx950
    return Job(im, processor, tuple(code_ranges(im)), str(path))


def test_the_issue_s_example_shows_all_its_mfmas_without_llvm_objdump():
    """Issue 26 item 15's example: 1,086 instructions, 96 of them v_mfma_f32_16x16x16_bf16."""
    [mixes] = disasm.decoded_mixes([_job(EXAMPLE)])
    assert mixes is not None
    [(name, mix)] = mixes.items()
    assert (mix.total, mix.matrix_ops) == (1086, (("v_mfma_f32_16x16x16_bf16", 96),))
    assert mix.count("matrix") == 96 and sum(n for _, n in mix.categories) == 1086


def test_a_scaled_mfma_is_one_instruction():
    """gfx950's v_mfma_scale_*: two VOP3P words pairs that LLVM lists as one instruction."""
    scaled = [p for p in OBJECTS if "f4gemm" in p.parts]
    assert scaled
    found = [dict(m.matrix_ops) for p in scaled for mixes in disasm.decoded_mixes([_job(p)])
             for m in (mixes or {}).values()]
    assert any(op.startswith("v_mfma_scale_f32_") for ops in found for op in ops)
    assert not any("ld_scale" in op for ops in found for op in ops)


@needs_objdump
@pytest.mark.parametrize("path", OBJECTS, ids=[p.name for p in OBJECTS])
def test_the_decoder_counts_what_llvm_objdump_lists(path):
    tool = disasm.find_disassembler()
    assert tool is not None
    job = _job(path)
    [mine] = disasm.decoded_mixes([job])
    [listed] = disasm.instruction_mixes([job], tool, decode=False)
    assert mine is not None  # sure of every object of the corpus
    assert mine == listed and any(m.total for m in mine.values())


ATOMIC = """
#include <submitgen/device.h>
extern "C" __global__ void count(int* n, float* out) {
    out[threadIdx.x] = 1.0f;
    __hip_atomic_fetch_add(n, 1, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
}
"""


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_the_cache_controls_of_an_acq_rel_atomic_are_decoded(compile_co, arch):
    """An agent-scope acq_rel atomic (Triton's split-K counters use one) brings buffer_wbl2 and
    buffer_inv, which take no operands: the table knows them (before, the default mxfp4-mm and
    moe-mxfp4 builds went to llvm-objdump for them, and had no mix without it)."""
    image = compile_co(ATOMIC, arch=arch)
    job = Job(image, arch, tuple(code_ranges(image)), arch)
    [mixes] = disasm.decoded_mixes([job])
    assert mixes is not None
    tool = disasm.find_disassembler()
    if tool is not None:
        [listed] = disasm.instruction_mixes([job], tool, decode=False)
        assert mixes == listed
    counts = gfx9_decode.mnemonic_counts(image, arch, code_ranges(image))
    assert counts is not None
    [(_, by_name)] = counts.items()
    assert by_name["buffer_wbl2"] >= 1 and by_name["buffer_inv"] >= 1


def _entry_offset(image: bytes) -> int:
    """The file offset of the first kernel's first instruction."""
    [(start, _)] = code_ranges(image).values()
    img = elf.image_of(image, "x")
    sec = next(s for s in img.sections if s["sh_flags"] & gfx9_decode.SHF_EXECINSTR and s["sh_size"])
    return int(sec["sh_offset"] + start - sec["sh_addr"])


@needs_objdump
def test_a_word_it_has_no_instruction_for_leaves_the_object_to_llvm_objdump():
    tool = disasm.find_disassembler()
    assert tool is not None
    image = bytearray(EXAMPLE.read_bytes())
    at = _entry_offset(bytes(image))
    image[at:at + 4] = b"\xff\xff\xff\xff"  # no gfx942 instruction starts so (objdump prints .long)
    job = _job(EXAMPLE, bytes(image))
    assert disasm.decoded_mixes([job]) == [None]
    got = disasm.instruction_mixes([job], tool)
    assert got == disasm.instruction_mixes([job], tool, decode=False)
    [(_, mix)] = got[0].items()
    assert mix.count("matrix") == 96


def test_a_processor_without_a_table_is_not_decoded():
    job = _job(EXAMPLE)
    assert disasm.decoded_mixes([Job(job.image, "gfx1100", job.symbols, job.label)]) == [None]
    assert gfx9_decode.tables("gfx906") is None  # not one of the table's processors


@pytest.mark.parametrize("processor", ["gfx940", "gfx941"])
def test_gfx940_and_gfx941_code_decodes_as_gfx942_code(processor):
    """LLVM 22 does not know gfx940 or gfx941; their encodings are gfx942's (the test below), so
    their objects are decoded with its table instead of going to an llvm-objdump that cannot
    read them. Before: no table, no instruction mix."""
    job = _job(EXAMPLE)
    [as_942] = disasm.decoded_mixes([job])
    [got] = disasm.decoded_mixes([Job(job.image, processor, job.symbols, job.label)])
    assert got is not None and got == as_942
    [(_, mix)] = got.items()
    assert mix.count("matrix") == 96


OLDER_MC = next((t for t in map(shutil.which, gfx9_derive.OLDER_LLVM_MC) if t), None)


@pytest.mark.skipif(OLDER_MC is None, reason="needs llvm-mc-19 or -20, the last LLVMs that know gfx940 "
                    "(Debian 12: apt-get install llvm-19; .ci/run installs it)")
def test_gfx940_and_gfx941_derive_the_table_of_gfx942():
    """The fact gfx9_derive.SAME_ENCODINGS rests on, from an LLVM that still knows all three."""
    assert OLDER_MC is not None
    tables = {p: json.dumps(gfx9_derive.derive_processor(OLDER_MC, p), sort_keys=True)
              for p in ("gfx940", "gfx941", "gfx942")}
    assert tables["gfx940"] == tables["gfx942"] and tables["gfx941"] == tables["gfx942"]
    assert gfx9_derive.SAME_ENCODINGS == {"gfx940": "gfx942", "gfx941": "gfx942"}


def test_an_instruction_over_a_symbol_is_not_guessed():
    """objdump starts again at every symbol, so a path through an instruction that a symbol
    falls inside goes nowhere (the object then goes to llvm-objdump)."""
    image = EXAMPLE.read_bytes()
    code = gfx9_decode._code(image)
    t = gfx9_decode.tables("gfx942")
    assert code is not None and t is not None
    n = len(code.words)
    start = next(iter(code_ranges(image).values()))[0] - code.address
    _, nxt = gfx9_decode._lengths(t, code.words, np.array([n], np.int64))
    at = start // 4
    while nxt[at] != at + 2:  # the kernel's first 8-byte instruction
        at = int(nxt[at])
    _, over = gfx9_decode._lengths(t, code.words, np.array([at + 1, n], np.int64))
    assert over[at] == n + 1 and (np.delete(over, at) == np.delete(nxt, at)).all()


@needs_llvm_22
@pytest.mark.slow
def test_gfx950_s_table_is_what_llvm_22_says():
    """Re-derive gfx950's entry (the home arch; ~20 s) and compare it, the layout and the LLVM
    version with the committed table; the whole table is the heavy test below."""
    tool = gfx9_derive.find_llvm_mc()
    assert tool is not None
    committed = json.loads(gfx9_derive.TABLE.read_text())
    assert gfx9_derive.llvm_version(tool) == committed["llvm"]
    derived = json.loads(json.dumps(gfx9_derive.derive_processor(tool, "gfx950")))
    assert derived == committed["processors"]["gfx950"]
    layout = json.loads(json.dumps(gfx9_derive.derive(tool, processors=())["layout"]))
    assert layout == committed["layout"]


@needs_llvm_22
@pytest.mark.heavy
def test_the_table_is_what_llvm_22_says():
    """Re-derive the whole table (~1 min) and compare it with the committed one."""
    tool = gfx9_derive.find_llvm_mc()
    assert tool is not None
    derived = json.loads(json.dumps(gfx9_derive.derive(tool)))
    committed = json.loads(gfx9_derive.TABLE.read_text())
    assert derived["llvm"] == committed["llvm"]
    assert derived == committed
