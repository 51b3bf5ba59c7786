"""How long the worker of ``submitgen test``/``bench`` may take on one shape (or its import).

The limit counts the worker's CPU time (its threads, and the children it waited for), not wall
time: on a loaded machine other processes take the cores, the shape gets a share of them, and its
wall time grows with the load while its CPU time does not. A worker that waits instead of
computing (a sleep, a deadlock, a GPU kernel that never ends) uses no CPU time, so it has a wall
limit too: the same number of seconds in which it used under :data:`IDLE_SHARE` of one core.
Where the CPU time cannot be read (no ``/proc``), the limit is wall time."""

from __future__ import annotations

import os
import time

IDLE_SHARE = 0.01
"""A worker that used less than this share of one core over ``limit_s`` seconds of wall time is
waiting, not computing (a loaded machine still gives a runnable process far more)."""
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of ``pid`` and its waited-for children, or None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / _TICK  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None


class Budget:
    """``limit_s`` seconds of ``pid``'s CPU time from now, or as many seconds of wall time in which it
    used under :data:`IDLE_SHARE` of a core. :meth:`over` says which ran out (None: neither)."""

    def __init__(self, pid: int, limit_s: float) -> None:
        self.pid, self.limit_s = pid, limit_s
        self.cpu0 = cpu_seconds(pid)
        self.wall0 = time.monotonic()
        self.reason: str | None = None
        self.resume()

    def resume(self) -> None:
        """Start the wall window again (after time this process spent, the worker waiting on it)."""
        self.window = (time.monotonic(), cpu_seconds(self.pid))

    def used(self) -> float:
        """CPU seconds used since the start (wall seconds where CPU time is unreadable)."""
        now = cpu_seconds(self.pid)
        if now is None or self.cpu0 is None:
            return time.monotonic() - self.wall0
        return now - self.cpu0

    def over(self) -> str | None:
        """Why the budget ran out (kept in :attr:`reason`), or None."""
        self.reason = self._over()
        return self.reason

    def _over(self) -> str | None:
        now_cpu, (start, start_cpu) = cpu_seconds(self.pid), self.window
        if now_cpu is None or self.cpu0 is None or start_cpu is None:
            over = time.monotonic() - self.wall0 >= self.limit_s
            return f"timed out after {self.limit_s:g} s" if over else None
        if now_cpu - self.cpu0 >= self.limit_s:
            return f"timed out after {self.limit_s:g} s of CPU time"
        if time.monotonic() - start >= self.limit_s:
            if now_cpu - start_cpu < IDLE_SHARE * self.limit_s:
                return (f"timed out after {self.limit_s:g} s of wall time in which it used under "
                        f"{IDLE_SHARE:.0%} of a CPU (waiting, not computing)")
            self.resume()
        return None
