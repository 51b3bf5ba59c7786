"""readers/elf.py's struct reads against plain pyelftools, on the files a user inspects.

    PYTHONPATH=. python3 benchmarks/bench_elf_reader.py FILE...   # .py submissions, .co/.hsaco objects

For each code object the files hold (``readers.containers.load_code_objects``), the best of
``--reps`` runs (CPU time of this process) of:
- ``struct``: what the reader does now (``elf.ElfImage``: the section headers, their names, the
  symbols and the notes, with the header, section headers and symbols read by ``struct``);
- ``pyelftools``: the same reads through pyelftools only (``ELFFile``: ``iter_sections``, the
  symbol table's ``iter_symbols``, ``iter_notes``);
- ``reader``: the whole AMD or CUDA reader (``containers.read_object``), for scale.
It prints one line per file and the totals, in milliseconds."""

from __future__ import annotations

import argparse
import time
from io import BytesIO

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from submitgen.readers import elf
from submitgen.readers.containers import load_code_objects, read_object


def with_struct(data: bytes) -> int:
    image = elf.ElfImage(data, "bench")
    n = len(image.sections)
    n += len(image.symbols((".symtab", ".dynsym")))
    n += sum(1 for _ in image.notes())
    return n


def with_pyelftools(data: bytes) -> int:
    f = ELFFile(BytesIO(data))
    n = 0
    for sec in f.iter_sections():
        n += 1
        if isinstance(sec, SymbolTableSection):
            n += sum(1 for _ in sec.iter_symbols())
        elif isinstance(sec, NoteSection):
            n += sum(1 for _ in sec.iter_notes())
    return n


def best(fn, data: bytes, reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.process_time()
        fn(data)
        out.append(time.process_time() - t)
    return min(out) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    total = {"struct": 0.0, "pyelftools": 0.0, "reader": 0.0}
    count = 0
    for path in args.files:
        objs = load_code_objects(path)
        row = {"struct": 0.0, "pyelftools": 0.0, "reader": 0.0}
        for o in objs:
            row["struct"] += best(with_struct, o.data, args.reps)
            row["pyelftools"] += best(with_pyelftools, o.data, args.reps)
            row["reader"] += best(lambda d, o=o: read_object(d, o.provenance), o.data, args.reps)
        count += len(objs)
        for k in total:
            total[k] += row[k]
        print(f"{path}: {len(objs)} objects  struct {row['struct']:.1f} ms  "
              f"pyelftools {row['pyelftools']:.1f} ms  whole reader {row['reader']:.1f} ms")
    print(f"total: {count} objects  struct {total['struct']:.1f} ms  "
          f"pyelftools {total['pyelftools']:.1f} ms  whole reader {total['reader']:.1f} ms")


if __name__ == "__main__":
    main()
