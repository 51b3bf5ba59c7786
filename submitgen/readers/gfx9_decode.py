"""The instruction stream of gfx9 code (gfx90a, gfx942, gfx950), decoded at array speed.

One job: an AMD code object's bytes -> each kernel's instructions (their count by mnemonic), as
llvm-objdump would list them, without running it. ``disasm`` uses it for the instruction mix and
keeps llvm-objdump for every object it returns None for.

How: every 4-byte word of the code section is looked up in the table ``gfx9_derive`` made from
LLVM (``gfx9_table.json``) as if an instruction started there, giving the instruction's length
(its encoding family's, with one more word for a literal constant, DPP or SDWA operand, 0 for
an encoding LLVM rejects) and its mnemonic. The instructions of a kernel are then the words
reachable from its entry by those lengths: found by pointer doubling (the positions 2^k
instructions on from every word), first a few rounds with a check that the result is one chain,
else every round.

Not sure means None, never a guess: a word on a kernel's path that the table has no instruction
for, an instruction that runs past the section's end or over a symbol (objdump starts again at
each symbol), a symbol inside a kernel that is not on its path, a gfx950 ``v_mfma_ld_scale_b32``
whose pairing the table does not cover, a processor the table lacks, or anything unusual about
the sections.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from submitgen.readers import elf

TABLE = Path(__file__).with_name("gfx9_table.json")
SLOTS = 8  # operand-word variants of an opcode: plain, and up to 7 combinations of special sources
INVALID = -(1 << 30)
SYNC_ROUNDS = 5  # the quick path: where every word's path is 2^5 instructions on
PADDING = frozenset({"s_nop", "s_code_end"})
SHF_EXECINSTR = 0x4

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Pair:
    """Two VOP3P words that LLVM lists as one instruction (gfx950's ``v_mfma_scale_*``)."""

    first: int  # global key of the first word
    second: int  # global key of the third word (the second instruction's first)
    key: int  # the global key the pair is counted under
    masks: tuple[int, int, int, int]
    values: tuple[int, int, int, int]


@dataclass(frozen=True)
class Tables:
    """One processor's table as arrays (see ``_build``)."""

    key_hi: I32  # [65536] a first word's top 16 bits -> its key's share, x SLOTS (0: no family)
    mode: npt.NDArray[np.uint8]  # [65536] top 16 bits -> family number + 1 (0: none)
    key_lo: I32  # [(families + 1) << 16] (mode, low 16 bits) -> key share x SLOTS + slot; < 0 invalid
    lengths: npt.NDArray[np.int8]  # [keys x SLOTS] words, 0: LLVM has no such instruction
    mnemonics: tuple[str | None, ...]  # per key
    padding: npt.NDArray[np.bool_]  # per key: s_nop / s_code_end
    pair_first: npt.NDArray[np.bool_]  # per key: may begin a pair
    pairs: tuple[Pair, ...]
    word1: tuple[tuple[int, tuple[tuple[int, int, I32], ...]], ...]  # (mode, ((lo, width, slot code), ...))


def _pack(x: I64, fields: list[list[int]]) -> I64:
    total = sum(w for _, w in fields)
    out = np.zeros_like(x)
    for lo, width in fields:
        total -= width
        out |= ((x >> lo) & ((1 << width) - 1)) << total
    return out


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TABLE.read_text())
    return data


@lru_cache(maxsize=8)
def tables(processor: str) -> Tables | None:
    """The arrays of ``processor``'s table, or None when the table has none for it."""
    raw = _raw()
    proc = raw["processors"].get(processor)
    if proc is None:
        return None
    if "alias" in proc:
        proc = raw["processors"][proc["alias"]]
    return _build(raw["layout"], proc)


def _build(layout: list[dict[str, Any]], proc: dict[str, Any]) -> Tables:
    fams = [f for f in layout if f["name"] in proc["families"]]
    # the family of each value of the top 9 bits: the longest prefix first
    top9 = np.full(512, -1, np.int64)
    for i, f in sorted(enumerate(fams), key=lambda t: -t[1]["prefix_width"]):
        width, prefix = f["prefix_width"], proc["families"][f["name"]]["prefix"]
        tops = np.arange(512)
        top9[(top9 < 0) & (tops >> (9 - width) == prefix)] = i
    hi = np.arange(1 << 16, dtype=np.int64)
    fam_of_hi = top9[hi >> 7]
    key_hi = np.zeros(1 << 16, np.int64)
    key_lo = np.full((len(fams) + 1) << 16, -1, np.int64)
    key_lo[:1 << 16] = 0  # no family: key 0, which has no instruction
    offsets, size = [], 1  # key 0: nothing
    lows = np.arange(1 << 16, dtype=np.int64)
    word1: list[tuple[int, tuple[tuple[int, int, I32], ...]]] = []
    for i, f in enumerate(fams):
        offsets.append(size)
        bits = sum(w for _, w in f["opcode"])
        sel = fam_of_hi == i
        key_hi[sel] = (size + _pack(hi[sel] << 16, f["opcode"])) * SLOTS
        slot = np.zeros(1 << 16, np.int64)
        sources = proc["families"][f["name"]]["sources"]
        counts = [len(s["special"]) + 1 for s in sources]
        fields1: list[tuple[int, int, I32]] = []
        if len({word for word, _, _ in f["sources"]}) > 1:
            slot[:] = INVALID  # sources in both words: not in this decoder
        for j, ((word, lo, width), s) in enumerate(zip(f["sources"], sources)):
            code = np.zeros(1 << width, np.int64)
            code[s["invalid"]] = INVALID
            mult = int(np.prod(counts[j + 1:], dtype=np.int64)) if j + 1 < len(counts) else 1
            for n, v in enumerate(s["special"]):
                code[v] = (n + 1) * mult
            if word == 1:  # read from the next word, in _lengths
                fields1.append((lo, width, code.astype(np.int32)))
            elif word == 0:
                slot += code[(lows >> lo) & ((1 << width) - 1)]
            else:
                slot[:] = INVALID
        if int(np.prod(counts, dtype=np.int64)) > SLOTS:
            slot[:] = INVALID
        if fields1:
            word1.append((i + 1, tuple(fields1)))
        part = _pack(lows, f["opcode"]) * SLOTS + slot
        key_lo[(i + 1) << 16:(i + 2) << 16] = np.where(slot < 0, INVALID, part)
        size += 1 << bits
    pairs_raw = proc.get("pairs", [])
    vop3p = next((offsets[i] for i, f in enumerate(fams) if f["name"] == "VOP3P"), None)
    n_keys = size + len(pairs_raw)
    lengths = np.zeros(n_keys * SLOTS, np.int8)
    mnemonics: list[str | None] = [None] * n_keys
    for i, f in enumerate(fams):
        for k, (mnemonic, lens) in proc["families"][f["name"]]["ops"].items():
            key = offsets[i] + int(k)
            mnemonics[key] = mnemonic
            for s, n in enumerate(lens):
                lengths[key * SLOTS + s] = n // 4
    pairs = []
    pair_first = np.zeros(n_keys, np.bool_)
    for n, (a, b, mnemonic, masks, values) in enumerate(pairs_raw):
        if vop3p is None:
            continue
        key = size + n
        mnemonics[key] = mnemonic
        pairs.append(Pair(vop3p + a, vop3p + b, key, tuple(masks), tuple(values)))  # type: ignore[arg-type]
        pair_first[vop3p + a] = True
        lengths[(vop3p + a) * SLOTS:(vop3p + a + 1) * SLOTS] = 0  # alone: not sure (see _pairs_at)
    padding = np.array([m in PADDING for m in mnemonics], np.bool_)
    return Tables(key_hi.astype(np.int32), (fam_of_hi + 1).astype(np.uint8), key_lo.astype(np.int32), lengths,
                  tuple(mnemonics), padding, pair_first, tuple(pairs), tuple(word1))


@dataclass(frozen=True)
class _Code:
    words: npt.NDArray[np.uint32]
    address: int  # of the first word
    symbols: I64  # word offsets of every symbol in the section, sorted


def _code(image: bytes, source: str) -> _Code | None:
    """The one executable section's words, and where its symbols are; None when there is not
    exactly one, or its size or address is not whole words."""
    img = elf.image_of(image, source)
    execs = [(i, s) for i, s in enumerate(img.sections)
             if s["sh_flags"] & SHF_EXECINSTR and s["sh_type"] == "SHT_PROGBITS" and s["sh_size"]]
    if len(execs) != 1:
        return None
    index, sec = execs[0]
    off, size, addr = sec["sh_offset"], sec["sh_size"], sec["sh_addr"]
    if size % 4 or addr % 4:
        return None
    words = np.frombuffer(image, dtype="<u4", count=size // 4, offset=off)
    at = set()
    for table in (".symtab", ".dynsym"):
        for s in img.symbols((table,)).values():
            if s.shndx == index and addr <= s.value <= addr + size:
                at.add(s.value - addr)
    if any(a % 4 for a in at):
        return None
    return _Code(words, addr, np.array(sorted(a // 4 for a in at), np.int64))


def mnemonic_counts(image: bytes, processor: str, ranges: Mapping[str, tuple[int, int | None]],
                    source: str = "<bytes>") -> dict[str, Counter[str]] | None:
    """Each range's (``disasm.code_ranges``: start and end address, end None to the section's end
    less its trailing padding) instructions by mnemonic, as llvm-objdump lists them; None when
    the decoder is not sure of any of them (see the module's docstring)."""
    t = tables(processor)
    code = _code(image, source) if t is not None else None
    if t is None or code is None:
        return None
    n = len(code.words)
    spans: list[tuple[str, int, int, bool]] = []
    for name, (start, end) in ranges.items():
        s, e = start - code.address, (n * 4 if end is None else end - code.address)
        if s % 4 or not 0 <= s < n * 4 or e > n * 4 or e <= s:
            return None
        spans.append((name, s // 4, (e + 3) // 4, end is None))
    keys, nxt = _lengths(t, code)
    chains = _chains(nxt, n, [(s, e) for _, s, e, _ in spans])
    if chains is None:
        return None
    out: dict[str, Counter[str]] = {}
    for (name, s, e, to_end), chain in zip(spans, chains):
        inside = code.symbols[(code.symbols > s) & (code.symbols < e)]
        if len(inside) and not np.isin(inside, chain).all():
            return None  # objdump starts again at a symbol off this path
        k = keys[chain]
        if to_end:
            keep = np.flatnonzero(~t.padding[k])
            k = k[:keep[-1] + 1] if len(keep) else k[:0]
        counts = np.bincount(k, minlength=0)
        c: Counter[str] = Counter()
        for key in np.flatnonzero(counts):
            mnemonic = t.mnemonics[key]
            if mnemonic is None:
                return None
            c[mnemonic] += int(counts[key])
        out[name] = c
    return out


def _lengths(t: Tables, code: _Code) -> tuple[I64, I64]:
    """Each word's key and the word after the instruction starting there: ``n`` at the section's
    end, ``n + 1`` (nowhere) where there is no instruction, or it runs past the end or over a
    symbol."""
    w = code.words
    n = len(w)
    hi = w >> 16
    mode = t.mode[hi]
    ki = t.key_hi[hi] + t.key_lo[(mode.astype(np.int32) << 16) | (w & 0xFFFF).astype(np.int32)]
    if t.word1:  # sources in the second word (gfx950's VOP3 literals): their slot, from the next word
        after = np.concatenate([w[1:], np.zeros(1, np.uint32)]).astype(np.int32)
        for m, fields in t.word1:
            slot = np.zeros(n, np.int32)
            for lo, width, codes in fields:
                slot += codes[(after >> lo) & ((1 << width) - 1)]
            ki += np.where(mode == m, slot, 0)
        ki[-1] = INVALID if mode[-1] in {m for m, _ in t.word1} else ki[-1]
    bad = ki < 0
    ki[bad] = 0
    length = t.lengths[ki].astype(np.int64)
    keys = (ki // SLOTS).astype(np.int64)
    if t.pairs:
        _pairs_at(t, w, keys, length)
    nxt = np.arange(n, dtype=np.int64) + length
    nxt[(length == 0) | (nxt > n)] = n + 1
    for d in (1, 2, 3):  # an instruction over a symbol: objdump would list it otherwise
        at = code.symbols[code.symbols >= d]
        over = at - d
        nxt[over[nxt[over] > at]] = n + 1
    return keys, np.concatenate([nxt, [n, n + 1]])


def _pairs_at(t: Tables, w: npt.NDArray[np.uint32], keys: I64, length: I64) -> None:
    """Give the words that begin a pair the pair's key and length (4 words); such a word whose
    next instruction does not make one of the table's pairs keeps length 0 (not sure)."""
    at = np.flatnonzero(t.pair_first[keys])
    at = at[at + 3 < len(w)]
    for p in t.pairs:
        ok = (keys[at] == p.first) & (keys[at + 2] == p.second)
        for i in range(4):
            ok &= (w[at + i] & np.uint32(p.masks[i])) == np.uint32(p.values[i])
        keys[at[ok]] = p.key
        length[at[ok]] = 4


def _chains(nxt: I64, n: int, spans: list[tuple[int, int]]) -> list[I64] | None:
    """The word offsets of the instructions from each span's start to its end, in order; None
    when a path meets no instruction (nowhere) before its end."""
    jumps = [nxt]
    for _ in range(SYNC_ROUNDS):
        jumps.append(jumps[-1][jumps[-1]])
    hit = np.zeros(n + 2, np.bool_)
    hit[jumps[-1]] = True  # every path, 2^SYNC_ROUNDS instructions on: where paths have met
    starts = np.array([s for s, _ in spans], np.int64)
    first = starts
    for j in jumps[:-1]:  # and the first 2^SYNC_ROUNDS instructions of each span
        first = np.concatenate([first, j[first]])
    hit[first] = True
    hit[n:] = False
    cand = np.flatnonzero(hit)
    out: list[I64] = []
    for s, e in spans:
        chain = cand[np.searchsorted(cand, s):np.searchsorted(cand, e)]
        if not _is_chain(nxt, chain, s, e, n):
            chain = _exact(jumps, s, e, n)
            if chain is None:
                return None
        out.append(chain)
    return out


def _is_chain(nxt: I64, chain: I64, s: int, e: int, n: int) -> bool:
    return bool(len(chain) and chain[0] == s and (nxt[chain[:-1]] == chain[1:]).all()
                and e <= nxt[chain[-1]] <= n)


def _exact(jumps: list[I64], s: int, e: int, n: int) -> I64 | None:
    """The path from ``s`` to ``e`` by doubling every round (where the quick check failed)."""
    path = np.array([s], np.int64)
    k = 0
    while (path < e).all():
        while len(jumps) <= k:
            jumps.append(jumps[-1][jumps[-1]])
        path = np.concatenate([path, jumps[k][path]])
        k += 1
    chain = path[path < e]
    return chain if _is_chain(jumps[0], chain, s, e, n) else None
