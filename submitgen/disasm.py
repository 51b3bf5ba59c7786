"""The instruction mix of an AMD code object's kernels, from LLVM's disassembler.

``inspect`` uses it to show whether a kernel runs on the matrix cores (``v_mfma*``, ``v_smfmac*``)
and whether it touches scratch, without an AMD GPU. The disassembler must know the object's
processor: gfx950 needs LLVM 20 or newer (Debian's ``llvm-22`` package, or ROCm's
``llvm/bin/llvm-objdump``). Without one, the mix is unknown (``None``), never zero.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import SubmitgenError
from .files import private_dir
from .toolchain.process import run_tool

MIN_LLVM_MAJOR = 20  # the first LLVM with gfx950
OBJDUMP_ENV = "SUBMITGEN_OBJDUMP"
TIMEOUT_S = 60.0

# (label, mnemonic prefixes) in the order the text shows them; the first match wins.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("matrix", ("v_mfma", "v_smfmac")),
    ("scratch", ("scratch_",)),
    ("global", ("global_", "buffer_", "flat_")),
    ("lds", ("ds_",)),
    ("scalar", ("s_",)),
    ("vector", ("v_",)),
)

_SYMBOL = re.compile(r"^[0-9a-fA-F]+ <(.+)>:$")
_VERSION = re.compile(r"LLVM version (\d+)\.(\d+)")


@dataclass(frozen=True)
class InstructionMix:
    """What one kernel's code holds, counted from the disassembly of its symbol."""

    total: int
    categories: tuple[tuple[str, int], ...]  # (label, count) for every label of CATEGORIES, then "other"
    matrix_ops: tuple[tuple[str, int], ...]  # (v_mfma... mnemonic, count), most frequent first

    def count(self, label: str) -> int:
        return dict(self.categories).get(label, 0)

    def to_json(self) -> dict[str, object]:
        return {"instructions": self.total, "categories": dict(self.categories),
                "matrix_ops": dict(self.matrix_ops)}

    def text(self) -> str:
        cats = ", ".join(f"{label} {n:,}" for label, n in self.categories if n)
        ops = "; ".join(f"{op} x{n}" for op, n in self.matrix_ops) or "no matrix instructions"
        return f"instructions {self.total:,} ({cats}); {ops}"


@dataclass(frozen=True)
class Disassembler:
    path: str
    llvm_major: int


def _category(mnemonic: str) -> str:
    for label, prefixes in CATEGORIES:
        if mnemonic.startswith(prefixes):
            return label
    return "other"


@lru_cache(maxsize=8)
def _probe(path: str) -> Disassembler | None:
    try:
        r = run_tool([path, "--version"], timeout=TIMEOUT_S, what=f"{path} --version")
    except SubmitgenError:
        return None
    m = _VERSION.search(r.stdout)
    if r.returncode != 0 or not m or int(m.group(1)) < MIN_LLVM_MAJOR:
        return None
    return Disassembler(path, int(m.group(1)))


def find_disassembler() -> Disassembler | None:
    """``$SUBMITGEN_OBJDUMP``, else ``llvm-objdump-2N`` on PATH (newest first), else ROCm's, else a
    plain ``llvm-objdump`` on PATH; only an LLVM new enough for gfx950 counts."""
    explicit = os.environ.get(OBJDUMP_ENV)
    if explicit:
        return _probe(explicit)
    names = [f"llvm-objdump-{v}" for v in range(30, MIN_LLVM_MAJOR - 1, -1)]
    rocm = Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "llvm" / "bin" / "llvm-objdump"
    candidates = [shutil.which(n) for n in names] + [str(rocm) if rocm.is_file() else None,
                                                    shutil.which("llvm-objdump")]
    for c in candidates:
        found = _probe(c) if c else None
        if found:
            return found
    return None


def parse_listing(text: str) -> dict[str, InstructionMix]:
    """Per-symbol instruction mix of ``llvm-objdump -d --no-show-raw-insn`` output."""
    counts: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in text.splitlines():
        m = _SYMBOL.match(line)
        if m:
            current = counts.setdefault(m.group(1), Counter())
            continue
        if current is None or not line.startswith(("\t", " ")):
            continue
        body = line.split("//", 1)[0].strip()
        if body:
            current[body.split(None, 1)[0]] += 1
    return {sym: _mix(c) for sym, c in counts.items()}


def _mix(mnemonics: Counter[str]) -> InstructionMix:
    cats: Counter[str] = Counter()
    for op, n in mnemonics.items():
        cats[_category(op)] += n
    labels = [label for label, _ in CATEGORIES] + ["other"]
    matrix = sorted(((op, n) for op, n in mnemonics.items() if _category(op) == "matrix"),
                    key=lambda t: (-t[1], t[0]))
    return InstructionMix(sum(mnemonics.values()), tuple((lb, cats[lb]) for lb in labels), tuple(matrix))


def instruction_mix(image: bytes, processor: str, tool: Disassembler) -> dict[str, InstructionMix]:
    """Disassemble ``image`` (an AMD code object) for ``processor``; the mix per function symbol.
    A disassembler failure raises a SubmitgenError naming the tool and its message."""
    with private_dir("disasm") as d:
        obj = Path(d) / "object.co"
        obj.write_bytes(image)
        r = run_tool([tool.path, "-d", f"--mcpu={processor}", "--no-show-raw-insn", str(obj)],
                     timeout=TIMEOUT_S, what=f"disassembling with {tool.path}")
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise SubmitgenError(f"{tool.path} could not disassemble the {processor} object: {why}")
    return parse_listing(r.stdout)
