"""Derive the gfx9 encoding table (``gfx9_table.json``) from LLVM's own assembler and disassembler.

``gfx9_decode`` counts a kernel's instructions without llvm-objdump, from a table of facts about
the gfx9 family's encodings. This module makes that table from ``llvm-mc`` alone, so that no fact
is copied by hand:

- the layout of each encoding family (which top bits name it, where its opcode field lies) is
  written down in ``FAMILIES`` as a hypothesis, then checked: its samples (assembly text) are
  assembled and must carry the family's prefix, and every bit of their first word is flipped and
  disassembled; a flipped opcode bit must change the mnemonic (or make it invalid), any other bit
  below the prefix must keep it;
- the opcode numbers are enumerated: every value of the opcode field is disassembled with each
  sample's operands, giving its mnemonic and length, or no entry when LLVM rejects it;
- the operand words: every value of each source-operand field is disassembled, and the values
  that make the instruction longer (a literal constant, DPP, SDWA) are the family's special
  values; each opcode is then disassembled with each combination of them for its length;
- gfx950's paired instructions (a ``VOP3P`` that LLVM prints as one instruction with the next,
  ``v_mfma_scale_*``): every pair of VOP3P opcodes is disassembled and the pairs that come back as
  one instruction are kept.

Run ``python -m submitgen.readers.amd.gfx9_derive`` to rewrite the table (``tests/test_gfx9_decode.py``
re-derives it and compares, when llvm-mc-22 is installed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from submitgen.errors import SubmitgenError

TABLE = Path(__file__).with_name("gfx9_table.json")
PROCESSORS = ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
LLVM_MC = "llvm-mc-22"
_SEPARATOR = bytes.fromhex("000080bf") * 4  # s_nop 0, four times: the stream is in step again after any probe
# the operand word tried after a special source value (a literal; DPP; SDWA with every select DWORD,
# or WORD_0 as the fp8 conversions need): the first that LLVM reads gives the length
EXTRA_WORDS = (0x00000000, 0x06060600, 0x00040600)
_LINE = re.compile(r"^\t(\S+)[^\n]*// ([0-9A-F]+): ((?:[0-9A-F]{8} ?)+)(?:<[^\n]*>)?$", re.MULTILINE)
_ENCODING = re.compile(r"; encoding: \[([0-9a-fx,]+)\]")


@dataclass(frozen=True)
class Family:
    """One encoding family's layout (a hypothesis checked by ``check_layout``): its first word's
    top ``prefix_width`` bits equal its samples'; its opcode is the bits of ``opcode`` ((low bit,
    width) fields, the first the most significant); ``sources`` are its source-operand fields
    (word, low bit, width) that may call for one more word; ``samples`` are instructions of it,
    whose operands the opcode enumeration reuses."""

    name: str
    prefix_width: int
    opcode: tuple[tuple[int, int], ...]
    sources: tuple[tuple[int, int, int], ...]
    samples: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family("SOP1", 9, ((8, 8),), ((0, 0, 8),), ("s_mov_b32 s0, s2", "s_mov_b64 s[0:1], s[2:3]")),
    Family("SOPC", 9, ((16, 7),), ((0, 0, 8), (0, 8, 8)), ("s_cmp_eq_u32 s0, s2",)),
    Family("SOPP", 9, ((16, 7),), (), ("s_nop 0", "s_waitcnt 0")),
    Family("VOP3P", 9, ((16, 7),), ((1, 0, 9), (1, 9, 9), (1, 18, 9)),
           ("v_pk_fma_f16 v0, v2, v4, v6", "v_pk_add_f16 v0, v2, v4",
            "v_mfma_f32_32x32x8f16 v[0:15], v[16:17], v[18:19], v[0:15]",  # gfx90a's spelling
            "v_mfma_f32_32x32x8_f16 v[0:15], v[16:17], v[18:19], v[0:15]",
            "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]")),
    Family("VOP1", 7, ((9, 8),), ((0, 0, 9),), ("v_mov_b32 v0, v2", "v_cvt_f64_i32 v[0:1], v2")),
    Family("VOPC", 7, ((17, 8),), ((0, 0, 9),),
           ("v_cmp_eq_f32 vcc, v2, v4", "v_cmp_eq_f64 vcc, v[2:3], v[4:5]")),
    Family("SMEM", 6, ((18, 8),), (), ("s_load_dword s0, s[2:3], 0x0", "s_store_dword s0, s[2:3], 0x0")),
    Family("EXP", 6, (), (), ("exp mrt0 v0, v0, v0, v0",)),
    Family("VOP3", 6, ((16, 10),), ((1, 0, 9), (1, 9, 9), (1, 18, 9)),
           ("v_fma_f32 v0, v2, v4, v6", "v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]")),
    Family("VINTRP", 6, ((16, 2),), (), ("v_interp_p1_f32 v0, v2, attr0.x",)),
    Family("DS", 6, ((17, 8),), (), ("ds_read_b32 v0, v2", "ds_write_b64 v2, v[4:5]")),
    Family("FLAT", 6, ((18, 7), (14, 2)), (),
           ("global_load_dword v0, v[2:3], off", "flat_load_dword v0, v[2:3]",
            "scratch_load_dword v0, v2, off", "global_store_dwordx2 v[2:3], v[4:5], off")),
    Family("MUBUF", 6, ((18, 7),), (),
           ("buffer_load_dword v0, v2, s[4:7], 0 offen", "buffer_store_dwordx2 v[0:1], v2, s[4:7], 0 offen",
            # with every operand field zero: the cache controls (buffer_wbl2, buffer_inv, ...) that take
            # no operands, which Triton's acq_rel atomics emit on gfx942/gfx950
            "buffer_wbl2")),
    Family("MTBUF", 6, ((15, 4),), (), ("tbuffer_load_format_x v0, v2, s[4:7], dfmt:4, nfmt:7, 0 offen",)),
    Family("MIMG", 6, ((18, 7),), (), ("image_load v[0:3], v[0:3], s[0:7] dmask:0xf",)),
    Family("SOPK", 4, ((23, 5),), (), ("s_movk_i32 s0, 0x10",)),
    Family("SOP2", 2, ((23, 7),), ((0, 0, 8), (0, 8, 8)),
           ("s_add_u32 s0, s2, s4", "s_and_b64 s[0:1], s[2:3], s[4:5]")),
    Family("VOP2", 1, ((25, 6),), ((0, 0, 9),), ("v_add_f32 v0, v2, v4", "v_and_b32 v0, v2, v4")),
)


def find_llvm_mc() -> str | None:
    return shutil.which(LLVM_MC)


def _run(tool: str, processor: str, text: str, disassemble: bool) -> tuple[str, str]:
    args = [tool, "-triple=amdgcn-amd-amdhsa", f"-mcpu={processor}", "--show-encoding"]
    r = subprocess.run(args + (["--disassemble"] if disassemble else []), input=text,
                       capture_output=True, text=True, timeout=600)
    return r.stdout, r.stderr


def assemble(tool: str, processor: str, line: str) -> bytes | None:
    """The bytes of one instruction, or None when this processor has no such instruction."""
    out, err = _run(tool, processor, line + "\n", disassemble=False)
    m = _ENCODING.search(out)
    if "error" in err or not m:
        return None
    return bytes(int(b, 16) for b in m.group(1).split(","))


def disassemble(tool: str, processor: str, probes: list[bytes]) -> list[tuple[str, int] | None]:
    """``_disassemble``, with the probes llvm-objdump crashes on (it does on a VOP3P literal)
    found by halving and taken as invalid (objdump cannot list them either)."""
    try:
        return _disassemble(tool, processor, probes)
    except _Crash:
        if len(probes) == 1:
            return [None]
        half = len(probes) // 2
        return disassemble(tool, processor, probes[:half]) + disassemble(tool, processor, probes[half:])


class _Crash(Exception):
    pass


def _disassemble(tool: str, processor: str, probes: list[bytes]) -> list[tuple[str, int] | None]:
    """(mnemonic, length in bytes) of the instruction at the start of each probe, or None where
    llvm-objdump finds no valid instruction there (it prints ``.long``). The probes, each followed
    by four ``s_nop``s, go into one object (``llvm-mc -filetype=obj`` of ``.long`` directives),
    which llvm-objdump disassembles once, zeros included; each line's address comment says where
    it starts and its raw words how long it is."""
    stream = bytearray()
    starts = []
    for p in probes:
        starts.append(len(stream))
        stream += p + _SEPARATOR
    words = [int.from_bytes(stream[i:i + 4], "little") for i in range(0, len(stream), 4)]
    text = ".text\n" + "".join(".long " + ",".join(f"0x{w:08x}" for w in words[i:i + 16]) + "\n"
                               for i in range(0, len(words), 16))
    with tempfile.TemporaryDirectory(prefix="gfx9-derive-") as d:
        obj = Path(d) / "probes.o"
        r = subprocess.run([tool, "-triple=amdgcn-amd-amdhsa", f"-mcpu={processor}", "-filetype=obj",
                            "-o", str(obj)], input=text, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SubmitgenError(f"{tool} could not assemble the probes: {r.stderr.strip()[-300:]}")
        r = subprocess.run([objdump_for(tool), "-d", "-z", f"--mcpu={processor}", str(obj)],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise _Crash(r.stderr)
    at: dict[int, tuple[str, int]] = {}
    for m in _LINE.finditer(r.stdout):
        if m.group(1) != ".long":
            at[int(m.group(2), 16)] = (m.group(1), 4 * len(m.group(3).split()))
    return [at.get(s) for s in starts]


def objdump_for(tool: str) -> str:
    """llvm-objdump of the same LLVM as ``tool`` (llvm-mc-22 -> llvm-objdump-22)."""
    return tool.replace("llvm-mc", "llvm-objdump")


def _word(b: bytes, i: int) -> int:
    return int.from_bytes(b[4 * i:4 * i + 4], "little")


def _put(b: bytes, i: int, w: int) -> bytes:
    return b[:4 * i] + (w & 0xFFFFFFFF).to_bytes(4, "little") + b[4 * i + 4:]


def opcode_mask(f: Family) -> int:
    return sum(((1 << w) - 1) << lo for lo, w in f.opcode)


def opcode_bits(f: Family) -> int:
    return sum(w for _, w in f.opcode)


def with_opcode(f: Family, word0: int, key: int) -> int:
    """``word0`` with its opcode field set to ``key`` (the fields' bits, the first field highest)."""
    w = word0 & ~opcode_mask(f)
    shift = opcode_bits(f)
    for lo, width in f.opcode:
        shift -= width
        w |= ((key >> shift) & ((1 << width) - 1)) << lo
    return w


def family_of_top9(samples: dict[str, list[bytes]]) -> list[str | None]:
    """The family of each value of a first word's top 9 bits (longest prefix first)."""
    out: list[str | None] = [None] * 512
    for f in sorted(FAMILIES, key=lambda f: -f.prefix_width):
        if f.name not in samples:
            continue
        prefix = _word(samples[f.name][0], 0) >> (32 - f.prefix_width)
        for top in range(512):
            if out[top] is None and top >> (9 - f.prefix_width) == prefix:
                out[top] = f.name
    return out


def check_layout(tool: str, processor: str, f: Family, samples: list[bytes]) -> None:
    """Each sample carries the family's prefix; flipping a bit of its opcode field changes the
    mnemonic or makes it invalid in at least one sample, and flipping any other bit below the
    prefix never changes the mnemonic (it may make the operands invalid)."""
    prefixes = {_word(s, 0) >> (32 - f.prefix_width) for s in samples}
    if len(prefixes) != 1:
        raise SubmitgenError(f"{f.name} samples on {processor}: expected one {f.prefix_width}-bit prefix, "
                             f"got {sorted(prefixes)}")
    mask = opcode_mask(f)
    probes = [s for s in samples] + [_put(s, 0, _word(s, 0) ^ (1 << b)) for s in samples
                                     for b in range(32 - f.prefix_width)]
    got = disassemble(tool, processor, probes)
    base, flipped = got[:len(samples)], got[len(samples):]
    changes = [0] * 32
    for k in range(len(samples)):
        mine = base[k]
        if mine is None:
            raise SubmitgenError(f"{f.name} sample {k} on {processor}: llvm-mc assembled it but cannot "
                                 "disassemble it")
        for b in range(32 - f.prefix_width):
            r = flipped[k * (32 - f.prefix_width) + b]
            if r is not None and r[0] != mine[0] and not mask >> b & 1:
                raise SubmitgenError(f"{f.name} on {processor}: bit {b} is outside the opcode field but "
                                     f"flipping it turns {mine[0]} into {r[0]}")
            if r is None or r[0] != mine[0]:
                changes[b] += 1
    dead = [b for b in range(32) if mask >> b & 1 and not changes[b]]
    if dead:
        raise SubmitgenError(f"{f.name} on {processor}: opcode bits {dead} change no sample's mnemonic")


def recognized(tool: str, processor: str) -> bool:
    """Whether this LLVM knows ``processor`` (LLVM 21 dropped gfx940 and gfx941)."""
    _, err = _run(tool, processor, "s_nop 0\n", disassemble=False)
    return "not a recognized processor" not in err


def derive_processor(tool: str, processor: str) -> dict[str, object]:
    samples: dict[str, list[bytes]] = {}
    for f in FAMILIES:
        got = [b for b in (assemble(tool, processor, s) for s in f.samples) if b is not None]
        if got:
            samples[f.name] = got
    top9 = family_of_top9(samples)
    families: dict[str, object] = {}
    for f in FAMILIES:
        if f.name not in samples:
            continue
        check_layout(tool, processor, f, samples[f.name])
        families[f.name] = _family_table(tool, processor, f, samples[f.name], top9)
    out: dict[str, object] = {"families": families}
    if "VOP3P" in families:
        out["pairs"] = _pairs(tool, processor)
    return out


def _family_table(tool: str, processor: str, f: Family, samples: list[bytes],
                  top9: list[str | None]) -> dict[str, object]:
    first = samples[0]
    # the source fields: which values LLVM reads, and which need one more word (zero here)
    sources = []
    for word, lo, width in f.sources:
        probes = []
        for v in range(1 << width):
            w = _word(first, word)
            probes.append(_put(first, word, (w & ~(((1 << width) - 1) << lo)) | (v << lo)) + bytes(4))
        got = disassemble(tool, processor, probes)
        plain = len(first)
        invalid = [v for v, g in enumerate(got) if g is None]
        special = [v for v, g in enumerate(got) if g is not None and g[1] > plain]
        sources.append({"invalid": invalid, "special": special})
    slot_values: list[list[int | None]] = [[None, *s["special"]] for s in sources]
    slots = list(product(*slot_values)) if slot_values else [()]
    keys = [k for k in range(1 << opcode_bits(f))
            if top9[with_opcode(f, _word(first, 0), k) >> 23] == f.name]
    probes = []
    for k in keys:
        for s in samples:
            for slot in slots:
                b = _put(s, 0, with_opcode(f, _word(s, 0), k))
                for (word, lo, width), value in zip(f.sources, slot):
                    if value is not None:
                        b = _put(b, word, (_word(b, word) & ~(((1 << width) - 1) << lo)) | (value << lo))
                for x in _extras(slot):
                    probes.append(b + x.to_bytes(4, "little") + bytes(4))
    got = disassemble(tool, processor, probes)
    ops: dict[str, object] = {}
    i = 0
    for k in keys:
        mnemonic: str | None = None
        lengths = [0] * len(slots)
        for _ in samples:
            for n, slot in enumerate(slots):
                tries = got[i:i + len(_extras(slot))]
                i += len(tries)
                g = next((t for t in tries if t is not None), None)
                if g is None:
                    continue
                if n == 0 and mnemonic is None:
                    mnemonic = g[0]
                if lengths[n] and lengths[n] != g[1]:
                    raise SubmitgenError(f"{f.name} opcode {k} on {processor}: its samples give lengths "
                                         f"{lengths[n]} and {g[1]}")
                lengths[n] = g[1]
        if mnemonic is not None:
            ops[str(k)] = [mnemonic, lengths]
    return {"prefix": _word(first, 0) >> (32 - f.prefix_width), "sources": sources, "ops": ops}


PAIR_SAMPLES = ("v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21",
                "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15], v32, v33")


def _extras(slot: tuple[int | None, ...]) -> tuple[int, ...]:
    return EXTRA_WORDS if any(v is not None for v in slot) else (0,)


def _pairs(tool: str, processor: str) -> list[list[object]]:
    """The VOP3P opcode pairs (a, b) that LLVM prints as one 16-byte instruction (gfx950's
    ``v_mfma_scale_*``: ``v_mfma_ld_scale_b32`` and the MFMA after it), as [a, b, mnemonic,
    fixed masks, fixed values]: every opcode pair is tried with each assembled sample's operands,
    then each of a found pair's 128 bits outside the two opcode fields is flipped; the bits whose
    flip breaks the pairing are fixed (the four words' masks, and their values in the sample)."""
    f = next(f for f in FAMILIES if f.name == "VOP3P")
    ops = range(1 << opcode_bits(f))  # every opcode: one alone may be invalid with the samples' operands
    found: dict[tuple[int, int], tuple[str, bytes]] = {}
    for line in PAIR_SAMPLES:
        sample = assemble(tool, processor, line)
        if sample is None or len(sample) != 16:
            continue
        w0, w2 = _word(sample, 0), _word(sample, 2)
        pairs = [(a, b) for a in ops for b in ops]
        probes = [_put(_put(sample, 0, with_opcode(f, w0, a)), 2, with_opcode(f, w2, b)) for a, b in pairs]
        for (a, b), probe, g in zip(pairs, probes, disassemble(tool, processor, probes)):
            if g is not None and g[1] == 16 and (a, b) not in found:
                found[a, b] = (g[0], probe)
    out: list[list[object]] = []
    mask = opcode_mask(f)
    for (a, b), (mnemonic, sample) in sorted(found.items()):
        bits = [(i, b_) for i in range(4) for b_ in range(32) if not (i in (0, 2) and mask >> b_ & 1)]
        probes = [_put(sample, i, _word(sample, i) ^ (1 << b_)) for i, b_ in bits]
        fixed = [0, 0, 0, 0]
        for (i, b_), g in zip(bits, disassemble(tool, processor, probes)):
            if g != (mnemonic, 16):
                fixed[i] |= 1 << b_
        out.append([a, b, mnemonic, fixed, [_word(sample, i) & fixed[i] for i in range(4)]])
    return out


def llvm_version(tool: str) -> str:
    r = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"LLVM version (\S+)", r.stdout)
    return m.group(1) if m else "unknown"


# Processors this LLVM may no longer know whose encodings are another's: LLVM 21 dropped gfx940 and
# gfx941 (MI300's early steppings); the last LLVMs that know them derive the very table of gfx942
# for both (llvm-mc 19.1.7, Debian 12's llvm-19; tests/test_gfx9_decode.py re-derives the three
# with an llvm-mc-19 or -20 where one is installed), so they take gfx942's entry.
SAME_ENCODINGS = {"gfx940": "gfx942", "gfx941": "gfx942"}
OLDER_LLVM_MC = ("llvm-mc-20", "llvm-mc-19")  # LLVMs that still know SAME_ENCODINGS' processors


def derive(tool: str, processors: tuple[str, ...] = PROCESSORS) -> dict[str, object]:
    """The table (of ``processors``, all by default): the layout, then each processor's opcodes
    (processors with the same table share one entry, named by ``alias``; a processor this LLVM
    does not know takes the entry of the one ``SAME_ENCODINGS`` names, where this LLVM knows that
    one)."""
    procs: dict[str, object] = {}
    seen: dict[str, str] = {}
    for p in processors:
        if not recognized(tool, p):
            continue  # no table here (SAME_ENCODINGS below, or the decoder leaves it to llvm-objdump)
        t = derive_processor(tool, p)
        text = json.dumps(t, sort_keys=True)
        if text in seen:
            procs[p] = {"alias": seen[text]}
        else:
            seen[text] = p
            procs[p] = t
    for p, twin in SAME_ENCODINGS.items():
        entry = procs.get(twin)
        if p not in procs and isinstance(entry, dict):
            procs[p] = {"alias": entry.get("alias", twin)}
    return {
        "llvm": llvm_version(tool),
        "layout": [{"name": f.name, "prefix_width": f.prefix_width, "opcode": [list(x) for x in f.opcode],
                    "sources": [list(x) for x in f.sources]} for f in FAMILIES],
        "processors": procs,
    }


def main() -> int:
    tool = find_llvm_mc()
    if tool is None:
        print(f"{LLVM_MC} not found", file=sys.stderr)
        return 1
    TABLE.write_text(json.dumps(derive(tool), sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
