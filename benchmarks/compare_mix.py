"""Check ``gfx9_decode`` against llvm-objdump on every kernel of every code object under DIR.

For each object (``*.co``, ``*.hsaco``) the instruction mix of each kernel is computed twice: by
the llvm-objdump path that ``inspect`` used before the decoder (``disasm.instruction_mixes(...,
decode=False)``) and by the decoder alone (``disasm.decoded_mixes``). Prints how many objects and
kernels were compared, how many objects the decoder was not sure of (they keep llvm-objdump), and
every kernel whose total, categories or matrix-instruction counts differ; exit status 1 on any
difference:

    python benchmarks/compare_mix.py /tmp/aiter_whl/x
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from submitgen.readers import elf
from submitgen.readers.containers import load_code_objects
from submitgen.readers.disasm import Job, decoded_mixes, find_disassembler, instruction_mixes


def jobs_under(root: Path) -> list[Job]:
    jobs = []
    paths = sorted(p for p in root.rglob("*") if p.suffix in (".co", ".hsaco") and p.is_file())
    for p in paths:
        for loaded in load_code_objects(str(p)):
            co = loaded.read()
            if not co.processor.startswith("gfx"):
                continue
            names = tuple(k.symbol.removesuffix(".kd") for k in co.kernels)
            jobs.append(Job(loaded.data, co.processor, names, str(p)))
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--show", type=int, default=20, help="differences to print (default 20)")
    a = ap.parse_args()
    tool = find_disassembler()
    if tool is None:
        print("no llvm-objdump >= 20 found", file=sys.stderr)
        return 2
    with elf.shared_images():
        jobs = jobs_under(a.root)
        t0 = time.perf_counter()
        ref = instruction_mixes(jobs, tool, decode=False)
        t1 = time.perf_counter()
        mine = decoded_mixes(jobs)
        t2 = time.perf_counter()
    kernels = decoded_kernels = 0
    unsure: list[str] = []
    diffs: list[str] = []
    for j, r, m in zip(jobs, ref, mine):
        kernels += len(r)
        if m is None:
            unsure.append(j.source)
            continue
        if set(m) != set(r):
            diffs.append(f"{j.source}: kernels {sorted(m)} against {sorted(r)}")
            continue
        for name in r:
            decoded_kernels += 1
            if m[name] != r[name]:
                diffs.append(f"{j.source} {name}: decoder {m[name].text()} | llvm-objdump {r[name].text()}")
    print(f"objects {len(jobs):,}, kernels {kernels:,}")
    print(f"decoded {len(jobs) - len(unsure):,} objects ({decoded_kernels:,} kernels); not sure of "
          f"{len(unsure):,} (llvm-objdump lists them)")
    for s in unsure[:a.show]:
        print(f"  not sure: {s}")
    print(f"kernels that differ: {len(diffs):,}")
    for d in diffs[:a.show]:
        print(f"  {d}")
    print(f"time: llvm-objdump path {t1 - t0:.2f} s, decoder {t2 - t1:.2f} s")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
