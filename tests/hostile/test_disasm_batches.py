"""How inspect's instruction mix is made fast (issue 26 item 16), pinned without timing it: many
objects go to few disassembler processes (one per batch of one processor), each batch's listing is
cut into its objects and each kernel's range is read from the text by its address comments
(``fast_mixes``), and all of that counts what the full parse of each object's own listing counts.
The figures are in benchmarks/bench_inspect.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from submitgen.readers import disasm
from submitgen.readers.disasm import Job, code_ranges, fast_mixes, mix_of, parse_listing

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
OBJECTS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".co", ".hsaco"))
needs_objdump = pytest.mark.skipif(disasm.find_disassembler() is None, reason="needs llvm-objdump >= 20")

LISTING = b"""
x.co:\tfile format elf64-amdgpu

Disassembly of section .text:

0000000000001800 <first>:
\ts_load_dwordx2 s[2:3], s[0:1], 0x0                         // 000000001800: C0060080 00000000
\tv_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]// 000000001808: D3B50002 040A210C

0000000000001810 <a_local_label>:
\tglobal_load_dwordx4 v[0:3], v4, s[2:3] // 000000001810:
\ts_endpgm // 000000001818:
\t\t...
\ts_nop 0 // 000000001820:
\ts_nop 0 // 000000001824:

0000000000001900 <second>:
\tv_add_f32_e32 v1, v2, v3 // 000000001900:
\ts_endpgm // 000000001904:
\ts_code_end // 000000001908:
"""
RANGES = {"first": (0x1800, 0x1820), "whole": (0x1800, None), "mid": (0x1804, 0x1819),
          "second": (0x1900, None), "past": (0x2000, None)}


def _slow(listing: bytes, ranges: dict) -> dict:
    parsed = parse_listing(listing.decode())
    return {name: mix_of(parsed, *r) for name, r in ranges.items()}


def test_the_fast_read_counts_what_the_full_parse_counts():
    fast = fast_mixes(LISTING, RANGES)
    assert fast == _slow(LISTING, RANGES)
    assert fast is not None and fast["first"].total == 4 and fast["whole"].total == 8
    assert fast["mid"].total == 3  # from the first instruction at 0x1804 or after, to before 0x1819
    assert fast["second"].total == 2 and fast["past"].total == 0


@pytest.mark.parametrize("listing", [
    LISTING.replace(b"\n0000000000001900", b"\nDisassembly of section .text2:\n\n0000000000001900"),
    LISTING.replace(b"\ts_endpgm // 000000001818:", b"\ts_endpgm"),  # a line without its address
    LISTING.replace(b"\tglobal_load", b"    global_load"),  # spaces, not a tab
    LISTING.replace(b"\tv_add_f32_e32", b"\tV_Add.f32"),  # a mnemonic of other characters
], ids=["two-sections", "no-address", "spaces", "odd-mnemonic"])
def test_a_listing_the_fast_read_would_count_otherwise_is_parsed_whole(listing):
    assert fast_mixes(listing, RANGES) is None
    if b"text2" not in listing:
        assert disasm._mixes_of(listing, RANGES, list(RANGES)) == _slow(listing, RANGES)


def test_batches_are_per_processor_and_bounded_in_objects_and_bytes():
    small = [Job(b"x" * 100, "gfx950", ()) for _ in range(disasm.BATCH * 2 + 5)]
    other = [Job(b"x" * 100, "gfx942", ()) for _ in range(3)]
    big = [Job(b"x" * (disasm.BATCH_BYTES // 2 + 1), "gfx942", ()) for _ in range(3)]
    jobs = small[:10] + other + small[10:] + big
    got = disasm.batches(jobs)
    assert sorted(i for b in got for i in b) == list(range(len(jobs)))
    assert all(len({jobs[i].processor for i in b}) == 1 for b in got)
    assert [len(b) for b in got] == [disasm.BATCH, disasm.BATCH, 5, 4, 1, 1]
    assert all(sum(len(jobs[i].image) for i in b) <= disasm.BATCH_BYTES or len(b) == 1 for b in got)


@needs_objdump
def test_many_objects_take_one_disassembler_process_a_batch(monkeypatch):
    tool = disasm.find_disassembler()
    assert tool is not None
    calls: list[int] = []
    real = disasm.run_tool

    def counting(argv, *args, **kwargs):
        if "-d" in argv:
            calls.append(sum(a.endswith(".co") for a in argv))
        return real(argv, *args, **kwargs)

    gfx950 = [p.read_bytes() for p in OBJECTS if "gfx950" in p.parts][:3]
    assert len(gfx950) == 3
    jobs = [Job(im, "gfx950", tuple(code_ranges(im))) for im in gfx950] * 30  # 90 objects of one processor
    monkeypatch.setattr(disasm, "run_tool", counting)
    together = disasm.instruction_mixes(jobs, tool, workers=2, decode=False)  # llvm-objdump's path
    assert sorted(calls) == sorted(len(b) for b in disasm.batches(jobs)) == [90 - disasm.BATCH, disasm.BATCH]
    calls.clear()
    decoded = disasm.instruction_mixes(jobs, tool, workers=2)  # the default: gfx9_decode, no process
    assert calls == []
    monkeypatch.setattr(disasm, "run_tool", real)
    alone = [disasm.instruction_mix(j.image, j.processor, tool, j.symbols) for j in jobs[:3]]
    assert together == decoded == alone * 30 and all(together)


@needs_objdump
@pytest.mark.parametrize("path", OBJECTS, ids=[p.name for p in OBJECTS])
def test_the_fast_read_agrees_with_the_full_parse_on_the_corpus(path, tmp_path):
    """Every function symbol's range of each corpus object, read both ways from its own listing."""
    import subprocess

    mcpu = "gfx942" if "gfx942" in path.parts else "gfx950"  # the corpus's Triton objects are gfx950
    listing = subprocess.run([disasm.find_disassembler().path, "-d", f"--mcpu={mcpu}",  # type: ignore[union-attr]
                              "--no-show-raw-insn", str(path)], capture_output=True, check=True).stdout
    ranges = code_ranges(path.read_bytes())
    fast = fast_mixes(listing, ranges)
    assert fast is not None  # the fast read holds on every corpus object
    assert fast == _slow(listing, ranges) and any(m.total for m in fast.values())


def test_a_tool_s_output_can_go_to_a_file(tmp_path):
    """The disassembler's listing goes through a file, not a pipe (``run_tool(stdout_to=...)``)."""
    from submitgen.system import run_tool

    out = tmp_path / "listing.txt"
    r = run_tool(["sh", "-c", "echo listing; echo warning >&2"], timeout=60, stdout_to=out)
    assert (r.returncode, r.stdout, r.stderr, out.read_text()) == (0, "", "warning\n", "listing\n")
