"""The instruction mix of an AMD code object's kernels, as LLVM's disassembler lists them (how:
docs/readers.md, "The instruction mix"). Without an llvm-objdump new enough for the object's
processor, the mix is unknown (``None``), never zero."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from submitgen.errors import SubmitgenError
from submitgen.files import private_dir
from submitgen.readers import elf
from submitgen.system import run_tool

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

# greedy to the line's last "//" (objdump's address comment ends the line): 40% faster than a lazy
# scan for the first one, the same matches over the corpus's listings
_INSTRUCTION = re.compile(r"^[\t ]+([^\s./][^\s/]*)[^\n]*//\s*([0-9a-fA-F]+):", re.MULTILINE)
_ANY_INSTRUCTION = re.compile(r"^\t[a-z]", re.MULTILINE)
_PADDING = frozenset({"s_nop", "s_code_end"})
_VERSION = re.compile(r"LLVM version (\d+)\.(\d+)")


@dataclass(frozen=True)
class InstructionMix:
    """What one kernel's code holds, counted over its code range in the object's disassembly."""

    total: int
    categories: tuple[tuple[str, int], ...]  # (label, count) for every label of CATEGORIES, then "other"
    matrix_ops: tuple[tuple[str, int], ...]  # (v_mfma... mnemonic, count), most frequent first

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
    return Disassembler(path)


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


def parse_listing(text: str) -> tuple[tuple[int, str], ...]:
    """(address, mnemonic) of every instruction of ``llvm-objdump -d --no-show-raw-insn`` output,
    in address order. Symbol and label headers are not boundaries (a kernel's code runs on past its
    local labels; ``mix_of`` cuts the ranges), and llvm-objdump's ``...`` (a run of zero bytes it
    skipped) is no instruction. The address is the one objdump prints in each line's comment; the
    listing is read by one regular expression (a corpus object's listing is ~400 KB)."""
    found = _INSTRUCTION.findall(text)
    if not found and _ANY_INSTRUCTION.search(text):
        raise SubmitgenError("disassembly lines without an address comment: expected '// ADDRESS:' "
                             "after each")
    out = [(int(addr, 16), op) for op, addr in found]
    out.sort(key=lambda t: t[0])
    return tuple(out)


def mix_of(listing: Sequence[tuple[int, str]], start: int, end: int | None) -> InstructionMix:
    """The mix of the instructions at ``start`` <= address < ``end`` (``end`` None: the function
    symbol has no size and nothing follows it, so its trailing ``s_nop``/``s_code_end`` padding
    is dropped instead)."""
    ops = [op for a, op in listing if start <= a and (end is None or a < end)]
    if end is None:
        while ops and ops[-1] in _PADDING:
            ops.pop()
    return _mix(Counter(ops))


def code_ranges(image: bytes, label: str = "<bytes>") -> dict[str, tuple[int, int | None]]:
    """Each function symbol's code range [start, end): ``st_size`` when it has one, else up to the
    next function symbol of its section, else None (to the section's end, padding dropped)."""
    img = elf.ElfImage(image, label)
    funcs = [s for s in img.symbols((".symtab", ".dynsym")).values() if s.type == "STT_FUNC"]
    starts = sorted({(s.shndx, s.value) for s in funcs}, key=lambda t: (str(t[0]), t[1]))
    out: dict[str, tuple[int, int | None]] = {}
    for s in funcs:
        if s.size:
            out[s.name] = (s.value, s.value + s.size)
            continue
        later = [v for sec, v in starts if sec == s.shndx and v > s.value]
        out[s.name] = (s.value, min(later) if later else None)
    return out


@dataclass(frozen=True)
class Job:
    """One object to disassemble: its bytes, its processor, and the kernels (function symbol names)
    whose mix is wanted."""

    image: bytes
    processor: str
    symbols: tuple[str, ...]
    label: str = "<bytes>"


def instruction_mixes(jobs: Sequence[Job], tool: Disassembler) -> list[dict[str, InstructionMix]]:
    """For each job, in order: its object disassembled once for its processor, and the mix of each
    of its ``symbols`` over the symbol's whole code range. A disassembler failure raises a
    SubmitgenError naming the tool and its message."""
    out = []
    for job in jobs:
        with private_dir("disasm") as d:
            obj, listing = Path(d) / "object.co", Path(d) / "listing.txt"
            obj.write_bytes(job.image)
            # the listing goes through a file: through a pipe, a large one cost several times the system time
            r = run_tool([tool.path, "-d", f"--mcpu={job.processor}", "--no-show-raw-insn", str(obj)],
                         timeout=TIMEOUT_S, what=f"disassembling with {tool.path}", stdout_to=listing)
            text = listing.read_bytes().decode("utf-8", errors="replace")
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["no message"])[-1]
            raise SubmitgenError(f"{tool.path} could not disassemble the {job.processor} object: {why}")
        ranges, parsed = code_ranges(job.image, job.label), parse_listing(text)
        out.append({name: mix_of(parsed, *ranges[name]) for name in job.symbols if name in ranges})
    return out


def _mix(mnemonics: Counter[str]) -> InstructionMix:
    cats: dict[str, int] = {}
    matrix = []
    for op, n in mnemonics.items():
        c = _category(op)
        cats[c] = cats.get(c, 0) + n
        if c == "matrix":
            matrix.append((op, n))
    matrix.sort(key=lambda t: (-t[1], t[0]))
    labels = [label for label, _ in CATEGORIES] + ["other"]
    return InstructionMix(sum(mnemonics.values()), tuple((lb, cats.get(lb, 0)) for lb in labels),
                          tuple(matrix))
