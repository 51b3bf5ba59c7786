"""Processes that die with ``submitgen test``: the worker (with its compile pass), eval.py of
``--reference-kernels`` (and its import check), and all they start. Each runs in a session of its
own, ended by one ``killpg``: by the caller's ``finally`` (also on SIGTERM and SIGHUP:
:func:`signals_end_the_run`), by a watchdog beside it that kills the group when ``submitgen``'s
pipe to it closes (SIGKILL, a crash), and by ``PR_SET_PDEATHSIG`` (docs/evaluate.md, "The worker
dies with submitgen")."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from submitgen.system import die_with_parent, release_in_child

WATCHDOG_SOURCE = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):\n"
    "    signal.signal(s, signal.SIG_IGN)\n"
    "data = b''\n"
    "while True:\n"
    "    chunk = os.read(0, 64)\n"
    "    if not chunk:\n"
    "        break\n"
    "    data += chunk\n"
    "if data.strip().isdigit():\n"
    "    try:\n"
    "        os.killpg(int(data), signal.SIGKILL)\n"
    "    except OSError:\n"
    "        pass\n"
)
"""The watchdog: reads the group id, then waits for end of file and kills that group."""

@dataclass
class Group:
    """A process started in a session of its own, with the watchdog that ends it with us."""

    proc: subprocess.Popen
    watchdog: subprocess.Popen | None
    watch_fd: int | None


def start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], stdout: IO[Any],
          pass_fds: Sequence[int] = ()) -> Group:
    """Start ``argv`` in a new session, and its watchdog; in the child, before ``argv`` runs, the
    limits from before any budget are restored (``release_in_child``) and it is made to die with
    this process (``die_with_parent``)."""
    parent = os.getpid()

    def setup() -> None:
        release_in_child()
        die_with_parent(parent)

    rfd, wfd = os.pipe()
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-S", "-I", "-c", WATCHDOG_SOURCE], stdin=rfd, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd="/", close_fds=True, preexec_fn=release_in_child)
    except OSError:
        os.close(wfd)
        watchdog, wfd = None, None
    finally:
        os.close(rfd)
    try:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=stdout, stderr=subprocess.STDOUT, pass_fds=tuple(pass_fds), start_new_session=True,
            preexec_fn=setup)
    except BaseException:
        if wfd is not None:
            os.close(wfd)
        raise
    if wfd is not None:
        with contextlib.suppress(OSError):
            os.write(wfd, str(proc.pid).encode())
    return Group(proc, watchdog, wfd)


def end(group: Group) -> None:
    """Kill the group and everything in it, then let its watchdog go. The leader is reaped last,
    so its group id cannot be reused while the watchdog still holds it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group.proc.pid, signal.SIGKILL)
    if group.watch_fd is not None:
        with contextlib.suppress(OSError):
            os.close(group.watch_fd)
        group.watch_fd = None
    if group.watchdog is not None:
        try:
            group.watchdog.wait(timeout=30)
        except subprocess.TimeoutExpired:
            group.watchdog.kill()
            group.watchdog.wait()
    try:
        group.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        group.proc.kill()
        group.proc.wait()


class Ended(SystemExit):
    """``submitgen`` received SIGTERM or SIGHUP during a run (exit code 128 + the signal)."""


@contextlib.contextmanager
def signals_end_the_run() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Ended` (so the ``finally`` blocks
    that end the groups and remove the run folder run); only in the main thread, where Python
    delivers signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Ended(128 + signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
