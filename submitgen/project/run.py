"""Running a kernel project's plan at build time, in a forked child under a time limit: a plan
that loops, exits or crashes fails the build with one line. The child leads a process group of its
own with fds 0-2 on /dev/null and no other descriptor but its result pipe; the group is killed at
the end. It also dies with the build however the build ends (``kill -9`` too): the child has
``PR_SET_PDEATHSIG``, and a watchdog forked before it (a session of its own) kills the whole group
when the pipe only the build writes closes. The plan runs only once the watchdog knows the group."""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from submitgen.errors import PlanError, SubmitgenError
from submitgen.system import die_with_parent, release_in_child

DEFAULT_TIMEOUT_S = 60.0
_HEADER = struct.Struct("<Q")  # the pickled result's length, ahead of it on the pipe


def _isolate(*keep: int) -> None:
    """In the child: a session of its own; fds 0-2 on /dev/null; every other fd but ``keep`` closed."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low, os.sysconf("SC_OPEN_MAX")))


def _result(fn: Callable[..., Any], args: tuple) -> bytes:
    try:
        result: tuple[str, Any] = ("ok", fn(*args))
    except SubmitgenError as e:
        result = ("error", e)
    except BaseException as e:  # noqa: BLE001 - whatever the plan raised becomes one line in the parent
        result = ("error", PlanError(f"the plan raised {type(e).__name__}: {e}"))
    try:
        return pickle.dumps(result)
    except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled
        why = f"the plan's result cannot be returned: {type(e).__name__}: {e}"
        return pickle.dumps(("error", PlanError(why)))


def _watchdog(watch: int) -> None:
    """In the watchdog (never returns): a session of its own, the terminal's signals ignored, no
    descriptor but ``watch``; read the group id, wait for the end of the pipe, kill the group."""
    try:
        os.setsid()
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_IGN)
        os.closerange(0, watch)
        os.closerange(watch + 1, max(watch + 1, os.sysconf("SC_OPEN_MAX")))
        data = b""
        while chunk := os.read(watch, 64):
            data += chunk
        if data.strip().isdigit():
            with contextlib.suppress(OSError):
                os.killpg(int(data), signal.SIGKILL)
    finally:
        os._exit(0)


def _start_watchdog() -> tuple[int, int]:
    """(pid, write end) of a watchdog of the plan's group (:func:`_watchdog`)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the watchdog; it never returns
        os.close(wfd)
        _watchdog(rfd)
    os.close(rfd)
    return pid, wfd


def _child(fd: int, go: int, fn: Callable[..., Any], args: tuple) -> None:
    try:
        _isolate(fd, go)
        if os.read(go, 1) != b"1":  # the build died before its watchdog knew this group
            return
        os.close(go)
        data = _result(fn, args)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os._exit(0)


def _receive(fd: int, deadline: float) -> bytes | None:
    """The child's message; None when the deadline passed; b"" when the pipe ended without one."""
    buf = bytearray()
    want = _HEADER.size
    while len(buf) < want:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b""
        buf += chunk
        if want == _HEADER.size and len(buf) >= want:
            want += _HEADER.unpack_from(buf)[0]
    return bytes(buf[_HEADER.size:want])


def _end(pid: int, watchdog: int, watch: int) -> int:
    """Kill the child's whole process group and let its watchdog go; the child's exit code (-N for
    signal N). The child is reaped last, so its group id cannot be reused while the watchdog
    may still kill it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    os.close(watch)
    os.waitpid(watchdog, 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def check_timeout(timeout: float) -> float:
    """``timeout`` as the plan's limit; PlanError unless it is a finite number of seconds above 0."""
    if not (isinstance(timeout, (int, float)) and 0 < timeout < math.inf):  # nan compares false
        raise PlanError(f"--plan-timeout must be a positive number of seconds, got {timeout}")
    return float(timeout)


def run_plan(fn: Callable[..., Any], args: tuple, *, plan_path: Path,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    """``fn(*args)`` in a forked child that is killed after ``timeout`` seconds (with every
    process in its group); its return value, or the SubmitgenError it raised, as if it had run
    here."""
    deadline = time.monotonic() + check_timeout(timeout)
    watchdog, watch = _start_watchdog()
    recv, send = os.pipe()  # all close on exec: a program the plan runs does not get them
    go_r, go_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; it never returns
        die_with_parent(parent)  # its own session: a kill of the build's group does not reach it
        release_in_child()  # held by --plan-timeout, not by the build's budget
        _child(send, go_r, fn, args)
    os.close(send)
    os.close(go_r)
    try:
        try:
            os.write(watch, str(pid).encode())
            os.write(go_w, b"1")
        finally:
            os.close(go_w)
        message = _receive(recv, deadline)
    finally:
        os.close(recv)
        code = _end(pid, watchdog, watch)
    if message is None:
        raise PlanError(f"{plan_path}: the plan did not finish within {timeout:g} s (--plan-timeout); "
                        "a plan looks at shapes only and returns at once")
    if not message:
        raise PlanError(f"{plan_path}: the plan ended the process (exit status {code}) instead of returning "
                        "(out, launches); a plan must not exit")
    kind, value = pickle.loads(message)  # written by our own child, from the build's own code
    if kind == "error":
        raise value
    return value
