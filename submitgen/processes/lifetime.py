"""A child process that dies with its parent: Linux's PR_SET_PDEATHSIG, asked for in the child
(after fork, or before exec), plus the check that the parent is not already gone. Used by the
plan's child (plan_run) and eval.py's process (evaluate/refkernels); the test worker has its own
copy, bound before it imports anything (evaluate_worker.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

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
