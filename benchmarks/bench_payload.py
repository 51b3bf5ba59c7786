"""What the embedded code objects cost in characters, per embedding mode.

For the default kernels of both problems (compiled for gfx950 with the discovered toolchain):
raw base64 (what hand-written submissions do), zlib+base64 and lzma+base64 (submitgen's
`--compress` choices; lzma is the default), each with the ratio to raw base64, and the whole
file's estimated dispatch payload for the default build.

usage: python benchmarks/bench_payload.py [--json]
Stripping (.symtab/.strtab) is not offered: whether ROCm's loader accepts a code object without
.symtab is unproven (reference/toolchain.md), so it is not measured here."""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from _common import print_table

from submitgen.options import Compress
from submitgen.pipeline import BuildOptions, build
from submitgen.problems import PROBLEMS
from submitgen.project.load import load_project
from submitgen.render.embed import embed
from submitgen.toolchain import compile_sources


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for problem in PROBLEMS.values():
        project = load_project(problem.kernel_project)
        image = compile_sources(project.sources, arch="gfx950").code_object
        raw = len(base64.b64encode(image))
        rows.append([problem.name, "raw base64", len(image), raw, "1.00"])
        for mode in (Compress.ZLIB, Compress.LZMA):
            chars = embed(image, mode).chars
            rows.append([problem.name, f"{mode}+base64" + (" (default)" if mode == "lzma" else ""),
                         len(image), chars, f"{chars / raw:.2f}"])
        with tempfile.TemporaryDirectory() as d:
            r = build(BuildOptions(problem=problem.name, output=Path(d) / "s.py"))
        rows.append([problem.name, "whole default build: payload estimate", r.size, r.payload.chars,
                     f"of {r.payload.limit}"])
    print_table("Embedded code object cost (characters)",
                ["problem", "mode", "bytes", "chars", "ratio to raw base64"], rows, args.json)


if __name__ == "__main__":
    main()
