"""Compile one launch of a Triton kernel project for sm_90 on this host and count its SASS (no GPU).

    PYTHONPATH=. python experiments/sass_count.py PROJECT_DIR LAUNCH [--set NAME=INT ...]
        [--warps N] [--stages N] [--opt KEY=INT ...] [--dump DIR]

    e.g. experiments/sass_count.py kernels/mixed_mla mla_decode
         experiments/sass_count.py kernels/moe_mxfp4 down_s --opt maxnreg=128

The launch is the project's TRITON entry as the sm_90 build resolves it (its "arch" overrides
applied), compiled by the build's own compiler (submitgen.toolchain.triton, no cache); --set
changes a constexpr, --warps / --stages the entry's, --opt adds a backend option. Prints the
kernel's registers (cuobjdump), its shared memory and the opcode histogram of the whole kernel and
of its longest loop (the instructions between a backward branch's target and the branch;
nvdisasm from Triton's wheel); --dump writes the SASS there (Triton's own TRITON_KERNEL_DUMP=1
TRITON_DUMP_DIR=DIR dump the TTGIR and PTX, the compile takes TRITON_* from the environment). A
one-off tool: it ranks designs by their instruction mix before any GPU time.
"""

import argparse
import collections
import dataclasses
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from submitgen.project.load import load_project  # noqa: E402
from submitgen.toolchain.triton import compile_triton  # noqa: E402

ARCH = "sm_90"


def _pairs(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key] = int(value)
    return out


def _op(text: str) -> str:
    """The opcode of one SASS instruction, its predicate dropped."""
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def _parse(sass: str) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """(address, instruction) of every instruction, and (first, last address) of every loop."""
    ins = []
    labels = {}  # .L_x_N -> the address of the instruction after it
    pending = []
    for line in sass.splitlines():
        lm = re.match(r"^(\.L_x_\d+):", line.strip())
        if lm:
            pending.append(lm.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            addr = int(m.group(1), 16)
            ins.append((addr, m.group(2).strip()))
            for name in pending:
                labels[name] = addr
            pending = []
    loops = []
    for addr, t in ins:
        bm = re.search(r"BRA\s+`\((\.L_x_\d+)\)", t)
        if bm and bm.group(1) in labels and labels[bm.group(1)] < addr:
            loops.append((labels[bm.group(1)], addr))
    return ins, loops


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", type=Path)
    ap.add_argument("launch")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=INT", help="a constexpr's value")
    ap.add_argument("--warps", type=int)
    ap.add_argument("--stages", type=int)
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=INT",
                    help="a backend option, e.g. maxnreg=96")
    ap.add_argument("--dump", type=Path)
    a = ap.parse_args()
    specs = {s.name: s for s in load_project(a.project, ARCH).triton}
    if a.launch not in specs:
        print(f"{a.project}: no TRITON entry {a.launch!r} (it has {', '.join(specs)})", file=sys.stderr)
        return 2
    spec = specs[a.launch]
    spec = dataclasses.replace(
        spec,
        constexprs=tuple({**dict(spec.constexprs), **_pairs(a.set)}.items()),
        num_warps=a.warps or spec.num_warps,
        num_stages=a.stages or spec.num_stages,
        options=tuple({**dict(spec.options), **_pairs(a.opt)}.items()),
    )
    art = compile_triton(spec, ARCH, cache=False)
    bin_dir = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(art.image)
        f.flush()
        sass = subprocess.run([str(bin_dir / "nvdisasm"), "-c", f.name], capture_output=True,
                              text=True, check=True).stdout
        usage = subprocess.run([str(bin_dir / "cuobjdump"), "-res-usage", f.name], capture_output=True,
                               text=True, check=True).stdout
    regs = re.search(r"REG:(\d+)", usage)
    ins, loops = _parse(sass)
    print(f"{a.launch} ({spec.kernel}) {dict(spec.constexprs)} warps {spec.num_warps} stages "
          f"{spec.num_stages} options {dict(spec.options)}: {len(ins)} instructions, registers "
          f"{regs.group(1) if regs else '?'}, shared {art.shared} B")
    hist = collections.Counter(_op(t) for _, t in ins)
    print("kernel:", ", ".join(f"{k} {v}" for k, v in hist.most_common(25)))
    if loops:
        lo, hi = max(loops, key=lambda p: p[1] - p[0])
        body = [t for ad, t in ins if lo <= ad <= hi]
        h = collections.Counter(_op(t) for t in body)
        print(f"longest loop: {len(body)} instructions:", ", ".join(f"{k} {v}" for k, v in h.most_common(30)))
    if a.dump:
        a.dump.mkdir(parents=True, exist_ok=True)
        (a.dump / f"{a.launch}.sass").write_text(sass)
    return 0


if __name__ == "__main__":
    sys.exit(main())
