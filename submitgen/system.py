"""How submitgen bounds itself, the programs it starts and the files it reads: each command's CPU
and memory budget (docs/limits.md: which commands, what a child gets back, the test-only
SUBMITGEN_TEST_BUDGET_MB/_S; BENCHMARKS.md quotes BUDGETS, tests/hostile/test_budgets.py checks
that they agree), children that die with their parent, running a tool (stdin closed, a time limit,
its process group ended), and the one bounded read of an input file (a regular file only, opened
without blocking, its size checked before and after the read; callers turn :class:`Refused` into
their own domain error). The bottom layer: the readers and the toolchain both use it."""

from __future__ import annotations

import contextlib
import errno
import gc
import math
import os
import resource
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import BudgetError, ToolchainError


@dataclass(frozen=True)
class CommandBudget:
    cpu_seconds: int
    memory_mb: int


BUDGETS: dict[str, CommandBudget] = {
    # the costliest source a 1 MB .py (the leaderboard's cap, the bound on what they read as
    # Python) can hold, 500,000 one-name lines, takes 0.9 GB and 11-15 s of CPU (a loaded machine)
    "lint": CommandBudget(cpu_seconds=60, memory_mb=2048),
    "inspect": CommandBudget(cpu_seconds=60, memory_mb=2048),
    "diff": CommandBudget(cpu_seconds=60, memory_mb=2048),
    "compile": CommandBudget(cpu_seconds=600, memory_mb=1024),
    # build mxfp4-mm, empty cache: 0.9 GB of data (torch's import, thread stacks, lint's parse
    # thread's 256 MiB), 7 s of CPU in its own process; compilers and the plan run in children
    "build": CommandBudget(cpu_seconds=120, memory_mb=2048),
}

_owned = False
# The limits in force before the innermost enforced() block, which a child process gets back.
_outer: list[tuple[tuple[int, int], tuple[int, int]]] = []


def own_process() -> None:
    """Called by the CLI's ``main()``: this process is submitgen's, and its limits may be set."""
    global _owned
    _owned = True


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
    b, env = BUDGETS[command], os.environ  # SUBMITGEN_TEST_BUDGET_*: for tests only (docs/limits.md)
    s, mb = env.get("SUBMITGEN_TEST_BUDGET_S"), env.get("SUBMITGEN_TEST_BUDGET_MB")
    budget = CommandBudget(int(s) if s else b.cpu_seconds, int(mb) if mb else b.memory_mb)
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

    _outer.append((old_data, old_cpu))
    resource.setrlimit(resource.RLIMIT_CPU, (_soft(cpu_limit, old_cpu[1]), old_cpu[1]))
    resource.setrlimit(resource.RLIMIT_DATA, (_soft(budget.memory_mb << 20, old_data[1]), old_data[1]))
    try:
        try:
            yield
        finally:  # the limits from before, before anything else runs
            _outer.pop()
            resource.setrlimit(resource.RLIMIT_DATA, old_data)
            resource.setrlimit(resource.RLIMIT_CPU, old_cpu)
            signal.signal(signal.SIGXCPU, old_handler)
    except (MemoryError, ImportError, OSError) as e:
        if not isinstance(e, MemoryError) and not out_of_memory(e):
            raise
        raise BudgetError(f"{command}: over its memory budget of {budget.memory_mb} MB "
                          f"(docs/limits.md) {verb} {what}") from None
    except _OverCpu:
        raise BudgetError(f"{command}: over its CPU-time budget of {budget.cpu_seconds} s{per} "
                          f"(docs/limits.md) {verb} {what}") from None


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


def over_budget(e: BaseException) -> bool:
    """Whether ``e`` is a budget's bound reached (the memory in any form, or the CPU time): what a
    broad ``except`` (a plug-in's import) lets through to :func:`enforced`."""
    return isinstance(e, (MemoryError, _OverCpu)) or out_of_memory(e)


def release_in_child() -> None:
    """A ``preexec_fn`` for every program submitgen starts (compilers, disassemblers, demanglers,
    the test worker, eval.py), and the first call of the plan's forked child: the budget bounds
    submitgen's own process, so a child gets the limits from before it back.
    (zig's clang started under a 1 MB data limit dies by SIGSEGV, not with an error; a child's
    own bound is its time limit, system.py)."""
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


PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when its parent exits, however the parent ends; with ``parent`` (the
    pid it was forked from), exit at once if that process is already gone. Elsewhere than Linux a
    no-op: the parent's own kill of the group still applies."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off, then back as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


DEFAULT_TIMEOUT_S = 600.0
INSTALL_HINT = (
    "install the bundled clang with `pip install 'submitgen[toolchain]'` (the ziglang wheel), "
    "or install ROCm and set ROCM_PATH (default /opt/rocm), or pass --compiler PATH"
)


def run_tool(argv: Sequence[str], cwd: Path | None = None, timeout: float = DEFAULT_TIMEOUT_S,
             what: str | None = None, env: Mapping[str, str] | None = None,
             hint: str = "does a source include a FIFO or a device file?",
             stdout_to: Path | None = None) -> subprocess.CompletedProcess:
    """Run one tool to completion and capture its output. stdin is /dev/null, so that a source
    including ``/dev/stdin`` never reads the caller's input; past ``timeout`` seconds the tool and
    everything it started are killed and a ToolchainError names the command. With ``stdout_to``
    the tool's standard output goes to that new file instead (the result's stdout is empty): a
    disassembler's hundreds of MB cost a third of the system time through a file that they cost
    through a pipe."""
    out_file = open(stdout_to, "xb") if stdout_to is not None else None  # noqa: SIM115 (closed below)
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE if out_file is None else out_file,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                                env=None if env is None else dict(env), preexec_fn=release_in_child)
    except FileNotFoundError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror}; {INSTALL_HINT}") from None
    except OSError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror or e}") from None
    finally:
        if out_file is not None:
            out_file.close()  # the child holds its own descriptor
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        label = what or " ".join(argv)
        raise ToolchainError(
            f"{label} ran past its time limit of {timeout:g} s and was stopped ({hint})"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc.communicate(timeout=10)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


class Refused(Exception):
    """Why a file was not read. ``reason`` is one of ``missing``, ``unreadable`` (``detail`` is the
    system's text), ``not-regular`` (``detail`` names the kind: "a FIFO"), ``too-large`` (``size``
    over ``limit``) or ``grew`` (past ``limit`` while being read)."""

    def __init__(self, reason: str, detail: str = "", *, size: int = 0, limit: int = 0) -> None:
        super().__init__(reason, detail)
        self.reason, self.detail, self.size, self.limit = reason, detail, size, limit


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``; :class:`Refused` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise Refused("missing") from None
    except OSError as e:
        raise Refused("unreadable", str(e.strerror or e)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a plain file")
            raise Refused("not-regular", kind)
        raise Refused("too-large", size=st.st_size, limit=limit)
    with os.fdopen(fd, "rb") as f:
        try:
            # the size fstat gave, and one byte more to see a file that grew since: a read of
            # limit + 1 bytes allocates that much first (0.09 s against 0.04 over a corpus of
            # 2,613 objects, with its 256 MiB bound); a file that grew reads on to the limit
            data = f.read(st.st_size + 1)
            if len(data) > st.st_size:
                data += f.read(limit + 1 - len(data))
        except OSError as e:
            raise Refused("unreadable", str(e.strerror or e)) from None
    if len(data) > limit:
        raise Refused("grew", limit=limit)
    return data
