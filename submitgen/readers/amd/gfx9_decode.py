"""The instruction stream of gfx9 code (gfx90a, gfx940-942, gfx950), decoded at array speed.

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
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

TABLE = Path(__file__).with_name("gfx9_table.json")
SLOTS = 8  # operand-word variants of an opcode: plain, and up to 7 combinations of special sources
INVALID = -(1 << 30)
NONE = 1 << 28  # the length, in words, of no instruction: past any section's end
SYNC_ROUNDS = 4  # the quick path: where every word's path is 2^5 instructions on
BATCH_WORDS = 1 << 18  # words decoded as one array (1 MB: the arrays stay in cache)
PADDING = frozenset({"s_nop", "s_code_end"})
SHF_EXECINSTR = 0x4
SHT_PROGBITS, SHT_SYMTAB, SHT_DYNSYM = 1, 2, 11
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                 ("size", "<u8")])  # Elf64_Sym

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]


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
    lengths: I32  # [keys x SLOTS] words; NONE: LLVM has no such instruction
    mnemonics: tuple[str | None, ...]  # per key
    mnemonic_of: I32  # per key: its mnemonic's number in names (0: none)
    names: npt.NDArray[np.object_]  # the mnemonics, names[0] None
    padding: npt.NDArray[np.bool_]  # per mnemonic number: s_nop / s_code_end
    pair_first: npt.NDArray[np.bool_]  # per key: may begin a pair
    pairs: tuple[Pair, ...]
    mode16: npt.NDArray[np.uint32]  # [65536] mode << 16, the row of key_lo
    word1_group: npt.NDArray[np.uint8]  # [families + 1] mode -> its row in word1_fields' tables (0: none)
    word1_fields: tuple[tuple[int, int, I32], ...]  # (low bit, width, [(rows) << width] slot share)


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
    lengths = np.full(n_keys * SLOTS, NONE, np.int32)
    mnemonics: list[str | None] = [None] * n_keys
    for i, f in enumerate(fams):
        for k, (mnemonic, lens) in proc["families"][f["name"]]["ops"].items():
            key = offsets[i] + int(k)
            mnemonics[key] = mnemonic
            for s, n in enumerate(lens):
                lengths[key * SLOTS + s] = n // 4 if n else NONE
    pairs = []
    pair_first = np.zeros(n_keys, np.bool_)
    for n, (a, b, mnemonic, masks, values) in enumerate(pairs_raw):
        if vop3p is None:
            continue
        key = size + n
        mnemonics[key] = mnemonic
        pairs.append(Pair(vop3p + a, vop3p + b, key, (masks[0], masks[1], masks[2], masks[3]),
                          (values[0], values[1], values[2], values[3])))
        pair_first[vop3p + a] = True
        lengths[(vop3p + a) * SLOTS:(vop3p + a + 1) * SLOTS] = NONE  # alone: not sure (see _pairs_at)
    names = [None, *sorted({m for m in mnemonics if m is not None})]
    number = {m: i for i, m in enumerate(names)}
    mnemonic_of = np.array([number[m] for m in mnemonics], np.int32)
    padding = np.array([m in PADDING for m in names], np.bool_)
    # the second-word sources: one table per field, a row per family that has them (they must share
    # the fields' places; a family that does not is left to llvm-objdump)
    places = [tuple((lo, width) for lo, width, _ in fields) for _, fields in word1]
    group = np.zeros(len(fams) + 1, np.uint8)
    tables1: list[tuple[int, int, I32]] = []
    if word1:
        for (m, _), place in zip(word1, places):
            if place != places[0]:
                key_lo[m << 16:(m + 1) << 16] = INVALID
        shared = [(m, fields) for (m, fields), place in zip(word1, places) if place == places[0]]
        for g, (m, _) in enumerate(shared, start=1):
            group[m] = g
        for f_i, (lo, width) in enumerate(places[0]):
            table = np.zeros((len(shared) + 1) << width, np.int32)
            for g, (_, fields) in enumerate(shared, start=1):
                table[g << width:(g + 1) << width] = fields[f_i][2]
            tables1.append((lo, width, table))
    mode = (fam_of_hi + 1).astype(np.uint8)
    return Tables(key_hi.astype(np.int32), mode, key_lo.astype(np.int32), lengths,
                  tuple(mnemonics), mnemonic_of, np.array(names, dtype=object), padding, pair_first,
                  tuple(pairs), mode.astype(np.uint32) << np.uint32(16),
                  group, tuple(tables1))


@dataclass(frozen=True)
class _Code:
    words: npt.NDArray[np.uint32]
    address: int  # of the first word
    symbols: I64  # word offsets of every symbol in the section, sorted


def _code(image: bytes) -> _Code | None:
    """The one executable section's words, and where its symbols are (every symbol of both
    tables, named or not); None when there is not exactly one, or its size or address is not
    whole words, or the object is not a little-endian ELF64 whose tables lie in the file. The
    header, section headers and symbols are read as arrays (the readers have parsed the image
    already; a second parse cost more than the decoding)."""
    if image[:6] != b"\x7fELF\x02\x01" or len(image) < 64:
        return None
    shoff = int.from_bytes(image[0x28:0x30], "little")
    shentsize, shnum = int.from_bytes(image[0x3A:0x3C], "little"), int.from_bytes(image[0x3C:0x3E], "little")
    if shentsize != _SHDR.size or not shnum or shoff + shnum * _SHDR.size > len(image):
        return None
    headers = list(_SHDR.iter_unpack(image[shoff:shoff + shnum * _SHDR.size]))
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    execs = [i for i, h in enumerate(headers) if h[2] & SHF_EXECINSTR and h[1] == SHT_PROGBITS and h[5]]
    if len(execs) != 1:
        return None
    index = execs[0]
    _, _, _, addr, off, size, *_ = headers[index]
    if size % 4 or addr % 4 or off + size > len(image):
        return None
    words = np.frombuffer(image, dtype="<u4", count=size // 4, offset=off)
    found = []
    for h in headers:
        if h[1] in (SHT_SYMTAB, SHT_DYNSYM):
            if h[9] != _SYM.itemsize or h[4] + h[5] > len(image):
                return None
            table = np.frombuffer(image, _SYM, count=h[5] // _SYM.itemsize, offset=h[4])
            v = table["value"]
            found.append(v[(table["shndx"] == index) & (v >= addr) & (v <= addr + size)])
    at = np.unique(np.concatenate(found)).astype(np.int64) - addr if found else np.zeros(0, np.int64)
    if (at % 4).any():
        return None
    return _Code(words, addr, at // 4)


@dataclass(frozen=True)
class Item:
    """One object to decode: its bytes, processor, and the code ranges wanted (name -> start and
    end address, end None to the section's end less its trailing padding: ``disasm.code_ranges``)."""

    image: bytes
    processor: str
    ranges: Mapping[str, tuple[int, int | None]]
    label: str = "<bytes>"


@dataclass(frozen=True)
class _Span:
    name: str
    start: int  # word offsets in the batch's words
    end: int
    to_end: bool  # drop the trailing padding
    limit: int  # the end of its object's words


def mnemonic_counts(image: bytes, processor: str, ranges: Mapping[str, tuple[int, int | None]],
                    label: str = "<bytes>") -> dict[str, Counter[str]] | None:
    """Each range's instructions by mnemonic, as llvm-objdump lists them; None when the decoder
    is not sure of any of them (see the module's docstring)."""
    return decode_many([Item(image, processor, ranges, label)])[0]


def decode_many(items: list[Item]) -> list[dict[str, Counter[str]] | None]:
    """``mnemonic_counts`` of every item, in order: objects of one processor are decoded together,
    BATCH_WORDS of code at a time (array operations on one object's few thousand words cost
    mostly their calls)."""
    out: list[dict[str, Counter[str]] | None] = [None] * len(items)
    by_processor: dict[str, list[tuple[int, _Code, list[_Span]]]] = {}
    for i, it in enumerate(items):
        t = tables(it.processor)
        code = _code(it.image) if t is not None else None
        spans = _spans(code, it.ranges) if code is not None else None
        if spans is not None and code is not None:
            by_processor.setdefault(it.processor, []).append((i, code, spans))
    for processor, objs in by_processor.items():
        t = tables(processor)
        assert t is not None
        batch: list[tuple[int, _Code, list[_Span]]] = []
        size = 0
        for obj in objs:
            batch.append(obj)
            size += len(obj[1].words)
            if size >= BATCH_WORDS:
                _decode_batch(t, batch, out)
                batch, size = [], 0
        if batch:
            _decode_batch(t, batch, out)
    return out


def _spans(code: _Code, ranges: Mapping[str, tuple[int, int | None]]) -> list[_Span] | None:
    n = len(code.words)
    spans = []
    for name, (start, end) in ranges.items():
        s, e = start - code.address, (n * 4 if end is None else end - code.address)
        if s % 4 or not 0 <= s < n * 4 or e > n * 4 or e <= s:
            return None
        spans.append(_Span(name, s // 4, (e + 3) // 4, end is None, n))
    return spans


def _decode_batch(t: Tables, batch: list[tuple[int, _Code, list[_Span]]],
                  out: list[dict[str, Counter[str]] | None]) -> None:
    """Decode several objects' words as one array: each object's words after the last one's, its
    symbols and spans moved by as much, and its end counted as a symbol (no instruction runs
    over it)."""
    bases = np.cumsum([0] + [len(c.words) for _, c, _ in batch])
    words = np.concatenate([c.words for _, c, _ in batch]) if len(batch) > 1 else batch[0][1].words
    symbols = np.concatenate([np.append(c.symbols, len(c.words)) + base
                              for (_, c, _), base in zip(batch, bases)])
    spans = [_Span(sp.name, sp.start + base, sp.end + base, sp.to_end, sp.limit + base)
             for (_, _, sps), base in zip(batch, bases) for sp in sps]
    keys, nxt = _lengths(t, words, symbols)
    chains = _chains(nxt, len(words), spans)
    k = 0
    for (i, _, sps), base in zip(batch, bases):
        mine = chains[k:k + len(sps)]
        k += len(sps)
        out[i] = None if any(c is None for c in mine) else _counts(t, keys, symbols, sps, mine, int(base))


def _counts(t: Tables, keys: I32, symbols: I64, spans: list[_Span], chains: list[I64 | None],
            base: int) -> dict[str, Counter[str]] | None:
    out: dict[str, Counter[str]] = {}
    for sp, chain in zip(spans, chains):
        assert chain is not None
        s, e = sp.start + base, sp.end + base
        inside = symbols[np.searchsorted(symbols, s, "right"):np.searchsorted(symbols, e)]
        if len(inside):
            at = np.minimum(np.searchsorted(chain, inside), len(chain) - 1)
            if not (chain[at] == inside).all():
                return None  # objdump starts again at a symbol off this path
        k = np.take(t.mnemonic_of, np.take(keys, chain))
        if sp.to_end:
            keep = np.flatnonzero(~np.take(t.padding, k))
            k = k[:keep[-1] + 1] if len(keep) else k[:0]
        counts = np.bincount(k)
        if counts[0]:
            return None  # a word with no instruction (cannot happen on a checked path)
        nz = np.flatnonzero(counts)
        out[sp.name] = Counter(dict(zip(np.take(t.names, nz).tolist(), counts[nz].tolist())))
    return out


def _lengths(t: Tables, w: npt.NDArray[np.uint32], symbols: I64) -> tuple[I32, I32]:
    """Each word's key and the word after the instruction starting there: ``n`` at the end,
    ``n + 1`` (nowhere) where there is no instruction, or it runs past the end or over one of
    ``symbols``. 32-bit arrays throughout."""
    n = len(w)
    hi = w >> 16  # np.take throughout: with a uint32 index, twice as fast as indexing
    ki = np.take(t.key_hi, hi) + np.take(t.key_lo, np.take(t.mode16, hi) | (w & np.uint32(0xFFFF)))
    if t.word1_fields:  # sources in the second word (gfx950's VOP3 literals): their slot, from the next word
        mode = np.take(t.mode, hi)
        at = np.flatnonzero(np.take(t.word1_group, mode))
        last = at[-1:] if len(at) and at[-1] == n - 1 else at[:0]
        ki[last] = INVALID
        at = at[:len(at) - len(last)]
        group = np.take(t.word1_group, mode[at]).astype(np.uint32)
        after = w[at + 1]
        add = np.zeros(len(at), np.int32)
        for lo, width, codes in t.word1_fields:
            field = (after >> np.uint32(lo)) & np.uint32((1 << width) - 1)
            add += np.take(codes, (group << np.uint32(width)) | field)
        ki[at] += add
    np.maximum(ki, 0, out=ki)
    length = np.take(t.lengths, ki)
    keys = ki >> 3  # // SLOTS
    if t.pairs:
        _pairs_at(t, w, keys, length)
    nxt = np.arange(n + 2, dtype=np.int32)
    nxt[:n] += length
    np.minimum(nxt, n + 1, out=nxt)  # no instruction (NONE), or one past the end: nowhere
    for d in (1, 2, 3):  # an instruction over a symbol: objdump would list it otherwise
        on = symbols[(symbols >= d) & (symbols <= n)]
        over = on - d
        nxt[over[nxt[over] > on]] = n + 1
    return keys, nxt


def _pairs_at(t: Tables, w: npt.NDArray[np.uint32], keys: I32, length: I32) -> None:
    """Give the words that begin a pair the pair's key and length (4 words); such a word whose
    next instruction does not make one of the table's pairs keeps length NONE (not sure)."""
    at = np.flatnonzero(t.pair_first[keys])
    at = at[at + 3 < len(w)]
    for p in t.pairs:
        ok = (keys[at] == p.first) & (keys[at + 2] == p.second)
        for i in range(4):
            ok &= (w[at + i] & np.uint32(p.masks[i])) == np.uint32(p.values[i])
        keys[at[ok]] = p.key
        length[at[ok]] = 4


def _chains(nxt: I32, n: int, spans: list[_Span]) -> list[I64 | None]:
    """The word offsets of the instructions from each span's start to its end, in order (None
    where the path meets no instruction, or leaves its object, before the end)."""
    jumps: list[I32] = [nxt]
    for _ in range(SYNC_ROUNDS):
        jumps.append(np.take(jumps[-1], jumps[-1]))
    hit = np.zeros(n + 2, np.bool_)
    hit[jumps[-1]] = True  # every path, 2^SYNC_ROUNDS instructions on: where paths have met
    first = np.array([sp.start for sp in spans], np.int64)
    for j in jumps[:-1]:  # and the first 2^SYNC_ROUNDS instructions of each span
        first = np.concatenate([first, np.take(j, first)])
    hit[first] = True
    hit[n:] = False
    cand = np.flatnonzero(hit)
    lo = np.searchsorted(cand, [sp.start for sp in spans])
    hi = np.searchsorted(cand, [sp.end for sp in spans])
    out: list[I64 | None] = []
    for sp, a, b in zip(spans, lo.tolist(), hi.tolist()):
        chain: I64 | None = cand[a:b]
        if not _is_chain(nxt, chain, sp):
            chain = _exact(jumps, sp)
        out.append(chain)
    return out


def _is_chain(nxt: I32, chain: I64 | None, sp: _Span) -> bool:
    return bool(chain is not None and len(chain) and chain[0] == sp.start
                and (nxt[chain[:-1]] == chain[1:]).all() and sp.end <= nxt[chain[-1]] <= sp.limit)


def _exact(jumps: list[I32], sp: _Span) -> I64 | None:
    """The path from the span's start to its end by doubling every round (where the quick check
    failed); a path that stops (no instruction) stays where it is, so at most log2(length) + 1
    rounds."""
    s, e = sp.start, sp.end
    path = np.array([s], np.int64)
    k = 0
    while (path < e).all() and 1 << k <= 2 * (e - s):
        while len(jumps) <= k:
            jumps.append(np.take(jumps[-1], jumps[-1]))
        path = np.concatenate([path, np.take(jumps[k], path)])
        k += 1
    chain = np.sort(path[path < e])
    return chain if _is_chain(jumps[0], chain, sp) else None
