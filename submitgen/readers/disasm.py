"""The instruction mix of an AMD code object's kernels, as LLVM's disassembler lists them.

``inspect`` uses it to show whether a kernel runs on the matrix cores (``v_mfma*``, ``v_smfmac*``)
and whether it touches scratch, without an AMD GPU. gfx9 code (gfx90a, gfx942, gfx950) is
counted by ``gfx9_decode`` without running the disassembler; the objects it is not sure of, and
every other processor's, by llvm-objdump, which must know the object's processor: gfx950 needs
LLVM 20 or newer (Debian's ``llvm-22`` package, or ROCm's ``llvm/bin/llvm-objdump``). Without
one, the decoder's mixes are still given (``decoded_mixes``), and the mix of every other object is
unknown (``None``), never zero.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
BATCH = 64  # at most objects per disassembler process (a corpus object's listing is ~440 KB) ...
BATCH_BYTES = 4 << 20  # ... and bytes of images (a listing is ~11x its image)

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
_PADDING_BYTES = frozenset(op.encode() for op in _PADDING)
# fast_mixes: a mnemonic at a line's start (what _INSTRUCTION takes from a line whose mnemonic is
# of these characters), and an address comment
_OP = re.compile(rb"\n\t([a-z0-9_]+)(?=[\s/])")
_ADDRESS = re.compile(rb"//\s*([0-9a-fA-F]+):")
_VERSION = re.compile(r"LLVM version (\d+)\.(\d+)")


@dataclass(frozen=True)
class InstructionMix:
    """What one kernel's code holds, counted over its code range in the object's disassembly."""

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


@lru_cache(maxsize=4096)  # a few hundred mnemonics, met millions of times over a corpus
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
    addresses = [a for a, _ in listing]
    lo = bisect.bisect_left(addresses, start)
    hi = bisect.bisect_left(addresses, end) if end is not None else len(listing)
    ops = [op for _, op in listing[lo:hi]]
    if end is None:
        while ops and ops[-1] in _PADDING:
            ops.pop()
    return _mix(Counter(ops))


def code_ranges(image: bytes, label: str = "<bytes>") -> dict[str, tuple[int, int | None]]:
    """Each function symbol's code range [start, end): ``st_size`` when it has one, else up to the
    next function symbol of its section, else None (to the section's end, padding dropped)."""
    img = elf.image_of(image, label)
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


def instruction_mix(image: bytes, processor: str, tool: Disassembler, symbols: Sequence[str] | None = None,
                    label: str = "<bytes>") -> dict[str, InstructionMix]:
    """Disassemble ``image`` (an AMD code object) once for ``processor``; the mix of each function
    symbol in ``symbols`` (all of them when None) over its whole code range. A disassembler failure
    raises a SubmitgenError naming the tool and its message."""
    with private_dir("disasm") as d:
        obj = Path(d) / "object.co"
        obj.write_bytes(image)
        r, listing = _disassemble(tool, processor, [str(obj)], Path(d))
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise SubmitgenError(f"{tool.path} could not disassemble the {processor} object: {why}")
    ranges = code_ranges(image, label)
    return _mixes_of(listing, ranges, list(ranges) if symbols is None else symbols)


def instruction_mixes(jobs: Sequence[Job], tool: Disassembler, workers: int | None = None,
                      decode: bool = True) -> list[dict[str, InstructionMix]]:
    """``instruction_mix`` of every job, each object read once: with ``decode``, by
    ``gfx9_decode`` (the same counts, without a disassembler process) where it is sure of every
    kernel; the other objects by the disassembler: objects of one processor go to one
    disassembler process a batch at a time (``batches``: a process per object cost twice the
    CPU), ``workers`` (default: the CPUs this process may use) processes at a time, each listing
    counted while the next ones are made; results in the order of ``jobs``. A batch the
    disassembler fails on is run again one object at a time, so that the error names the
    object."""
    if not jobs:
        return []
    out: list[dict[str, InstructionMix]] = [{} for _ in jobs]
    left = list(range(len(jobs)))
    if decode:
        left = []
        for i, mix in enumerate(decoded_mixes(jobs)):
            if mix is None:
                left.append(i)
            else:
                out[i] = mix
    if not left:
        return out
    n = workers or _cpus()
    rest = [jobs[i] for i in left]
    chunks = [[left[k] for k in batch] for batch in batches(rest)]

    def run(batch: list[int]) -> None:
        for i, mix in zip(batch, _batch([jobs[i] for i in batch], tool)):
            out[i] = mix

    if n == 1 or len(chunks) == 1:
        for batch in chunks:
            run(batch)
    else:
        with ThreadPoolExecutor(max_workers=min(n, len(chunks))) as pool:  # each thread waits on a process
            list(pool.map(run, chunks))
    return out


def decoded_mixes(jobs: Sequence[Job]) -> list[dict[str, InstructionMix] | None]:
    """The mix of each job's symbols that have a code range, by ``gfx9_decode``; None for a job
    it is not sure of (llvm-objdump then lists the object)."""
    from submitgen.readers.amd import gfx9_decode  # lazy: numpy, 0.1 s that --no-disasm does not pay

    items = []
    for j in jobs:
        ranges = code_ranges(j.image, j.label)
        items.append(gfx9_decode.Item(j.image, j.processor, {s: ranges[s] for s in j.symbols if s in ranges},
                                      j.label))
    return [None if c is None else {name: _mix(m) for name, m in c.items()}
            for c in gfx9_decode.decode_many(items)]


def batches(jobs: Sequence[Job]) -> list[list[int]]:
    """The indices of ``jobs`` in disassembler runs: objects of one processor together, in order,
    at most BATCH objects and BATCH_BYTES of images a run (one object larger than that alone)."""
    by_processor: dict[str, list[int]] = {}
    for i, j in enumerate(jobs):
        by_processor.setdefault(j.processor, []).append(i)
    out: list[list[int]] = []
    for indices in by_processor.values():
        current: list[int] = []
        size = 0
        for i in indices:
            if current and (len(current) == BATCH or size + len(jobs[i].image) > BATCH_BYTES):
                out.append(current)
                current, size = [], 0
            current.append(i)
            size += len(jobs[i].image)
        out.append(current)
    return out


def _disassemble(tool: Disassembler, processor: str, paths: Sequence[str],
                 folder: Path) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """One disassembler process over ``paths``; its listing goes through a file in ``folder`` (a
    batch's listing is tens of MB: through a pipe it cost several times the system time)."""
    listing = folder / "listing.txt"
    r = run_tool([tool.path, "-d", f"--mcpu={processor}", "--no-show-raw-insn", *paths],
                 timeout=TIMEOUT_S, what=f"disassembling with {tool.path}", stdout_to=listing)
    return r, listing.read_bytes()


def _batch(jobs: Sequence[Job], tool: Disassembler) -> list[dict[str, InstructionMix]]:
    """One disassembler process over several objects of one processor."""
    if len(jobs) == 1:
        j = jobs[0]
        return [instruction_mix(j.image, j.processor, tool, j.symbols, j.label)]
    processor = jobs[0].processor
    with private_dir("disasm") as d:
        paths = [str(Path(d) / f"{i}.co") for i in range(len(jobs))]
        for path, j in zip(paths, jobs):
            Path(path).write_bytes(j.image)
        r, listing = _disassemble(tool, processor, paths, Path(d))
    if r.returncode != 0:
        return [instruction_mix(j.image, j.processor, tool, j.symbols, j.label) for j in jobs]
    starts: list[int] = []
    for path in paths:  # each object's listing after the last one's
        starts.append(listing.find(f"{path}:\tfile format".encode(), starts[-1] + 1 if starts else 0))
    if -1 in starts:
        return [instruction_mix(j.image, j.processor, tool, j.symbols, j.label) for j in jobs]
    return [_mixes_of(listing[starts[k]:starts[k + 1] if k + 1 < len(jobs) else None],
                      code_ranges(j.image, j.label), j.symbols) for k, j in enumerate(jobs)]


def _mixes_of(listing: bytes, ranges: dict[str, tuple[int, int | None]],
              symbols: Sequence[str]) -> dict[str, InstructionMix]:
    """The mix of each of ``symbols`` that has a code range, from one object's listing:
    ``fast_mixes`` when its checks hold, else ``parse_listing`` and ``mix_of`` (the same
    counts)."""
    wanted = [s for s in symbols if s in ranges]
    fast = fast_mixes(listing, {s: ranges[s] for s in wanted})
    if fast is not None:
        return fast
    parsed = parse_listing(listing.decode("utf-8", errors="replace"))
    return {name: mix_of(parsed, *ranges[name]) for name in wanted}


def fast_mixes(listing: bytes,
               ranges: Mapping[str, tuple[int, int | None]]) -> dict[str, InstructionMix] | None:
    """``mix_of(parse_listing(listing), *range)`` for each range, without reading every line's
    address: a listing of one section lists its instructions in address order, so a range is the
    text from the line of its first instruction at or after its start (found by the address
    comment's exact text, ``// 000000001800:``) to that of its end, and only the mnemonics in it
    are read (the whole parse cost ~8x more than the disassembler's own time on the aiter corpus).
    None (parse it all) when the listing has another than one section, or a range holds another
    number of mnemonics than of ``//`` address comments (a line the fast read would count
    otherwise than ``parse_listing``)."""
    if listing.count(b"Disassembly of section") != 1:
        return None
    found: dict[str, InstructionMix] = {}
    lo = 0
    for name, (start, end) in sorted(ranges.items(), key=lambda t: t[1][0]):
        lo = _line_before(listing, start, lo)  # ranges in order of start: each search goes on from the last
        hi = len(listing) if end is None else _line_before(listing, end, lo)
        ops = _OP.findall(listing, lo, hi)
        if len(ops) != listing.count(b"//", lo, hi):
            return None
        if end is None:
            while ops and ops[-1] in _PADDING_BYTES:
                ops.pop()
        found[name] = _mix(Counter({op.decode(): n for op, n in Counter(ops).items()}))
    return {name: found[name] for name in ranges}


def _line_before(listing: bytes, address: int, lo: int = 0) -> int:
    """The offset of the newline before the line of the first instruction at ``address`` or
    after (from ``lo``), or the listing's length when there is none."""
    at = listing.find(b"// %012X:" % address, lo)
    if at < 0:
        for m in _ADDRESS.finditer(listing, lo):
            if int(m.group(1), 16) >= address:
                at = m.start()
                break
        else:
            return len(listing)
    return max(lo, listing.rfind(b"\n", lo, at))


def _cpus() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else os.cpu_count() or 1)


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
