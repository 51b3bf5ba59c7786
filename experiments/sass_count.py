"""Compile one Triton kernel for sm_90 on this host and count its SASS (no GPU needed).

    python experiments/sass_count.py FILE KERNEL 'SIG_JSON' 'CONSTEXPRS_JSON' [--warps 4] [--stages 3]
        [--dump DIR] [--opt maxnreg=96]

SIG_JSON is the signature as launch.py's TRITON entries spell it (a ":16" suffix: divisible by 16),
without the constexprs, e.g. for the MLA decode:
    '{"q_ptr":"*bf16:16","kv_ptr":"*fp8e4nv:16","kv_scale_ptr":"*fp32:16","po_ptr":"*fp32:16",
      "plse_ptr":"*fp32:16","out_ptr":"*bf16:16","kv_len":"i32","split_len":"i32:16","sm_scale":"fp32"}'
    '{"BN":64}' --stages 3

Prints the opcode histogram of the whole kernel and of its longest loop body (the instructions
between a backward branch's target and the branch), and with --dump writes the TTGIR, PTX and
SASS there. A one-off tool: it ranks designs by their instruction mix before any GPU time.
"""
import argparse
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("kernel")
ap.add_argument("sig")
ap.add_argument("constexprs")
ap.add_argument("--warps", type=int, default=4)
ap.add_argument("--stages", type=int, default=3)
ap.add_argument("--dump")
ap.add_argument("--opt", action="append", default=[], metavar="KEY=INT",
                help="a backend option, e.g. maxnreg=96")
a = ap.parse_args()
spec = importlib.util.spec_from_file_location("k", a.file)
mod = importlib.util.module_from_spec(spec)
sys.modules["k"] = mod
spec.loader.exec_module(mod)
fn = getattr(mod, a.kernel)
sig = json.loads(a.sig)
cx = json.loads(a.constexprs)
for k in cx:
    sig[k] = "constexpr"
attrs = {}
names = list(sig)
for i, n in enumerate(names):
    if isinstance(sig[n], str) and sig[n].endswith(":16"):
        sig[n] = sig[n][:-3]
        attrs[(i,)] = [["tt.divisibility", 16]]
src = ASTSource(fn=fn, signature=sig, constexprs=cx, attrs=attrs)
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())
opts = {"num_warps": a.warps, "num_stages": a.stages}
for item in a.opt:
    key, _, value = item.partition("=")
    opts[key] = int(value)
c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
    f.write(c.asm["cubin"])
    f.flush()
    sass = subprocess.run([str(bin_dir / "nvdisasm"), "-c", f.name], capture_output=True, text=True).stdout
    usage = subprocess.run([str(bin_dir / "cuobjdump"), "-res-usage", f.name], capture_output=True,
                           text=True).stdout
regs = re.search(r"REG:(\d+)", usage)


def op(text: str) -> str:
    """The opcode of one SASS instruction, its predicate dropped."""
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


ins = []  # (address, instruction text)
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
loops = []  # (first, last address) of every backward branch's body
for addr, t in ins:
    bm = re.search(r"BRA\s+`\((\.L_x_\d+)\)", t)
    if bm and bm.group(1) in labels and labels[bm.group(1)] < addr:
        loops.append((labels[bm.group(1)], addr))
print(f"{a.kernel} {cx} {opts}: {len(ins)} instructions, "
      f"registers {regs.group(1) if regs else '?'}, shared {c.metadata.shared} B")
hist = collections.Counter(op(t) for _, t in ins)
print("kernel:", ", ".join(f"{k} {v}" for k, v in hist.most_common(25)))
if loops:
    lo, hi = max(loops, key=lambda p: p[1] - p[0])
    body = [t for ad, t in ins if lo <= ad <= hi]
    h = collections.Counter(op(t) for t in body)
    print(f"longest loop: {len(body)} instructions:", ", ".join(f"{k} {v}" for k, v in h.most_common(30)))
if a.dump:
    d = Path(a.dump)
    d.mkdir(parents=True, exist_ok=True)
    (d / "k.ttgir").write_text(c.asm["ttgir"])
    (d / "k.ptx").write_text(c.asm["ptx"])
    (d / "k.sass").write_text(sass)
