"""How long the worker of ``submitgen test``/``bench`` may take on one shape (or its import): its
CPU time (the load stretches wall time, not CPU time), or as many seconds of wall time in which
none of its threads could run (a sleep, a hang). Without ``/proc``, wall time."""

from __future__ import annotations

import os
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of ``pid`` and its waited-for children, or None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / _TICK  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None


def runnable(pid: int) -> bool:
    """Whether a thread of ``pid`` is running or waiting for a CPU (state R): computing, however
    loaded the machine. False when every thread sleeps or waits on I/O."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"R":
                    return True
    except (OSError, IndexError):
        return True  # unreadable (gone, or no /proc): not counted as waiting
    return False


class Budget:
    """``limit_s`` seconds of ``pid``'s CPU time from now, or as many seconds of wall time in which
    none of its threads was runnable (it slept or waited). :meth:`over` says which ran out."""

    def __init__(self, pid: int, limit_s: float) -> None:
        self.pid, self.limit_s = pid, limit_s
        self.cpu0 = cpu_seconds(pid)
        self.wall0 = self.last = time.monotonic()
        self.waited = 0.0
        self.reason: str | None = None

    def over(self) -> str | None:
        """Why the budget ran out (kept in :attr:`reason`), or None."""
        self.reason = self._over()
        return self.reason

    def _over(self) -> str | None:
        now = time.monotonic()
        if not runnable(self.pid):
            self.waited += now - self.last
        self.last = now
        used = cpu_seconds(self.pid)
        if used is None or self.cpu0 is None:
            return f"timed out after {self.limit_s:g} s" if now - self.wall0 >= self.limit_s else None
        if used - self.cpu0 >= self.limit_s:
            return f"timed out after {self.limit_s:g} s of CPU time"
        if self.waited >= self.limit_s:
            return f"timed out after {self.limit_s:g} s of wall time waiting (asleep, not computing)"
        return None
