"""Each command's budget in CPU time and memory, enforced at run time on the commands that read
untrusted files and run no user code (`lint`, `inspect`, `diff`) and on the own process of
`compile` and `build` (the programs they start, and the plan's child, get the limits from before
the budget back: their bound is their time limit). `test` and `bench` get none (their process
regenerates the problem's inputs and runs its reference, in torch, on the GPU where there is one;
their bounds are the worker's time limits and the output they read back, docs/limits.md).
BENCHMARKS.md's budgets table quotes these figures
(tests/hostile/test_budgets.py checks that they agree).

The memory budget is ``RLIMIT_DATA`` (the process's heap and private writable mappings; not
``RLIMIT_AS``, which counts reserved address space) and the time budget ``RLIMIT_CPU`` (CPU
seconds this command may use, on top of what the process had used when it started), both as soft
limits, restored when the command ends. They are set only in a process that ``submitgen``'s
``main()`` owns (``own_process``), never in a caller that runs the CLI in-process. Past either,
the command stops with one ``Error:`` line naming the bound, its value and what was being read.

For tests only: ``SUBMITGEN_TEST_BUDGET_MB`` and ``SUBMITGEN_TEST_BUDGET_S`` replace every
command's memory (MB) or CPU (seconds) budget. A CPU budget of 0 means none beyond what the
process had used when the command started: the soft limit is those whole seconds, already passed
(at least 1 s, since Linux reads an ``RLIMIT_CPU`` of 0 as 1), so that a test of the bound does
not depend on how much of a second was left (``ceil`` would leave 0 to 1 s, which a warm build's
own 0.55 s of CPU fits in or not by chance)."""

from __future__ import annotations

import errno
import math
import os
import resource
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from submitgen.errors import BudgetError


@dataclass(frozen=True)
class Budget:
    cpu_seconds: int
    memory_mb: int


BUDGETS: dict[str, Budget] = {
    # the costliest source a 1 MB .py (the leaderboard's cap, the bound on what they read as
    # Python) can hold, 500,000 one-name lines, takes 0.9 GB and 11-15 s of CPU (a loaded machine)
    "lint": Budget(cpu_seconds=60, memory_mb=2048),
    "inspect": Budget(cpu_seconds=60, memory_mb=2048),
    "diff": Budget(cpu_seconds=60, memory_mb=2048),
    "compile": Budget(cpu_seconds=600, memory_mb=1024),
    # build mxfp4-mm, empty cache: 0.9 GB of data (torch's import, thread stacks, lint's parse
    # thread's 256 MiB), 7 s of CPU in its own process; compilers and the plan run in children
    "build": Budget(cpu_seconds=120, memory_mb=2048),
}

_owned = False
# The limits in force before the innermost enforced() block, which a child process gets back.
_outer: list[tuple[tuple[int, int], tuple[int, int]]] = []


def own_process() -> None:
    """Called by the CLI's ``main()``: this process is submitgen's, and its limits may be set."""
    global _owned
    _owned = True


def budget_of(command: str) -> Budget:
    b = BUDGETS[command]
    mb = os.environ.get("SUBMITGEN_TEST_BUDGET_MB")
    s = os.environ.get("SUBMITGEN_TEST_BUDGET_S")
    return Budget(cpu_seconds=int(s) if s else b.cpu_seconds, memory_mb=int(mb) if mb else b.memory_mb)


class _OverCpu(BaseException):
    """Raised by the SIGXCPU handler; a BaseException so that no reader's ``except`` takes it."""


def _on_xcpu(signum: int, frame: object) -> None:
    # the kernel repeats SIGXCPU every CPU second past the soft limit: a second one arriving while
    # the first unwinds (before the handler is restored) would escape as a traceback
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    raise _OverCpu


def _soft(limit: int, hard: int) -> int:
    return limit if hard == resource.RLIM_INFINITY else min(limit, hard)


@contextmanager
def enforced(command: str, reading: Sequence[str], verb: str = "reading") -> Iterator[None]:
    """Run the block under ``command``'s budget; past it, a BudgetError naming the bound and what
    was being done (``verb`` ``reading``: "reading a.py, b.py")."""
    if not _owned:
        yield
        return
    budget = budget_of(command)
    what = ", ".join(reading) if len(reading) <= 3 else \
        f"{reading[0]}, {reading[1]} and {len(reading) - 2:,} more"
    # the time is a budget per input: inspecting a corpus (2,613 objects) is as legitimate as one
    # object, and each is bounded on its own; the memory is one budget, held by the whole run
    cpu_seconds = budget.cpu_seconds * max(1, len(reading))
    per = f" per input ({cpu_seconds:,} s for {len(reading):,})" if len(reading) > 1 else ""
    old_data = resource.getrlimit(resource.RLIMIT_DATA)
    old_cpu = resource.getrlimit(resource.RLIMIT_CPU)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    cpu_limit = math.ceil(used) + cpu_seconds if cpu_seconds else max(1, math.floor(used))
    old_handler = signal.signal(signal.SIGXCPU, _on_xcpu)

    restored = False

    def restore() -> None:
        nonlocal restored
        if restored:
            return
        restored = True
        _outer.pop()
        resource.setrlimit(resource.RLIMIT_DATA, old_data)
        resource.setrlimit(resource.RLIMIT_CPU, old_cpu)
        signal.signal(signal.SIGXCPU, old_handler)

    _outer.append((old_data, old_cpu))
    resource.setrlimit(resource.RLIMIT_CPU, (_soft(cpu_limit, old_cpu[1]), old_cpu[1]))
    resource.setrlimit(resource.RLIMIT_DATA, (_soft(budget.memory_mb << 20, old_data[1]), old_data[1]))
    try:
        yield
    except (MemoryError, ImportError, OSError) as e:
        if not isinstance(e, MemoryError) and not out_of_memory(e):
            raise
        restore()
        raise BudgetError(f"{command}: over its memory budget of {budget.memory_mb} MB "
                          f"(docs/limits.md) {verb} {what}") from None
    except _OverCpu:
        restore()
        raise BudgetError(f"{command}: over its CPU-time budget of {budget.cpu_seconds} s{per} "
                          f"(docs/limits.md) {verb} {what}") from None
    finally:
        restore()


# What the dynamic loader says when it cannot map an extension module's segments (glibc's dl-load:
# the mmap failed, as under RLIMIT_DATA), and strerror(ENOMEM)
_NO_MEMORY_TEXTS = ("failed to map segment from shared object", "cannot allocate memory")


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is the memory bound reached in another form than MemoryError: an ``OSError``
    with ENOMEM (an mmap), or an ``ImportError`` of an extension module that could not be mapped
    (a module imported lazily, past the budget, fails so and not with MemoryError)."""
    if isinstance(e, OSError) and e.errno == errno.ENOMEM:
        return True
    return isinstance(e, ImportError) and any(t in str(e).lower() for t in _NO_MEMORY_TEXTS)


def release_in_child() -> None:
    """A ``preexec_fn`` for every program submitgen starts (compilers, disassemblers, demanglers,
    the test worker, eval.py), and the first call of the plan's forked child: the budget bounds
    submitgen's own process, so a child gets the limits from before it back.
    (zig's clang started under a 1 MB data limit dies by SIGSEGV, not with an error; a child's
    own bound is its time limit, toolchain/process.py)."""
    if _outer:
        data, cpu = _outer[0]
        resource.setrlimit(resource.RLIMIT_DATA, data)
        resource.setrlimit(resource.RLIMIT_CPU, cpu)


def memory_budget_hit() -> bool:
    """Whether a MemoryError just caught is most likely this process's memory budget (its peak
    RSS reached half the data limit) rather than a parser's "too complex" MemoryError, which comes
    with little memory in use: a reader that turns a MemoryError into a finding re-raises it then."""
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if soft == resource.RLIM_INFINITY:
        return False
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 >= soft // 2
