"""What the embedded code objects cost in characters, per embedding mode, and each default
build's whole dispatch payload.

For the default kernel project of every problem, built for gfx950 and (where Triton can) for
sm_90 through `submitgen build`: the code objects' bytes, raw base64 (what hand-written
submissions do), zlib+base64 and lzma+base64 (submitgen's `--compress` choices; lzma is the
default), each with its ratio to raw base64, and the whole file's estimated dispatch payload
against the 65,535-char limit.

usage: python benchmarks/bench_payload.py [--json] [--targets amd,cuda]
Stripping (.symtab/.strtab) is not offered: whether ROCm's loader accepts a code object without
.symtab is unproven (reference/toolchain.md), so it is not measured here."""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from _common import print_table

from submitgen.options import Compress, Target
from submitgen.pipeline import BuildOptions, build
from submitgen.problems import PROBLEMS
from submitgen.render.embed import decompress, embed

ARCH = {Target.AMD: "gfx950", Target.CUDA: "sm_90"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--targets", default="amd,cuda", help="comma-separated: amd, cuda")
    args = ap.parse_args()
    rows = []
    for problem in PROBLEMS.values():
        for target in (Target(t) for t in args.targets.split(",")):
            what = f"{problem.name} {ARCH[target]}"
            with tempfile.TemporaryDirectory() as d:
                r = build(BuildOptions(problem=problem.name, target=target, arch=ARCH[target],
                                       output=Path(d) / "s.py"))
            size = sum(part[1] for blob in r.blobs for part in blob.images)
            raw = r.raw_base64_chars
            rows.append([what, "raw base64", size, raw, "1.00"])
            # zlib of the same decoded texts (a --compress zlib build of the moe sm_90 kernels is
            # over the payload limit, and build refuses to write it)
            decoded = [decompress(b.compress, base64.b64decode(b.text)) for b in r.blobs]
            for mode, chars in ((Compress.ZLIB, sum(embed(x, Compress.ZLIB).chars for x in decoded)),
                                (Compress.LZMA, sum(b.chars for b in r.blobs))):
                rows.append([what, f"{mode}+base64" + (" (default)" if mode is Compress.LZMA else ""), size,
                             chars, f"{chars / raw:.2f}"])
            rows.append([what, "whole default build: payload estimate", r.size, r.payload.chars,
                         f"of {r.payload.limit:,}"])
    print_table("Embedded code object cost (characters)",
                ["build", "mode", "bytes", "chars", "ratio to raw base64"], rows, args.json)


if __name__ == "__main__":
    main()
