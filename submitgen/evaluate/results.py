"""What ``submitgen test`` and ``bench`` report: the shapes run, the backend, per-shape results."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar


def format_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def modified(name: str) -> str:
    return f"input '{name}' was modified by custom_kernel"


@dataclass(frozen=True)
class Shape:
    """One selected shape: where it comes from and the spec that is run (seed already combined)."""

    kind: str  # "test", "benchmark" or "custom"
    index: int  # index in its list
    spec: tuple[tuple[str, Any], ...]
    label: str

    @property
    def spec_dict(self) -> dict[str, Any]:
        return dict(self.spec)


_BACKEND_TEXT = {
    # SUBMITGEN_BACKEND as a submission reports it -> what ran
    "hip": "backend: hip - ran the kernel {where}",
    "cuda": "backend: cuda - ran the CUDA build of the kernel {where}",
    "fallback": "backend: fallback - ran the torch fallback, not the kernel, {where}",
    "triton-interpreter": ("backend: triton-interpreter - ran the project's own plan and Triton kernels "
                           "under Triton's interpreter (TRITON_INTERPRET=1) on the CPU"),
    "dry-run": ("backend: dry-run - kernels were 'launched' against the stand-in HIP library "
                "(SUBMITGEN_HIP_LIBRARY): no kernel ran, outputs are not meaningful"),
}


EXIT_CANNOT_RUN = 3
"""``submitgen test``/``bench``'s exit code when the file cannot run on this machine at all: it
needs a module that is not installed here (``cannot run here: needs aiter``)."""

KERNEL_RAN, KERNEL_FALLBACK, KERNEL_DRY_RUN, KERNEL_NO_GPU = "ran", "fallback", "dry-run", "no-gpu"
KERNEL_INTERPRETED = "interpreted"


@dataclass(frozen=True)
class Execution:
    """What ran: the file's ``SUBMITGEN_BACKEND`` (None for hand-written files), whether this
    machine has a GPU, the device, and whether a stand-in GPU library is named."""

    value: str | None
    gpu: bool
    device: str
    output: tuple[str, ...] = ()  # first lines the file printed (a fallback notice, say)
    stand_in: bool = False
    compile_note: str | None = None
    interpreted: bool = False  # submitgen wrote the file: test --interpret's driver


    @property
    def kernel(self) -> str:
        """Whether the kernel ran: ``ran``, ``fallback``, ``dry-run``, ``no-gpu`` or ``interpreted``
        (docs/json.md)."""
        if self.value == "triton-interpreter" and self.interpreted:
            return KERNEL_INTERPRETED
        if self.value == "dry-run" and self.stand_in:
            return KERNEL_DRY_RUN
        if self.value == "fallback":
            return KERNEL_FALLBACK
        return KERNEL_RAN if self.gpu else KERNEL_NO_GPU

    def describe(self) -> str:
        where = f"on {self.device}" if self.gpu else "on this machine without a GPU (CPU only)"
        if self.value in _BACKEND_TEXT and (self.value != "triton-interpreter" or self.interpreted):
            return _BACKEND_TEXT[self.value].format(where=where)
        if self.value is not None:
            return f"backend: {self.value!r} (as the file reports it), {where}"
        if self.gpu:
            return f"backend: the file's own code, {where}"
        return (f"backend: the file's own code, {where}: it ran whatever path the file "
                "takes without a GPU, not a GPU kernel")


@dataclass(frozen=True)
class Figures:
    """What the problem's check measured on one output (the errors are None where not finite)."""

    mismatches: int
    total: int
    mismatch_ratio: float
    max_abs_err: float | None
    max_rel_err: float | None
    rel_l2_err: float | None

    @classmethod
    def from_fields(cls, f: Mapping[str, Any]) -> Figures | None:
        """From the check's fields (``check.check_fields``); None without a judged output."""
        if not isinstance(f.get("mismatches"), int) or not isinstance(f.get("total"), int):
            return None
        return cls(f["mismatches"], f["total"], float(f.get("mismatch_ratio") or 0.0), f.get("max_abs_err"),
                   f.get("max_rel_err"), f.get("rel_l2_err"))


@dataclass(frozen=True)
class ShapeResult:
    shape: Shape
    passed: bool
    figures: Figures | None = None
    message: str = ""
    mutated: tuple[str, ...] = ()
    error: str | None = None
    seconds: float | None = None
    missing: str | None = None  # the module custom_kernel or the import needed (ModuleNotFoundError)
    checked: bool = True  # False: a dry run, the output's values were not compared

    def summary(self) -> str:
        """One line: verdict and figures, or why it failed."""
        verdict = "pass" if self.passed else "FAIL"
        if self.error:
            return f"{verdict}: {self.error.splitlines()[-1] if self.error else ''}"
        if not self.checked:
            parts = ["launched" if self.passed else "FAIL", self.message]
            parts += [modified(m) for m in self.mutated]
            return ", ".join(parts)
        parts = [verdict]
        g = self.figures
        if g is not None:
            if g.max_abs_err is not None:
                parts.append(f"max abs err {g.max_abs_err:.4g}")
            parts.append(f"mismatches {g.mismatches:,}/{g.total:,} ({g.mismatch_ratio:.3%})")
            if g.rel_l2_err is not None:
                parts.append(f"rel L2 err {g.rel_l2_err:.3g}")
        parts += [modified(m) for m in self.mutated]
        if self.seconds is not None:
            parts.append(f"{self.seconds:.2f} s")
        return ", ".join(parts)


@dataclass(frozen=True)
class Timing:
    """One shape's timed calls: all of the figures, or none of them (no Timing)."""

    runs: int
    mean_ns: float
    std_ns: float
    best_ns: float
    worst_ns: float

    @classmethod
    def from_event(cls, ev: Mapping[str, Any]) -> Timing | None:
        """The figures of a worker's ``bench`` event; None where it has none."""
        if not ev.get("runs"):
            return None
        return cls(ev["runs"], *(float(ev[k]) for k in ("mean_ns", "std_ns", "best_ns", "worst_ns")))

    @property
    def err_ns(self) -> float:
        """The standard error of the mean, as eval.py reports it (std / sqrt(runs))."""
        return self.std_ns / math.sqrt(self.runs)


@dataclass(frozen=True)
class Flush:
    """The cache flush a shape's timed calls used: MiB filled before each call, and the device's
    free and total MiB when the size asked for did not fit (None when it did)."""

    mib: int
    memory_mib: tuple[int, int] | None = None

    @classmethod
    def from_event(cls, ev: Mapping[str, Any]) -> Flush | None:
        """The flush of a worker's ``bench`` event; None where it was not timed on a GPU."""
        mib, memory = ev.get("flush_mib"), ev.get("memory_mib")
        return None if mib is None else cls(mib, None if memory is None else (memory[0], memory[1]))


def flush_line(requested_mib: int, flush: Flush) -> str:
    """What bench says (on stderr, and in --json's ``flush_note``) when the default flush was shrunk."""
    free, total = flush.memory_mib or (0, 0)
    return (f"bench: eval.py's {requested_mib:,} MiB cache flush does not fit in this GPU's memory "
            f"({free:,} MiB free of {total:,} MiB), so each timed call is flushed with {flush.mib:,} MiB "
            "instead: device times can differ from eval.py's on a GPU that holds its flush (--flush-mib N "
            "sets the size)")


@dataclass(frozen=True)
class BenchResult:
    shape: Shape
    timing: Timing | None = None
    correct: bool | None = None
    check_message: str = ""
    error: str | None = None
    missing: str | None = None
    skipped: str | None = None  # why timing was skipped ("fallback-on-cpu")
    flush: Flush | None = None  # the cache flush of its timed calls (None: not timed on a GPU)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.correct)

    def summary(self) -> str:
        if self.error:
            return f"FAIL: {self.error.splitlines()[-1]}"
        t = self.timing
        text = (f"mean {format_ns(t.mean_ns)}, best {format_ns(t.best_ns)}, worst {format_ns(t.worst_ns)} "
                f"over {t.runs} runs" if t else
                TIMING_SKIPPED if self.skipped == "fallback-on-cpu" else "no timings")
        if not self.correct:
            text += f" - WRONG OUTPUT: {self.check_message}"
        return text


TIMING_SKIPPED = "timing skipped: the pure-torch fallback on a CPU (--force times it)"

R = TypeVar("R", "ShapeResult", "BenchResult")


@dataclass(frozen=True)
class _Report(Generic[R]):
    """What both reports start with: the file, its problem, the backend it ran and one result a shape;
    it passed when every shape did (and there was one)."""

    path: str
    problem: str
    backend: Execution
    results: tuple[R, ...]

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def cannot_run(self) -> str | None:
        """The module the file needs and this machine lacks, when every shape failed for want of
        the same one (the import, or each call of custom_kernel)."""
        missing = {r.missing for r in self.results}
        if not self.results or len(missing) != 1 or any(r.error is None for r in self.results):
            return None
        return next(iter(missing))

    @property
    def kernel_ran(self) -> bool:
        """The kernel ran: on a GPU, or under Triton's interpreter (test --interpret)."""
        return self.backend.kernel in (KERNEL_RAN, KERNEL_INTERPRETED)

    def exit_code(self, require_kernel: bool = False) -> int:
        """0 when every shape passed (and, with ``require_kernel``, the kernel ran), 1 on a
        failure, :data:`EXIT_CANNOT_RUN` when the file needs a module this machine lacks."""
        if self.cannot_run is not None:
            return EXIT_CANNOT_RUN
        return 0 if self.passed and (self.kernel_ran or not require_kernel) else 1


@dataclass(frozen=True)
class TestReport(_Report[ShapeResult]):
    lint_warnings: tuple[str, ...] = ()
    clones_inputs: bool = True  # whether the problem's evaluator clones the inputs


@dataclass(frozen=True)
class BenchReport(_Report[BenchResult]):
    timing: str  # "device" or "host"
    flush_mib: int
    lint_warnings: tuple[str, ...] = ()
    mode: str = "benchmark"  # or "leaderboard": every timed call on fresh inputs, each output checked
    stop: str = ""  # the stop rule, in words

    def mode_note(self) -> str:
        if self.mode == "leaderboard":
            return ("mode: leaderboard (as the ranked run: fresh inputs with seed += 13 for every timed "
                    "call, every output checked)")
        return "mode: benchmark (the first call's output checked, the timed calls reuse its inputs)"

    @property
    def flush_shrunk(self) -> Flush | None:
        """The smallest flush a shape used when it is less than ``flush_mib`` (the default did not
        fit), else None."""
        used = [r.flush for r in self.results if r.flush is not None and r.flush.mib < self.flush_mib]
        return min(used, key=lambda f: f.mib) if used else None

    def flush_note(self) -> str | None:
        shrunk = self.flush_shrunk
        return None if shrunk is None else flush_line(self.flush_mib, shrunk)

    def timing_note(self) -> str:
        shrunk = self.flush_shrunk
        if self.timing == "device" and shrunk is not None:
            return (f"timing: device time (GPU events around each call, a randn cache flush before each "
                    f"iteration as eval.py, but of {shrunk.mib:,} MiB: eval.py's {self.flush_mib:,} MiB "
                    "does not fit in this GPU's memory)")
        if self.timing == "device":
            return (f"timing: device time (GPU events around each call, {self.flush_mib} MiB randn "
                    "cache flush before each iteration, as eval.py)")
        return ("timing: host-only wall clock (no GPU here): not comparable with the leaderboard's "
                "device times")
