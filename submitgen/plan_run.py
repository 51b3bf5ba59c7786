"""Running a kernel project's plan at build time: the user's code runs in a child process (a fork
of the build, so torch and the parsed code objects are already there) under a time limit. A plan
that loops, exits (``SystemExit``, ``os._exit``) or crashes the interpreter fails the build with
one line; the build's own process never runs the plan."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import PlanError, SubmitgenError

DEFAULT_TIMEOUT_S = 60.0


def _child(send, fn: Callable[..., Any], args: tuple) -> None:
    try:
        result: tuple[str, Any] = ("ok", fn(*args))
    except SubmitgenError as e:
        result = ("error", e)
    except BaseException as e:  # noqa: BLE001 - whatever the plan raised becomes one line in the parent
        result = ("error", PlanError(f"the plan raised {type(e).__name__}: {e}"))
    try:
        send.send(result)
    except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled
        send.send(("error", PlanError(f"the plan's result cannot be returned: {type(e).__name__}: {e}")))
    send.close()
    os._exit(0)


def _kill(proc) -> None:
    with contextlib.suppress(OSError, AttributeError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.join()


def run_plan(
    fn: Callable[..., Any], args: tuple, *, plan_path: Path, timeout: float = DEFAULT_TIMEOUT_S
) -> Any:
    """``fn(*args)`` in a forked child that is killed after ``timeout`` seconds; its return value,
    or the SubmitgenError it raised, as if it had run here."""
    if not timeout > 0 or timeout != timeout:
        raise PlanError(f"--plan-timeout must be a positive number of seconds, got {timeout}")
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            _kill(proc)
            raise PlanError(f"{plan_path}: the plan did not finish within {timeout:g} s (--plan-timeout); "
                            "a plan looks at shapes only and returns at once")
        try:
            kind, value = recv.recv()
        except (EOFError, OSError):
            proc.join()
            raise PlanError(
                f"{plan_path}: the plan ended the process (exit status {proc.exitcode}) instead of "
                "returning (out, launches); a plan must not exit"
            ) from None
    finally:
        recv.close()
        if proc.is_alive():
            _kill(proc)
        else:
            proc.join()
    if kind == "error":
        raise value
    return value
