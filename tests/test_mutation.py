"""Random mutations of real code objects and bundles: every outcome is a model or a domain error
(``SubmitgenError``), never another exception. The count is printed (run with -s to see it). The
suite runs 2,500 (each seed a few hundred times; the fuzz test, tests/hostile/test_fuzz.py, reads
thousands more mutated objects through the CLI); ``SUBMITGEN_MUTATIONS=N`` runs N."""

from __future__ import annotations

import os
import random
import struct
from io import BytesIO

import pytest
from elftools.elf.elffile import ELFFile

from submitgen.errors import SubmitgenError
from submitgen.inspection.report import Inspected, json_text, render_text
from submitgen.readers.amd import processors
from submitgen.readers.containers import load_code_objects

N = int(os.environ.get("SUBMITGEN_MUTATIONS", "2500"))


def _regions(data: bytes) -> dict[str, tuple[int, int]]:
    elf = ELFFile(BytesIO(data))
    r = {"header": (0, 64), "shdrs": (elf["e_shoff"], elf["e_shnum"] * 64)}
    for name in (".note", ".rodata", ".dynsym", ".dynstr", ".text"):
        sec = elf.get_section_by_name(name)
        if sec is not None and sec["sh_size"]:
            r[name] = (sec["sh_offset"], sec["sh_size"])
    return r


def _mutate(rng: random.Random, data: bytes, regions: dict[str, tuple[int, int]]) -> bytes:
    d = bytearray(data)
    op = rng.randrange(7)
    if op == 0:  # bit flips anywhere
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(d))
            d[i] ^= 1 << rng.randrange(8)
    elif op == 1:  # truncate
        return bytes(d[: rng.randrange(len(d))])
    elif op in (2, 3):  # overwrite bytes inside a structure (header, note, descriptors, tables)
        off, size = regions[rng.choice(sorted(regions))]
        for _ in range(rng.randint(1, 4)):
            i = off + rng.randrange(max(size, 1))
            if i < len(d):
                d[i] = rng.choice((0, 0xFF, 0x7F, 0x80, 0xC1, rng.randrange(256)))
    elif op == 4:  # overwrite an aligned word with an extreme value
        off, size = regions[rng.choice(sorted(regions))]
        i = off + rng.randrange(max(size, 1)) // 4 * 4
        if i + 8 <= len(d):
            struct.pack_into(
                "<Q", d, i, rng.choice((0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1, rng.getrandbits(64)))
            )
    elif op == 5:  # insert or delete a run of bytes
        i = rng.randrange(len(d))
        if rng.random() < 0.5:
            del d[i : i + rng.randint(1, 64)]
        else:
            d[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:  # splice a chunk from elsewhere in the file
        a, b = rng.randrange(len(d)), rng.randrange(len(d))
        n = rng.randint(1, 64)
        d[a : a + n] = d[b : b + n]
    return bytes(d)


def _inspect(data: bytes) -> None:
    for lo in load_code_objects(data, arch=None):
        co = lo.read()
        tgt = co.processor_facts()
        occ = {k.name: processors.occupancy(k, tgt) for k in co.kernels} if tgt else {}
        item = Inspected(lo, co, co.kernels, tgt, occ, {k.name: k.name for k in co.kernels})
        json_text([item])
        render_text([item])


@pytest.mark.slow
def test_mutations(cos, bundle):
    seeds = [cos["args_v6"], cos["args_v5"], cos["args_v4_942"], cos["big"], cos["opencl"], bundle]
    regions = [_regions(s) if s.startswith(b"\x7fELF") else {"header": (0, 256), "body": (256, len(s) - 256)}
               for s in seeds]
    for s in seeds:
        _inspect(s)  # the unmutated inputs are fine
    rng = random.Random(20261129)
    outcomes = {"ok": 0, "domain_error": 0}
    for n in range(N):
        k = n % len(seeds)
        data = _mutate(rng, seeds[k], regions[k])
        try:
            _inspect(data)
            outcomes["ok"] += 1
        except SubmitgenError:
            outcomes["domain_error"] += 1
        except Exception as e:  # pragma: no cover - this is the failure the test looks for
            raise AssertionError(f"mutation {n} of seed {k}: {type(e).__name__}: {e}") from e
    print(f"\nmutations: {N} ({outcomes['ok']} read, {outcomes['domain_error']} domain errors, 0 other)")
    assert sum(outcomes.values()) == N >= 2500 or "SUBMITGEN_MUTATIONS" in os.environ
